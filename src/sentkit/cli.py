"""`sentkit` command line: thin argument parsing over the library."""

from __future__ import annotations

import argparse
import dataclasses
import sys

DEFAULT_MODEL = "minilm-en"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
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
        "--tasks", default="default", help="comma list of task and suite names (see `sentkit tasks`)"
    )
    ev.add_argument(
        "--langs", nargs="+", default=None, help="restrict multilingual tasks to these languages / pairs"
    )
    ev.add_argument("--out", default="results", help="folder for the results files")
    ev.add_argument("--batch-size", type=int, default=64)
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument(
        "--data-root", default=None, help="benchmark data folder (default: $SENTKIT_DATA or ../shared/data)"
    )
    ev.add_argument("--pooling", default=None, choices=["cls", "mean"], help="override the model's pooling")

    enc = sub.add_parser("encode", help="encode a text file (one sentence a line) to a .npy matrix")
    enc.add_argument("--model", default=DEFAULT_MODEL)
    enc.add_argument("--input", required=True, help="UTF-8 text file, one sentence per line")
    enc.add_argument("--output", required=True, help=".npy file to write (float32, one row per line)")
    enc.add_argument("--batch-size", type=int, default=64)

    rep = sub.add_parser("report", help="compare results files: markdown table + PNG plots")
    rep.add_argument("results", nargs="+", help="results JSON files written by `sentkit eval`")
    rep.add_argument("--out", default="report", help="folder for report.md and the plots")

    sub.add_parser("train", help="train an encoder (`sentkit train --help` lists every flag)", add_help=False)
    sub.add_parser("tasks", help="list tasks and suites")
    sub.add_parser("models", help="list short model names")
    return p


def _cmd_eval(args: argparse.Namespace) -> int:
    from sentkit.encoders import load_encoder
    from sentkit.evaluate import evaluate, results_table

    kwargs = {"pooling": args.pooling} if args.pooling else {}
    encoder = load_encoder(args.model, **kwargs)
    results = evaluate(
        encoder,
        args.tasks,
        langs=args.langs,
        out=args.out,
        seed=args.seed,
        batch_size=args.batch_size,
        data_root=args.data_root,
        extra_config={"model_arg": args.model},
    )
    print(results_table(results))
    print(f"results written to {results['path']}")
    return 0


def _cmd_encode(args: argparse.Namespace) -> int:
    import numpy as np

    from sentkit.atomic import atomic_write_bytes
    from sentkit.datasets.lines import read_lines
    from sentkit.encoders import load_encoder

    sentences = read_lines(args.input)
    vectors = load_encoder(args.model).encode(sentences, batch_size=args.batch_size, show_progress=True)
    import io

    buf = io.BytesIO()
    np.save(buf, vectors.astype(np.float32))
    atomic_write_bytes(args.output, buf.getvalue())
    print(f"{args.output}: {vectors.shape[0]} x {vectors.shape[1]} float32")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from sentkit.report import write_report

    written = write_report(args.results, args.out)
    for kind, path in written.items():
        print(f"{kind}: {path}")
    return 0


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
    from sentkit.trainer import TrainConfig

    p = argparse.ArgumentParser(
        prog="sentkit train", description="Train a sentence encoder (config file and/or flags; flags win)."
    )
    p.add_argument("--config", default=None, help="YAML or JSON file with TrainConfig fields")
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        helptext = f.metadata.get("help", "")
        kind = (
            f.type
            if isinstance(f.type, type)
            else {"int": int, "float": float, "bool": bool, "str": str}.get(
                str(f.type).split("|")[0].strip(), str
            )
        )
        if kind is bool:
            p.add_argument(
                flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=helptext
            )
        else:
            p.add_argument(flag, dest=f.name, type=kind, default=None, help=helptext)
    return p


def _cmd_train(argv: list[str]) -> int:
    from sentkit.trainer import TrainConfig, train

    args = train_parser().parse_args(argv)
    config = TrainConfig.from_yaml(args.config) if args.config else TrainConfig()
    overrides = {k: v for k, v in vars(args).items() if k != "config" and v is not None}
    config = dataclasses.replace(config, **overrides)
    out = train(config)
    print(f"run written to {out}")
    return 0


def _run(argv: list[str]) -> int:
    if argv and argv[0] == "train":
        return _cmd_train(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "eval":
        return _cmd_eval(args)
    if args.command == "encode":
        return _cmd_encode(args)
    if args.command == "report":
        return _cmd_report(args)
    if args.command == "tasks":
        return _cmd_tasks()
    if args.command == "models":
        return _cmd_models()
    raise AssertionError(args.command)


def main(argv: list[str] | None = None) -> int:
    """Entry point; bad input (malformed or missing files, unknown names) ends in one `sentkit: error:` line."""
    from sentkit.errors import DataFormatError, LanguageNotCovered, MissingDataError, UnknownName

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    except (DataFormatError, MissingDataError, LanguageNotCovered, UnknownName) as err:
        print(f"sentkit: error: {err}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
