"""`sentkit mine`: its flags and the command (the work is in mine.py)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from sentkit.corpus.readers import FORMATS
from sentkit.mining.margin import DEFAULT_K, SCORINGS
from sentkit.mining.retrieval import RETRIEVALS
from sentkit.mining.search import FLAT_MAX, INDEX_KINDS, IndexConfig


def add_mine_parser(sub, positive_int) -> None:
    mine = sub.add_parser(
        "mine", help="mine parallel sentences from two corpora: k-NN both ways (FAISS), margin, TSV by score"
    )
    mine.add_argument(
        "--src", required=True, help="source corpus (text/JSONL/parquet file or folder) or a shard folder"
    )
    mine.add_argument(
        "--tgt", required=True, help="target corpus or shard folder (written by sentkit encode)"
    )
    mine.add_argument(
        "--out", required=True, help="TSV of pairs (score, src_id, tgt_id, src_text, tgt_text); OUT.json"
    )
    mine.add_argument(
        "--model", default=None, help="encoder for text inputs (shard folders record their own)"
    )
    mine.add_argument("--int8", action="store_true", help="int8 ONNX export of --model (as NAME@int8)")
    mine.add_argument(
        "--k", type=positive_int, default=DEFAULT_K, help=f"neighbours per sentence ({DEFAULT_K})"
    )
    mine.add_argument(
        "--scoring", choices=SCORINGS, default="margin", help="ratio margin (default) or cosine"
    )
    mine.add_argument(
        "--retrieval", choices=RETRIEVALS, default="max", help="max: best-first one-to-one (default)"
    )
    mine.add_argument(
        "--threshold",
        type=finite_float,
        default=None,
        help="keep pairs scoring at least this (margin: 1.04-1.06)",
    )
    mine.add_argument(
        "--index", choices=INDEX_KINDS, default="auto", help="auto: flat up to --flat-max keys, else ivfpq"
    )
    mine.add_argument(
        "--flat-max", type=positive_int, default=FLAT_MAX, help=f"largest side searched exactly ({FLAT_MAX})"
    )
    mine.add_argument("--nlist", type=positive_int, default=None, help="IVF lists (default about 4 sqrt(n))")
    mine.add_argument("--pq-m", type=positive_int, default=None, help="PQ sub-quantizers (default dim/8)")
    mine.add_argument("--nprobe", type=positive_int, default=32, help="IVF lists visited per query (32)")
    mine.add_argument(
        "--refine",
        type=positive_int,
        default=4,
        help="IVF-PQ candidates per neighbour, re-scored exactly (4)",
    )
    mine.add_argument("--batch-size", type=positive_int, default=64)
    mine.add_argument("--input-format", choices=("auto", *FORMATS), default="auto")
    mine.add_argument("--text-field", default="text", help="JSONL key / parquet column holding the text")


def finite_float(text: str) -> float:
    """argparse type: a real number (nan and inf would keep no pair, or every pair, without saying so)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def run_mine(args: argparse.Namespace, model: str | None, load_model: Callable) -> int:
    """`sentkit mine`: `model` is the name to load (with any @int8 suffix; None to mine encoded shards),
    `load_model` the command line's loader."""
    from sentkit.mining.mine import MineConfig, MineRequest, mine_files, sidecar_path

    index = IndexConfig(
        kind=args.index,
        flat_max=args.flat_max,
        nlist=args.nlist,
        pq_m=args.pq_m,
        nprobe=args.nprobe,
        refine=args.refine,
    )
    config = MineConfig(
        k=args.k, scoring=args.scoring, retrieval=args.retrieval, threshold=args.threshold, index=index
    )
    request = MineRequest(
        src=args.src,
        tgt=args.tgt,
        out=args.out,
        model=model,
        config=config,
        batch_size=args.batch_size,
        input_format=args.input_format,
        text_field=args.text_field,
    )
    summary = mine_files(request, load_model=load_model)
    kinds = {d: summary["index"][d]["factory"] for d in ("forward", "backward")}
    print(
        f"{args.out}: {summary['pairs']} pairs ({summary['candidates']} before the threshold) from "
        f"{summary['src']['rows']} x {summary['tgt']['rows']} rows; index {kinds['forward']} / {kinds['backward']}; "
        f"details in {sidecar_path(args.out)}"
    )
    return 0
