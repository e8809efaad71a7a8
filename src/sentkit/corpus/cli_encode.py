"""`sentkit encode --shard-size N`: the flags of sharded encoding and the command that runs it.

Without --shard-size, `sentkit encode` writes one .npy matrix of one input file, read as the sharded mode
reads it (text, JSONL, parquet, compressed or not); with it, --output is a folder of shards plus
manifest.json, written by encode_run.py. Options that only make sense for shards are refused without
--shard-size, so no flag is ever silently ignored.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from sentkit.corpus.encode_run import ENGINES, EncodeRequest, encode_corpus
from sentkit.corpus.engine_local import PRECISIONS
from sentkit.corpus.readers import FORMATS, input_files, iter_rows
from sentkit.corpus.shards import DEFAULT_SHARD_SIZE, DTYPES, SHARD_FORMATS, ShardSettings
from sentkit.errors import InvalidArgument

# flag -> default: how the input is read, in both modes (None on the namespace = not given)
INPUT_OPTIONS = {"input_format": "auto", "text_field": "text"}
# flag -> default: the options that only apply to sharded output
SHARD_OPTIONS = {
    "dtype": "float32",
    "shard_format": "npy",
    "engine": "auto",
    "workers": None,
    "threads": None,
    "device": "auto",
    "precision": "fp32",
    "address": None,
}


def add_shard_arguments(parser: argparse.ArgumentParser, positive_int) -> None:
    """The sharded-output flags of `sentkit encode` (each defaults to None: "not given")."""
    group = parser.add_argument_group(
        "sharded output (--shard-size N: --output is a folder of shards + manifest.json; resumable)"
    )
    group.add_argument(
        "--shard-size",
        type=positive_int,
        default=None,
        help=f"rows per shard file; turns --output into a shard folder (e.g. {DEFAULT_SHARD_SIZE})",
    )
    group.add_argument("--dtype", choices=DTYPES, default=None, help="vector dtype in the shards (float32)")
    group.add_argument(
        "--format",
        dest="shard_format",
        choices=SHARD_FORMATS,
        default=None,
        help="shard files: npy (a matrix) or parquet (columns source, row, vector) (npy)",
    )
    parser.add_argument(
        "--input-format",
        choices=("auto", *FORMATS),
        default=None,
        help="auto (by file name: .jsonl, .parquet, else text; .gz/.bz2/.xz read through), text, jsonl, parquet",
    )
    parser.add_argument(
        "--text-field", default=None, help="JSONL key / parquet column holding the text (text)"
    )
    group.add_argument(
        "--engine",
        choices=ENGINES,
        default=None,
        help="local (this process), ray (a pool of Ray actors) or auto: local, ray when --address or "
        "--workers is given (auto)",
    )
    group.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="Ray encoder actors, runs on Ray (default: one per GPU, else one per CPU)",
    )
    group.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="torch threads per worker (local: all cores; ray: the worker's share of the CPUs)",
    )
    group.add_argument(
        "--device", choices=("auto", "cpu", "cuda"), default=None, help="auto: a GPU when present"
    )
    group.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=None,
        help="a torch model's weights: fp32 (as loaded), fp16 (GPU only) or bf16; the vectors stay float32 "
        "and the folder's model fingerprint records it (fp32)",
    )
    group.add_argument(
        "--address",
        default=None,
        help="join the Ray cluster at ADDR (runs on Ray; the output folder must be on a file system every "
        "node sees)",
    )


def wants_shards(args: argparse.Namespace) -> bool:
    """True when the run writes a shard folder; sharded-only flags without --shard-size are refused."""
    if args.shard_size is not None:
        if str(args.output).lower().endswith(".npy"):
            raise InvalidArgument(
                f"--shard-size writes a folder of shards; --output {args.output} names a .npy file"
            )
        return True
    given = [name for name in SHARD_OPTIONS if getattr(args, name, None) is not None]
    if given:
        flag = "--" + ("format" if given[0] == "shard_format" else given[0].replace("_", "-"))
        raise InvalidArgument(
            f"{flag} applies to sharded output; add --shard-size N and give --output a folder"
        )
    return False


def run_sharded_encode(args: argparse.Namespace, model: str, load_model: Callable) -> int:
    """`sentkit encode --shard-size`: `model` is the name to load (with any @int8 suffix), `load_model` the
    command line's loader (one-line errors), which every engine worker calls."""
    options = {
        name: default if getattr(args, name) is None else getattr(args, name)
        for name, default in (SHARD_OPTIONS | INPUT_OPTIONS).items()
    }
    settings = ShardSettings(
        shard_size=args.shard_size,
        dtype=options["dtype"],
        format=options["shard_format"],
        batch_size=args.batch_size,
        input_format=options["input_format"],
        text_field=options["text_field"],
    )
    request = EncodeRequest(
        input=args.input,
        output=args.output,
        model=model,
        settings=settings,
        engine=options["engine"],
        workers=options["workers"],
        threads=options["threads"],
        device=options["device"],
        precision=options["precision"],
        address=options["address"],
    )
    summary = encode_corpus(request, load_model=load_model)
    print(f"{summary['folder']}: {summary['status']}; {summary['shards']} shards, {summary['rows']} rows")
    return 0


def plain_input_texts(args: argparse.Namespace) -> list[str]:
    """The rows of `--input` for the one-matrix mode: one file, read as the sharded mode reads it; a folder
    is refused (its files' rows would lose their file names in one matrix)."""
    path = Path(args.input)
    if path.is_dir():
        raise InvalidArgument(
            f"--input {args.input} is a folder; add --shard-size N (--output then becomes a folder of shards "
            "whose ids name each file) or give one file"
        )
    (source,) = input_files(path, args.input_format or INPUT_OPTIONS["input_format"])
    return [text for _, text in iter_rows(source, args.text_field or INPUT_OPTIONS["text_field"])]
