"""`sentkit mine`: its flags and the command (the work is in mine.py)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from sentkit.corpus.readers import FORMATS
from sentkit.errors import InvalidArgument
from sentkit.mining.approximate import DEFAULT_EF_SEARCH, DEFAULT_NPROBE
from sentkit.mining.exact import DEVICES, DTYPES
from sentkit.mining.index_spec import (
    FACTORY_EXAMPLES,
    MAX_DIM_PARTS,
    MAX_EF_SEARCH,
    MAX_LISTS,
    MAX_REFINE,
    PRESETS,
    bounded_int,
    parse_index,
)
from sentkit.mining.margin import DEFAULT_K, SCORINGS
from sentkit.mining.nprobe_tuning import RECALL_TARGET, TUNE_QUERIES
from sentkit.mining.recall import RECALL_QUERIES
from sentkit.mining.retrieval import RETRIEVALS
from sentkit.mining.search import FLAT_MAX, GPU_FLAT_MAX, IndexConfig
from sentkit.mining.size_rules import K_MAX

# what a signed number looks like on this command line (argparse's own rule reads `-inf` and `-1e-3` as
# options): `--threshold -0.5` and `--threshold -inf` reach the option's type, which accepts or refuses them
SIGNED_NUMBER = re.compile(r"^-(?:\d|\.\d|inf$|infinity$|nan$)", re.IGNORECASE)


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
    mine._negative_number_matcher = SIGNED_NUMBER  # no option of `mine` looks like a number
    mine.add_argument(
        "--k",
        type=bounded_int("--k", 1, K_MAX, "a neighbour count"),
        default=DEFAULT_K,
        help=f"neighbours per sentence ({DEFAULT_K}; at most {K_MAX}, and above {DEFAULT_K} at most a tenth "
        "of the smaller side's rows)",
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
    add_index_arguments(mine, positive_int)
    mine.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="search on N Ray workers, each holding 1/N of the searched side (a Ray on this machine, or the "
        "cluster of --address; default there: one per CPU share)",
    )
    mine.add_argument(
        "--address",
        default=None,
        help="mine on the Ray cluster at this address (ray start --head prints it); shard folders must be "
        "readable from every node",
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
        keeps = "every pair: leave --threshold out" if value == -math.inf else "no pair"
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r} (it would keep {keeps})")
    return value


def add_index_arguments(parser, positive_int) -> None:
    """The flags that choose and tune the k-NN search (sentkit.mining.search)."""
    parser.add_argument(
        "--index",
        type=_index_choice,
        default="auto",
        help=f"{', '.join(PRESETS)} or a FAISS factory string ({FACTORY_EXAMPLES}); auto: flat up to "
        "--flat-max, else ivf-fastscan",
    )
    parser.add_argument(
        "--flat-max",
        type=positive_int,
        default=None,
        help=f"auto: exact search while src rows x tgt rows <= N^2 ({FLAT_MAX}; {GPU_FLAT_MAX} when exact "
        "search runs on a GPU)",
    )
    parser.add_argument(
        "--exact-dtype",
        choices=DTYPES,
        default="auto",
        help="exact search products: bfloat16 candidates are re-scored and checked in float32 (auto: "
        "bfloat16 on a GPU, and where the CPU has it natively and it is faster)",
    )
    parser.add_argument(
        "--exact-device",
        choices=DEVICES,
        default="auto",
        help="where exact search multiplies (auto: a CUDA GPU when torch sees one, else the CPU); the "
        "candidates are re-scored on the CPU either way",
    )
    parser.add_argument(
        "--nlist",
        type=bounded_int("--nlist", 1, MAX_LISTS, "a list count"),
        default=None,
        help="ivfpq, ivf-fastscan: IVF lists (16 / 2 sqrt(n)); at most the rows of the smaller side",
    )
    parser.add_argument(
        "--pq-m",
        type=bounded_int("--pq-m", 1, MAX_DIM_PARTS, "a sub-quantizer count"),
        default=None,
        help="ivfpq, ivf-fastscan: PQ sub-quantizers (64 / dim/2); must divide the vector dim",
    )
    parser.add_argument(
        "--nprobe",
        type=bounded_int("--nprobe", 1, MAX_LISTS, "a list count"),
        default=None,
        help=f"IVF lists visited per query (default: chosen for --recall-target, from 3/64 of "
        f"ivf-fastscan's lists or {DEFAULT_NPROBE} up)",
    )
    parser.add_argument(
        "--recall-target",
        type=_fraction,
        default=RECALL_TARGET,
        help=f"IVF without --nprobe: nprobe doubles until {TUNE_QUERIES} sampled queries reach this "
        f"recall@k against exact search ({RECALL_TARGET}; 0: no tuning)",
    )
    parser.add_argument(
        "--ef-search",
        type=bounded_int("--ef-search", 1, MAX_EF_SEARCH, "a candidate count"),
        default=None,
        help=f"HNSW candidates per query ({DEFAULT_EF_SEARCH})",
    )
    parser.add_argument(
        "--refine",
        type=bounded_int("--refine", 1, MAX_REFINE, "a candidate count"),
        default=None,
        help="approximate index: candidates per neighbour, re-scored exactly (ivf-fastscan: 64; else 4)",
    )
    parser.add_argument(
        "--recall-queries",
        type=positive_int,
        default=RECALL_QUERIES,
        help=f"approximate index: queries sampled to measure recall@k against exact search ({RECALL_QUERIES})",
    )
    parser.add_argument(
        "--seed", type=_seed, default=0, help="seed of the index's training sample and the recall sample (0)"
    )


def _index_choice(text: str) -> str:
    try:
        return parse_index(text)
    except InvalidArgument as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--index ")) from None


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a recall from 0 to 1, got {text!r}")
    return value


def _seed(text: str) -> int:
    if not text.isdigit() or int(text) >= 2**32:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to 2**32-1, got {text!r}")
    return int(text)


def run_mine(args: argparse.Namespace, model: str | None, load_model: Callable) -> int:
    """`sentkit mine`: `model` is the name to load (with any @int8 suffix; None to mine encoded shards),
    `load_model` the command line's loader."""
    from sentkit.corpus.cpu_limits import check_local_counts
    from sentkit.mining.mine import EngineConfig, MineConfig, MineRequest, mine_files, sidecar_path

    check_local_counts(None, args.workers, args.address)  # before any work

    index = IndexConfig(
        kind=args.index,
        flat_max=args.flat_max,
        nlist=args.nlist,
        pq_m=args.pq_m,
        nprobe=args.nprobe,
        ef_search=args.ef_search,
        refine=args.refine,
        seed=args.seed,
        exact_dtype=args.exact_dtype,
        exact_device=args.exact_device,
        recall_queries=args.recall_queries,
        recall_target=args.recall_target or None,
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
        engine=EngineConfig(args.address, args.workers),
    )
    summary = mine_files(request, load_model=load_model)
    kinds = {d: summary["index"][d]["factory"] for d in ("forward", "backward")}
    print(
        f"{args.out}: {summary['pairs']} pairs ({summary['candidates']} before the threshold) from "
        f"{summary['src']['rows']} x {summary['tgt']['rows']} rows; index {kinds['forward']} / {kinds['backward']}"
        f"{_engine_note(summary['engine'])}; "
        f"details in {sidecar_path(args.out)}"
    )
    return 0


def _engine_note(engine: dict) -> str:
    """`` on W Ray workers (N nodes)`` for a distributed run, nothing in process."""
    if engine.get("kind") != "ray":
        return ""
    return f" on {engine['workers']} Ray workers ({engine['nodes']} nodes)"
