"""What `--index` accepts: a preset name or a FAISS index factory string, checked before any work is done.

The grammar is the part of FAISS's `index_factory` that makes sense for cosine mining: optional
pre-transforms (OPQ, PCA, random rotation), one index (IVF with any coarse quantizer FAISS builds from
`IVFn` or `IVFn_HNSWm`, HNSW, NSG, or a flat code: Flat, PQ, SQ) and an optional refinement stage. The
syntax is checked when the command line is parsed; the vector dim (PQ sub-quantizers must divide it) once
it is known, by building the (empty) index.
"""

from __future__ import annotations

import math
import re

from sentkit.errors import InvalidArgument

PRESETS = ("auto", "flat", "faiss-flat", "ivfpq", "ivf-fastscan")
FACTORY_EXAMPLES = "IVF4096,Flat, OPQ64,IVF16384,PQ64, HNSW32, IVF1024,PQ32"

_PRE = r"(?:OPQ\d+(?:_\d+)?|PCAW?R?\d+|RR\d+|L2norm)"
_CODE = r"(?:Flat|PQ\d+(?:x\d+)?(?:fs|fsr|np)?|SQ(?:4|6|8|fp16|bf16))"
_MAIN = rf"(?:IVF\d+(?:_HNSW\d+)?,{_CODE}|HNSW\d*(?:[_,]{_CODE})?|NSG\d+(?:,Flat)?|{_CODE})"
_REFINE = rf"(?:RFlat|Refine\({_CODE}\))"
_FACTORY = re.compile(rf"(?:{_PRE},)*{_MAIN}(?:,{_REFINE})?")


def parse_index(text: str) -> str:
    """`text` if it is a preset or a factory string of the grammar above whose numbers lie in the ranges FAISS
    can build and search (check_factory_numbers); else InvalidArgument (one line)."""
    if text in PRESETS:
        return text
    if _FACTORY.fullmatch(text):
        check_factory_numbers(text)
        return text
    hint = ""
    if text.lower() in PRESETS:
        hint = f" (presets are lower-case: {text.lower()})"
    elif re.fullmatch(_FACTORY.pattern, text, re.IGNORECASE):
        hint = " (FAISS factory strings are case-sensitive: IVF, PQ, Flat, HNSW)"
    raise InvalidArgument(
        f"--index {text!r} is neither a preset ({', '.join(PRESETS)}) nor a FAISS factory string "
        f"such as {FACTORY_EXAMPLES}{hint}"
    )


# The numbers of a factory string, checked when the command line is parsed (docs/mining.md, "Indexes": numbers
# in a factory string). Below the lower bounds FAISS aborts, crashes or hangs (HNSW M 0 and 1, NSG R below 5, PQ nbits
# 0 and 1, RR 0, an OPQ output dim of 0) or fails only after the vectors are loaded (IVF 0 lists, PQ 0
# sub-quantizers); the upper bounds keep an index within what one machine can hold and search.
MAX_LISTS = 1 << 24  # IVF lists and --nprobe (the largest IVF sizes FAISS documents are 2^20-2^22)
MAX_DIM_PARTS = 1 << 16  # OPQ/PQ sub-quantizers, PCA/RR/OPQ output dims and --pq-m
HNSW_M = (2, 256)  # links per node: HNSW's level 0 keeps 2 M of them for every row
NSG_R = (8, 256)  # NSG's out-degree (below 5 FAISS's graph build does not finish)
PQ_NBITS = (3, 16)  # bits per PQ code: FAISS's PQ distance tables need 8 | 2^nbits; 2^16 centroids is what
# the 65,536-row training sample (approximate.TRAIN_MIN) can fit
FASTSCAN_NBITS = 4  # the fast-scan codes (fs, fsr) are 4-bit
MAX_EF_SEARCH = 1 << 16  # --ef-search: HNSW candidates per query
MAX_REFINE = 1024  # --refine: candidates per wanted neighbour, re-scored exactly

_NUMBERS = (
    (re.compile(r"(?<![A-Z])OPQ(\d+)(?:_(\d+))?"), "OPQ"),
    (re.compile(r"PCAW?R?(\d+)"), "PCA"),
    (re.compile(r"(?<![A-Z])RR(\d+)"), "RR"),
    (re.compile(r"IVF(\d+)"), "IVF"),
    (re.compile(r"HNSW(\d+)"), "HNSW"),
    (re.compile(r"NSG(\d+)"), "NSG"),
    (re.compile(r"(?<![A-Z])PQ(\d+)(?:x(\d+))?(fsr|fs|np)?"), "PQ"),
)


def check_factory_numbers(factory: str) -> None:
    """Refuse (InvalidArgument, one line) a factory string with a number FAISS cannot use: each part's
    number must lie in its range (the constants above); OPQ's output dim must be a multiple of its M."""
    for pattern, kind in _NUMBERS:
        for match in pattern.finditer(factory):
            _check_part(factory, kind, match)


def _check_part(factory: str, kind: str, match: re.Match) -> None:
    part = match.group(0)
    first = int(match.group(1))
    if kind == "OPQ":
        _in_range(factory, part, "OPQ sub-quantizers M", first, 1, MAX_DIM_PARTS)
        if match.group(2) is not None:
            out = int(match.group(2))
            _in_range(factory, part, "OPQ output dim", out, 1, MAX_DIM_PARTS)
            if out % first:
                raise InvalidArgument(
                    f"--index {factory}: {part} needs its output dim ({out}) to be a multiple of {first}"
                )
    elif kind in ("PCA", "RR"):
        _in_range(factory, part, f"{kind} output dim", first, 1, MAX_DIM_PARTS)
    elif kind == "IVF":
        _in_range(factory, part, "IVF lists", first, 1, MAX_LISTS)
    elif kind == "HNSW":
        _in_range(factory, part, "HNSW M (links per node)", first, *HNSW_M)
    elif kind == "NSG":
        _in_range(factory, part, "NSG R (out-degree)", first, *NSG_R)
    else:
        _in_range(factory, part, "PQ sub-quantizers", first, 1, MAX_DIM_PARTS)
        nbits = int(match.group(2)) if match.group(2) is not None else 8
        if match.group(3) in ("fs", "fsr"):
            if nbits != FASTSCAN_NBITS:
                raise InvalidArgument(
                    f"--index {factory}: fast-scan PQ codes are {FASTSCAN_NBITS}-bit "
                    f"(PQ{first}x{FASTSCAN_NBITS}{match.group(3)}), got {nbits} bits ({part})"
                )
        else:
            _in_range(factory, part, "PQ bits per code", nbits, *PQ_NBITS)


def _in_range(factory: str, part: str, what: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        where = "" if part == factory else f" ({part})"
        raise InvalidArgument(
            f"--index {factory}: {what} must be from {low} to {high:,}, got {value:,}{where}"
        )


def bounded_int(flag: str, low: int, high: int, what: str):
    """An argparse type: an integer from `low` to `high` (else a one-line error naming the range)."""
    import argparse

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {what} from {low} to {high:,}, got {text!r}")
        return value

    parse.__name__ = flag.lstrip("-").replace("-", "_")  # argparse names the type in some messages
    return parse


def pq_nbits(factory: str) -> int | None:
    """Bits per PQ code of a factory string (8 when not given; None without PQ)."""
    match = re.search(r"(?<![A-Z])PQ\d+(?:x(\d+))?", factory)
    if match is None:
        return None
    return int(match.group(1) or 8)


def uses_nsg(factory: str) -> bool:
    return re.search(r"(?:^|,)NSG", factory) is not None


def is_approximate(kind: str) -> bool:
    """Whether `kind` (a preset or a factory string) is an approximate index."""
    return kind not in ("auto", "flat", "faiss-flat", "Flat")


def ivf_lists(factory: str) -> int | None:
    """The number of inverted lists of an IVF factory string (None without IVF)."""
    match = re.search(r"(?:^|,)IVF(\d+)", factory)
    return int(match.group(1)) if match else None


def uses_hnsw(factory: str) -> bool:
    return re.search(r"(?:^|,|_)HNSW", factory) is not None


def uses_codes(factory: str) -> bool:
    """Whether the index stores compressed codes (PQ, SQ) rather than the vectors."""
    return re.search(r"(?:^|[,_])(?:PQ|SQ)", factory) is not None


def check_factory_dim(factory: str, dim: int) -> None:
    """Refuse, in one line, a factory string FAISS cannot build for `dim`-dimensional vectors."""
    import faiss

    out_dim = dim
    for part in factory.split(","):
        opq = re.fullmatch(r"OPQ(\d+)(?:_(\d+))?", part)
        if opq:
            out_dim = int(opq.group(2) or out_dim)
            if out_dim % int(opq.group(1)):
                raise InvalidArgument(
                    f"--index {factory}: {part} needs its output dim ({out_dim}) to be a multiple of "
                    f"{opq.group(1)}"
                )
        pca = re.fullmatch(r"(?:PCAW?R?|RR)(\d+)", part)
        if pca:
            out_dim = int(pca.group(1))
        pq = re.search(r"(?:^|_)PQ(\d+)", part)
        if pq and out_dim % int(pq.group(1)):
            raise InvalidArgument(
                f"--index {factory}: {part} needs the vector dim ({out_dim}) to be a multiple of "
                f"{pq.group(1)} (try PQ{_divisor_at_most(out_dim, int(pq.group(1)))})"
            )
    try:
        faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        raise InvalidArgument(
            f"--index {factory}: FAISS cannot build it for {dim}-dim vectors ({faiss_message(err)})"
        ) from None


def faiss_message(err: BaseException) -> str:
    """The reason in a FAISS exception, without its C++ location lines."""
    text = " ".join(str(err).split())
    return text.rsplit("Error: ", 1)[-1] if "Error: " in text else text


def _divisor_at_most(dim: int, limit: int) -> int:
    return max(d for d in range(1, max(1, min(limit, dim)) + 1) if dim % d == 0)


def preset_pq_m(dim: int) -> int:
    """PQ sub-quantizers of the ivfpq preset: 64 (stopes' OPQ64/PQ64) where it divides the dim, else the
    largest divisor of the dim up to min(64, dim / 2) (at least 2 dims per sub-quantizer)."""
    return _divisor_at_most(dim, min(64, max(1, dim // 2)))


def preset_nlist(n: int) -> int:
    """Inverted lists of the ivfpq preset: the power of two nearest 16 sqrt(n) (stopes), at most 65,536
    and at most n / 39 (FAISS's k-means wants 39 training rows per list)."""
    nlist = 2 ** round(math.log2(max(16 * math.sqrt(n), 1)))
    return max(1, min(nlist, 65_536, n // 39))


FASTSCAN_DIMS_PER_CODE = 2  # ivf-fastscan: dims per 4-bit sub-quantizer (192 for 384 dims: 96 bytes a row)
# ivf-fastscan: nprobe starts at 3/64 of the lists (96 of 2,048 for 1M rows). The rule: the fewest lists that
# keep the planted-pair F1 within 0.5 of exact search's on a million realistic rows, measured on the mining
# benchmark (docs/mining.md#index-presets). Recall@k alone does not set it: translations lie farther from their
# query than its same-topic neighbours, so their lists are probed later than the average neighbour's
FASTSCAN_PROBE_FRACTION = (3, 64)
FASTSCAN_MIN_NPROBE = 8
# ivf-fastscan: candidates per wanted neighbour, re-scored exactly (256 for k = 4). The rule: enough candidates
# that recall@k keeps rising as more lists are probed instead of plateauing below exact search's, at the least
# search time, on a million realistic rows (docs/mining.md#index-presets)
FASTSCAN_REFINE = 64


def fastscan_nlist(n: int) -> int:
    """Inverted lists of the ivf-fastscan preset: the power of two nearest 2 sqrt(n) (2,048 for 1M rows), at
    most n / 39. Fewer lists than stopes' 16 sqrt(n): on a few CPU cores the coarse stages (k-means, then
    every key and every query against every centroid: 2 x n x lists x dim x 2 FLOP) cost more than
    scanning 4-bit codes, so the lists are kept few and each probe scans more codes."""
    nlist = 2 ** round(math.log2(max(2 * math.sqrt(n), 1)))
    return max(1, min(nlist, n // 39))


def fastscan_pq_m(dim: int) -> int:
    """4-bit sub-quantizers of the ivf-fastscan preset: dim / 2 (192 for 384 dims) where 2 divides the dim,
    else the largest divisor of the dim up to that. Sentence vectors' nearest neighbours lie close
    together: 4 or 8 dims a sub-quantizer rank them too coarsely for 64 x k re-scored candidates to hold
    them at a million rows."""
    return _divisor_at_most(dim, max(1, dim // FASTSCAN_DIMS_PER_CODE))


def fastscan_nprobe(nlist: int) -> int:
    """Lists probed per query by the ivf-fastscan preset before any tuning: 3/64 of the lists (rounded
    down), at least 8, at most the lists. The nprobe tuning (nprobe_tuning.py) starts here and only goes
    up."""
    num, den = FASTSCAN_PROBE_FRACTION
    return min(nlist, max(FASTSCAN_MIN_NPROBE, nlist * num // den))
