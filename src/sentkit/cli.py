"""`sentkit` command line: thin argument parsing over the library."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from pathlib import Path

DEFAULT_MODEL = "minilm-en"


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (no usage block), so every bad input reads the same way."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (batch sizes, counts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def cpu_count_int(text: str) -> int:
    """argparse type: processes on this machine, 1 to the CPUs this process may run on (more buy no speed and,
    far past them, exhaust the system's process limit; docs/encoding.md, "Engines")."""
    from sentkit.corpus.cpu_limits import usable_cpus

    value = positive_int(text)
    cpus = usable_cpus()
    if value > cpus:
        raise argparse.ArgumentTypeError(
            f"this machine has {cpus} CPUs for sentkit; give 1 to {cpus}, got {text!r}"
        )
    return value


def seed_int(text: str) -> int:
    """argparse type: a seed NumPy accepts, 0 to 2**32-1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"expected a seed from 0 to 2**32-1, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="sentkit", description="Train, specialize and evaluate multilingual sentence embeddings."
    )
    sub = p.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("eval", help="evaluate an encoder on tasks or suites; write results JSON + markdown")
    ev.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help="short name (minilm-en, muse-m, e5-small-m, avg:NAME), local directory or hub name",
    )
    ev.add_argument(
        "--tasks",
        default="default",
        help="comma list of task and suite names (see `sentkit tasks`) and file-backed tasks "
        "such as sts:pairs.tsv or retrieval:queries.tsv+corpus.tsv+qrels.tsv",
    )
    ev.add_argument(
        "--langs", nargs="+", default=None, help="restrict multilingual tasks to these languages / pairs"
    )
    ev.add_argument("--out", default="results", help="folder for the results files")
    ev.add_argument("--batch-size", type=positive_int, default=64)
    ev.add_argument("--seed", type=seed_int, default=0)
    ev.add_argument("--resamples", type=positive_int, default=1000, help="bootstrap resamples per 95%% CI")
    ev.add_argument(
        "--data-root", default=None, help="benchmark data folder (default: $SENTKIT_DATA or ../shared/data)"
    )
    ev.add_argument("--pooling", default=None, choices=["cls", "mean"], help="override the model's pooling")
    ev.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where a torch model runs: auto (a GPU when torch sees one), cpu or cuda; ONNX, OpenVINO "
        "and static models run on the CPU",
    )
    ev.add_argument(
        "--precision",
        choices=("fp32", "fp16", "bf16"),
        default="fp32",
        help="a torch model's weights: fp32 (as loaded), fp16 (GPU only) or bf16",
    )
    ev.add_argument(
        "--int8",
        action="store_true",
        help="run the model's int8 ONNX export with onnxruntime (exported into the cache on first use; "
        "same as --model NAME@int8)",
    )
    ev.add_argument(
        "--kmeans",
        default="sklearn",
        choices=["sklearn", "faiss", "sklearn+faiss"],
        help="clustering tasks' k-means: sklearn (the protocol), faiss (faster, not the protocol; "
        "keys <set>_faiss) or both side by side",
    )

    enc = sub.add_parser(
        "encode", help="encode a text file (one sentence a line) to a .npy matrix, or a corpus to shards"
    )
    enc.add_argument("--model", default=DEFAULT_MODEL)
    enc.add_argument(
        "--input",
        required=True,
        help="UTF-8 text file (one sentence a line), JSONL or parquet, compressed or not; with --shard-size "
        "also a folder of them",
    )
    enc.add_argument(
        "--output",
        required=True,
        help=".npy file to write (float32, one row per line), or with --shard-size a folder of shards",
    )
    enc.add_argument("--batch-size", type=positive_int, default=64)
    enc.add_argument("--int8", action="store_true", help="int8 ONNX export of the model (as NAME@int8)")
    from sentkit.corpus.cli_encode import add_shard_arguments

    add_shard_arguments(enc, positive_int)

    exp = sub.add_parser(
        "export", help="export a transformer encoder to one ONNX graph (ids + mask -> sentence vector)"
    )
    exp.add_argument(
        "--model", default=DEFAULT_MODEL, help="short name (minilm-en, e5-small-m) or local directory"
    )
    exp.add_argument("--format", default="onnx", choices=["onnx"], help="export format")
    exp.add_argument("--int8", action="store_true", help="dynamic int8 quantization (onnxruntime)")
    exp.add_argument("--out", required=True, help="folder to write: model.onnx, tokenizer files, README.md")
    exp.add_argument(
        "--overwrite", action="store_true", help="replace an --out folder that an earlier export wrote"
    )

    rep = sub.add_parser("report", help="compare results files: report.html + markdown table + PNG plots")
    rep.add_argument(
        "results",
        nargs="+",
        help="results JSON files written by `sentkit eval`; training run directories (curves); "
        "MTEB result files or folders",
    )
    rep.add_argument("--out", default="report", help="folder for report.html, report.md and the plots")

    cmp = sub.add_parser(
        "compare", help="B - A per task: paired bootstrap CI and p-value over the same items"
    )
    cmp.add_argument("a", nargs="?", help="results JSON of run A (the baseline)")
    cmp.add_argument("b", nargs="?", help="results JSON of run B")
    cmp.add_argument(
        "--a",
        dest="a_runs",
        nargs="+",
        metavar="RESULTS",
        help="several runs of A (results JSON files or folders of them), one per training seed",
    )
    cmp.add_argument(
        "--b",
        dest="b_runs",
        nargs="+",
        metavar="RESULTS",
        help="the runs of B, paired with A's by training seed; B - A with a seed-aware CI and p",
    )
    cmp.add_argument("--tasks", default=None, help="comma list of tasks to compare (default: all shared)")
    cmp.add_argument("--resamples", type=positive_int, default=1000, help="bootstrap resamples")
    cmp.add_argument("--seed", type=seed_int, default=0, help="seed of the resampling")
    cmp.add_argument("--out", default=None, help="also write the comparison as JSON to this file")

    sub.add_parser("train", help="train an encoder (`sentkit train --help` lists every flag)", add_help=False)
    sub.add_parser("tasks", help="list tasks and suites")
    sub.add_parser("models", help="list short model names")
    _add_build_parser(sub)
    from sentkit.mining.cli_mine import add_mine_parser

    add_mine_parser(sub, positive_int)
    return p


def _add_build_parser(sub) -> None:
    """`sentkit build ease`: EASE rows from a Wikipedia dump (sentkit.training_data.ease.entity_pairs);
    `sentkit build contradictions`: JCSE stage-one rows (sentkit.training_data.jcse.build);
    `sentkit build translated-sts`: JCSE's translated STS benchmark (sentkit.datasets.sts_translation)."""
    build = sub.add_parser("build", help="build training data (`sentkit build ease --help`)")
    kinds = build.add_subparsers(dest="kind", required=True, parser_class=_Parser)
    ease = kinds.add_parser("ease", help="(sentence, entity, hard negative) rows from a Wikipedia dump")
    ease.add_argument("--dump", required=True, help="MediaWiki pages-articles dump (.xml, .xml.bz2, .xml.gz)")
    ease.add_argument("--out", required=True, help="folder: rows.jsonl, entities.tsv, ease.json, shards/")
    ease.add_argument("--min-links", type=positive_int, default=10, help="min links per entity (EASE: 10)")
    ease.add_argument("--wikidata", default="", help="Wikidata JSON dump: Q-id entity keys, P31 entity types")
    ease.add_argument("--langlinks", default="", help="langlinks SQL dump: keys = titles in --link-lang")
    ease.add_argument("--link-lang", default="en", help="language of the langlinks titles used as keys")
    ease.add_argument("--types", default="auto", choices=["auto", "wikidata", "ner", "category", "none"])
    ease.add_argument("--splitter", default="auto", choices=["auto", "spacy", "rule"])
    ease.add_argument("--parallel", default="", choices=["", "xnli"], help="xnli: add XNLI dev translations")
    ease.add_argument("--processes", type=cpu_count_int, default=1, help="worker processes, at most the CPUs")
    ease.add_argument("--pages-per-shard", type=positive_int, default=200)
    ease.add_argument("--max-rows", type=int, default=0, help="keep a seeded sample of N rows (0 = all)")
    ease.add_argument("--seed", type=seed_int, default=0)
    ease.add_argument("--data-root", default="", help="benchmark data folder (for --parallel xnli)")
    merge = kinds.add_parser("ease-merge", help="join built EASE folders into one entity table")
    merge.add_argument("folders", nargs="+", help="folders written by `sentkit build ease`")
    merge.add_argument("--out", required=True, help="merged folder")
    jcse = kinds.add_parser("contradictions", help="JCSE stage-one rows: anchor, anchor, contradiction")
    jcse.add_argument("--corpus", required=True, help="corpus name (ja-clinic, ja-qabot), .txt or folder")
    jcse.add_argument("--out", required=True, help=".jsonl or .csv rows (and OUT.manifest.json)")
    jcse.add_argument("--lang", default="ja", help="spaCy pipeline: ja (GiNZA), en, or an installed name")
    jcse.add_argument("--generator", default="chunk-swap", help="chunk-swap (offline) or a T5 checkpoint")
    jcse.add_argument("--k", type=positive_int, default=4, help="contradictions per sentence (JCSE: 4)")
    jcse.add_argument("--max-lines", type=int, default=0, help="seeded sample of N corpus lines (0 = all)")
    jcse.add_argument("--max-chunks", type=int, default=0, help="mask only the first N chunks (0 = all)")
    jcse.add_argument("--parsed", default="", help="parsed-corpus cache .jsonl (read, or written)")
    jcse.add_argument("--num-beams", type=positive_int, default=8, help="beam width of the T5 generator")
    jcse.add_argument("--seed", type=seed_int, default=0)
    jcse.add_argument("--data-root", default="", help="benchmark data folder (for corpus names)")
    mt = kinds.add_parser("translated-sts", help="translate, back-translate, BLEU-1 filter (JCSE 4.1)")
    mt.add_argument("--input", required=True, help="SentEval STS.input.X.txt (or inline-score file)")
    mt.add_argument("--gold", default=None, help="STS.gs.X.txt (omit for an inline third column)")
    mt.add_argument("--translator", required=True, help="module:attribute with translate(texts, src, tgt)")
    mt.add_argument("--out", required=True, help="folder: STS.input/STS.gs of kept pairs, X.bleu.json")
    mt.add_argument("--src", default="en")
    mt.add_argument("--tgt", default="ja")
    mt.add_argument("--min-bleu", type=float, default=50.0, help="BLEU-1 (0-100) both sentences must reach")
    mt.add_argument("--tokenize", default=None, help="sacrebleu tokenizer (default: by --src language)")
    mt.add_argument("--batch-size", type=positive_int, default=64)


def _cmd_build(args: argparse.Namespace) -> int:
    _check_build_outputs(args)
    if args.kind == "contradictions":
        from sentkit.training_data.jcse.build import ContradictionBuildConfig, build_contradictions

        options = {k: v for k, v in vars(args).items() if k not in ("command", "kind")}
        manifest = build_contradictions(ContradictionBuildConfig(**options))
        sentences = manifest["anchors_with_contradictions"]
        print(f"{manifest['rows']} rows from {sentences} sentences -> {args.out}")
        return 0
    if args.kind == "translated-sts":
        from sentkit.datasets.sts_translation import translate_sts_file

        options = {k: v for k, v in vars(args).items() if k not in ("command", "kind", "input", "gold")}
        summary = translate_sts_file(args.input, args.gold, **options)
        print(f"{summary['kept']} of {summary['pairs']} pairs kept (BLEU-1 >= {args.min_bleu}) -> {args.out}")
        return 0
    from sentkit.training_data.ease.entity_pairs import (
        EaseBuildConfig,
        build_entity_pairs,
        merge_entity_pairs,
    )

    if args.kind == "ease-merge":
        manifest = merge_entity_pairs(args.folders, args.out)
    else:
        options = {k: v for k, v in vars(args).items() if k not in ("command", "kind")}
        manifest = build_entity_pairs(EaseBuildConfig(**options))
    print(f"{manifest['rows']} rows, {manifest['entities']} entities -> {args.out}")
    return 0


def _check_build_outputs(args: argparse.Namespace) -> None:
    """Every path a `sentkit build` writes, checked before it reads a dump, corpus or model."""
    from sentkit.atomic import check_writable_dir, check_writable_file

    if args.kind == "contradictions":
        check_writable_file(args.out)
        check_writable_file(f"{args.out}.manifest.json")
        if args.parsed and not Path(args.parsed).is_file():  # written when absent, read when a file
            check_writable_file(args.parsed)
    else:
        check_writable_dir(args.out)


def _load_model(name: str, **kwargs):
    """`load_encoder`, with a failed local or hub load turned into one line naming the model."""
    from sentkit import load_encoder
    from sentkit.errors import SentkitError

    try:
        return load_encoder(name, **kwargs)
    except SentkitError:
        raise
    except (OSError, ValueError) as err:  # what transformers / huggingface_hub raise for a missing model
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
        if Path(name.removeprefix("avg:")).expanduser().exists():
            msg = f"model {name!r}: cannot load the local path ({reason})"
        elif _hub_offline():
            msg = (
                f"model {name!r} not found: not a packaged short name, not a local directory, "
                "and the hub is offline (HF_HUB_OFFLINE=1)"
            )
        else:
            msg = f"model {name!r} not found: not a packaged short name, not a local directory ({reason})"
        raise SentkitError(msg) from err


def _hub_offline() -> bool:
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except ImportError:
        return os.environ.get("HF_HUB_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}


def _cmd_eval(args: argparse.Namespace) -> int:
    from sentkit.atomic import check_writable_dir
    from sentkit.errors import InvalidArgument

    # every check that needs no model runs before the model loads (seconds to minutes)
    check_writable_dir(args.out)
    if args.data_root is not None and not Path(args.data_root).is_dir():
        raise InvalidArgument(f"--data-root {args.data_root}: no such folder")
    from sentkit.evaluate import evaluate, results_table
    from sentkit.tasks import resolve_tasks
    from sentkit.tasks.user_tasks import read_user_tasks

    names = resolve_tasks(args.tasks)
    if not names:
        raise InvalidArgument(f"--tasks {args.tasks!r} names no task; `sentkit tasks` lists them")
    if args.int8 and args.pooling:
        raise InvalidArgument(
            "--pooling cannot be combined with --int8 (the export keeps the model's pooling)"
        )
    # the user's own files are read and checked whole now (file:line errors), and read only this once
    prepared = read_user_tasks(names, langs=args.langs, batch_size=args.batch_size)
    from sentkit.corpus.engine_local import FP16_NEEDS_GPU, cast_encoder, place_encoder

    if args.device == "cuda" or args.precision == "fp16":  # before the model loads
        from sentkit.devices import torch_device

        if torch_device(args.device) != "cuda" and args.precision == "fp16":
            raise InvalidArgument(FP16_NEEDS_GPU)
    if args.int8 and args.precision != "fp32":
        raise InvalidArgument(f"--precision {args.precision} cannot be combined with --int8")

    kwargs = {"pooling": args.pooling} if args.pooling else {}
    encoder, device = place_encoder(_load_model(_int8_name(args.model, args.int8), **kwargs), args.device)
    encoder = cast_encoder(encoder, args.precision, device)
    results = evaluate(
        encoder,
        names,
        langs=args.langs,
        out=args.out,
        seed=args.seed,
        batch_size=args.batch_size,
        data_root=args.data_root,
        extra_config={
            "model_arg": args.model,
            "model_absolute": _local_model_path(args.model),
            "int8": args.int8,
            "device": device,
            "precision": args.precision,
            **_train_seed(args.model),
        },
        task_options={"kmeans": args.kmeans} if args.kmeans != "sklearn" else None,
        prepared=prepared,
        resamples=args.resamples,
    )
    print(results_table(results))
    print(f"results written to {results['path']}")
    if results["errors"]:
        failed = ", ".join(results["errors"])
        total = len(results["config"]["tasks"])
        print(
            f"sentkit: {len(results['errors'])} of {total} tasks failed ({failed}); "
            f"errors recorded in {results['path']}",
            file=sys.stderr,
        )
        return 1
    return 0


def _train_seed(model: str) -> dict:
    """{"train_seed": seed} when `model` is a sentkit training run's folder (or its best/), so that the
    results file pairs by seed in `compare` wherever it is copied; {} otherwise."""
    from sentkit.compare import run_seed

    path = _local_model_path(model)
    seed = run_seed(path) if path else None
    return {} if seed is None else {"train_seed": seed}


def _local_model_path(model: str) -> str | None:
    """The absolute path of a local model folder named by `--model` (avg: prefix and @ suffix allowed)."""
    name = model.removeprefix("avg:")
    for candidate in (name, name.rpartition("@")[0]):
        if candidate and Path(candidate).expanduser().exists():
            return str(Path(candidate).expanduser().resolve())
    return None


def _cmd_encode(args: argparse.Namespace) -> int:
    import io

    import numpy as np

    from sentkit.atomic import atomic_write_bytes, check_writable_file
    from sentkit.corpus.cli_encode import plain_input_texts, run_sharded_encode, wants_shards
    from sentkit.encoders.protocol import checked_encode
    from sentkit.errors import InvalidArgument

    if wants_shards(args):
        return run_sharded_encode(args, _int8_name(args.model, args.int8), _load_model)
    check_writable_file(args.output)  # before encoding, not after
    if Path(args.output).exists() and Path(args.input).exists() and os.path.samefile(args.input, args.output):
        raise InvalidArgument(
            f"--output {args.output} is the --input file {args.input}; write the vectors to another file"
        )
    sentences = plain_input_texts(args)
    encoder = _load_model(_int8_name(args.model, args.int8))
    vectors = checked_encode(encoder, sentences, batch_size=args.batch_size, show_progress=True)
    buf = io.BytesIO()
    np.save(buf, vectors.astype(np.float32))
    atomic_write_bytes(args.output, buf.getvalue())
    print(f"{args.output}: {vectors.shape[0]} x {vectors.shape[1]} float32")
    return 0


def _int8_name(model: str, int8: bool) -> str:
    """`--int8` as the model-name suffix load_encoder understands."""
    from sentkit.errors import InvalidArgument

    if not int8:
        return model
    if "@" in model:
        raise InvalidArgument(f"--int8 with --model {model!r}: give either --int8 or a @ suffix, not both")
    return f"{model}@int8"


def _cmd_export(args: argparse.Namespace) -> int:
    from sentkit.encoders.onnx.export import check_export_target, export_onnx
    from sentkit.encoders.transformer import TransformerEncoder
    from sentkit.errors import InvalidArgument

    check_export_target(args.out, args.overwrite)  # before the model loads
    if "@" in args.model:
        raise InvalidArgument(f"--model {args.model!r}: export a plain model; --int8 asks for quantization")
    encoder = _load_model(args.model)
    if not isinstance(encoder, TransformerEncoder):
        raise InvalidArgument(
            f"--model {args.model!r} is a {type(encoder).__name__}; only transformer encoders export to ONNX"
        )
    out = export_onnx(encoder, args.out, int8=args.int8, overwrite=args.overwrite, source=args.model)
    print(f"{out}: {'int8' if args.int8 else 'fp32'} ONNX of {args.model} (see {out / 'README.md'})")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from sentkit.atomic import check_writable_dir
    from sentkit.report import write_report

    check_writable_dir(args.out)  # before any results file is read
    written = write_report(args.results, args.out)
    for kind, path in written.items():
        print(f"{kind}: {path}")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from sentkit.atomic import check_writable_file
    from sentkit.compare import compare_runs, comparison_text, write_comparison
    from sentkit.errors import InvalidArgument

    if args.out:
        check_writable_file(args.out)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    if args.a_runs or args.b_runs:
        result = _compare_seeds(args, tasks)
    else:
        if not (args.a and args.b):
            raise InvalidArgument("compare needs two results files (A.json B.json) or --a ... --b ...")
        result = compare_runs(args.a, args.b, tasks, resamples=args.resamples, seed=args.seed)
        print(comparison_text(result), end="")
    if args.out:
        print(f"comparison written to {write_comparison(result, args.out)}")
    return 0


def _compare_seeds(args: argparse.Namespace, tasks: list[str] | None) -> dict:
    """`--a ... --b ...`: runs paired by training seed (sentkit.compare.compare_seeds), printed."""
    from sentkit.compare import compare_seeds, seeds_comparison_text
    from sentkit.errors import InvalidArgument

    if args.a or args.b:
        raise InvalidArgument("give the runs either as A.json B.json or with --a ... --b ..., not both")
    if not (args.a_runs and args.b_runs):
        raise InvalidArgument(f"{'--b' if args.a_runs else '--a'}: expected the results files of that side")
    result = compare_seeds(args.a_runs, args.b_runs, tasks, resamples=args.resamples, seed=args.seed)
    print(seeds_comparison_text(result), end="")
    return result


def _cmd_tasks() -> int:
    from sentkit.tasks import SUITES, TASKS

    print("tasks: " + ", ".join(TASKS.names()))
    for name, members in SUITES.items():
        print(f"suite {name}: {', '.join(members)}")
    return 0


def _cmd_models() -> int:
    from sentkit.encoders import ENCODERS

    print("short names: " + ", ".join(ENCODERS.names()) + ", avg:<any of them>")
    print("or a local directory (Hugging Face / sentence-transformers layout) or a hub name")
    return 0


def train_parser() -> argparse.ArgumentParser:
    """Flags generated from `TrainConfig`'s fields, so the CLI and the config file never drift apart."""
    from sentkit.training.config import TrainConfig, expected_text, field_kind

    p = _Parser(
        prog="sentkit train", description="Train a sentence encoder (config file and/or flags; flags win)."
    )
    p.add_argument(
        "--config",
        default=None,
        help="YAML or JSON file with TrainConfig fields (or `stages:`, a list of them)",
    )
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        helptext = f"{f.metadata.get('help', '')} [{expected_text(f)}]"
        kind, _ = field_kind(f)
        if kind is bool:
            p.add_argument(
                flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=helptext
            )
        else:
            p.add_argument(flag, dest=f.name, type=kind, default=None, help=helptext)
    return p


def _cmd_train(argv: list[str]) -> int:
    from sentkit.training.config import TrainConfig, load_config

    args = train_parser().parse_args(argv)
    flags = {k: v for k, v in vars(args).items() if k != "config" and v is not None}
    # every value is checked here, before torch is imported, any model loads or anything is written
    config = load_config(args.config, flags) if args.config else TrainConfig().with_flags(flags)
    from sentkit.atomic import check_writable_dir

    check_writable_dir(config.output_dir)
    from sentkit.training.results import test_failures
    from sentkit.training.run import train

    out = train(config, config_file=args.config)
    print(f"run: {out}")
    failed = test_failures(out)
    if failed:
        print(
            f"sentkit: {len(failed)} test task(s) failed ({', '.join(failed)}); "
            f"errors recorded in {out / 'results.json'}",
            file=sys.stderr,
        )
        return 1
    return 0


def _run(argv: list[str]) -> int:
    if argv and argv[0] == "train":
        return _cmd_train(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "eval":
        return _cmd_eval(args)
    if args.command == "encode":
        return _cmd_encode(args)
    if args.command == "export":
        return _cmd_export(args)
    if args.command == "report":
        return _cmd_report(args)
    if args.command == "compare":
        return _cmd_compare(args)
    if args.command == "tasks":
        return _cmd_tasks()
    if args.command == "models":
        return _cmd_models()
    if args.command == "build":
        return _cmd_build(args)
    if args.command == "mine":
        from sentkit.errors import InvalidArgument
        from sentkit.mining.cli_mine import run_mine

        if args.int8 and not args.model:
            raise InvalidArgument("--int8 runs the int8 export of --model; give --model too")
        return run_mine(args, _int8_name(args.model, args.int8) if args.model else None, _load_model)
    raise AssertionError(args.command)


def main(argv: list[str] | None = None) -> int:
    """Entry point and the one error boundary: every failure ends in one `sentkit:` line on stderr.

    Bad input (SentkitError: malformed or missing files, unknown names, bad option values, unusable output
    paths; or an OSError) exits 2; Ctrl-C exits 130; anything else is a bug: exit 1, and SENTKIT_DEBUG=1
    shows its traceback.
    """
    from sentkit.errors import SentkitError

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with _data_warnings_as_lines():
            return _run(argv)
    except KeyboardInterrupt as err:
        print(_interrupted_line(err), file=sys.stderr)
        return getattr(err, "exit_code", 130)  # 143 for a SIGTERM turned into an interrupt
    except (SentkitError, OSError) as err:
        if os.environ.get("SENTKIT_DEBUG"):
            raise
        print(f"sentkit: error: {_one_line(err)}", file=sys.stderr)
        return 2
    except Exception as err:
        if os.environ.get("SENTKIT_DEBUG"):
            raise
        print(
            f"sentkit: error: {type(err).__name__}: {_one_line(err)} (set SENTKIT_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1


@contextlib.contextmanager
def _data_warnings_as_lines():
    """A DataWarning (valid input that may not measure what the user expects) as one `sentkit: warning:`
    line on stderr; other warnings print as Python prints them."""
    import warnings

    from sentkit.errors import DataWarning

    python_show = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, DataWarning):
            from tqdm.auto import tqdm

            # on a line of its own, not appended to a progress bar drawn on stderr
            tqdm.write(f"sentkit: warning: {_one_line(message)}", file=sys.stderr)
        else:
            python_show(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _one_line(err: BaseException) -> str:
    from sentkit.errors import SentkitError

    if isinstance(err, OSError) and not isinstance(err, SentkitError) and err.strerror and err.filename:
        return f"{err.filename}: {err.strerror}"
    return " ".join(str(err).split()) or type(err).__name__


def _interrupted_line(err: KeyboardInterrupt) -> str:
    # evaluate() raises EvaluationInterrupted (a KeyboardInterrupt) saying where the finished tasks are
    path, finished = getattr(err, "path", None), getattr(err, "finished", 0)
    if path is not None:
        return f"sentkit: interrupted; {finished} finished tasks kept in {path} (marked incomplete)"
    if hasattr(err, "finished"):
        return "sentkit: interrupted before any task finished; nothing written"
    return f"sentkit: {err}" if hasattr(err, "exit_code") else "sentkit: interrupted"


if __name__ == "__main__":
    raise SystemExit(main())
