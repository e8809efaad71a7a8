"""What the rows searched allow: the margin's k against the other side, and an index's lists, codebooks and
graph against the keys it is trained on and holds (docs/mining.md, "Mining parallel sentences": k and the
rows searched).

Checked once the sides' row counts are known and before the model loads (mine.mine_files), and again by
mine.mine on the rows actually mined. Each direction searches the other side's rows, so the smaller side
bounds both.

The ratio margin divides a pair's cosine by the mean cosine of each side's k nearest neighbours: that mean
must describe a neighbourhood, a small part of the other side. Where k reaches a sizeable part of it the mean
tends to the whole side's average cosine, near zero for unrelated sentences, and unrelated pairs get huge
margins. The papers use k = 4 (DEFAULT_K); any k up to K_MAX is accepted while it is at most a tenth of the
rows searched (NEIGHBOURHOOD_SHARE), and k up to DEFAULT_K always (on a side of fewer than DEFAULT_K rows the
searches use all of it, and the sidecar records the k they used).
"""

from __future__ import annotations

from sentkit.errors import InvalidArgument
from sentkit.mining.index_spec import ivf_lists, pq_nbits, uses_nsg
from sentkit.mining.margin import DEFAULT_K
from sentkit.mining.search import IVF_MIN_KEYS

K_MAX = 64  # --k: neighbours per sentence (the ivf-fastscan preset re-scores 64 x k candidates per query)
NEIGHBOURHOOD_SHARE = 10  # k above DEFAULT_K must be at most 1/10 of the rows searched
NSG_MIN_KEYS = 101  # FAISS's NSG graph build (NNDescent) refuses 100 rows or fewer


def max_k(rows: int) -> int:
    """The largest k the rule allows when the smaller side has `rows` rows: max(DEFAULT_K, rows // 10),
    at most K_MAX."""
    return min(K_MAX, max(DEFAULT_K, rows // NEIGHBOURHOOD_SHARE))


def check_k(k: int, rows: dict[str, int], scoring: str = "margin") -> None:
    """Refuse (one line) a k that is not small against the rows searched; `rows` maps each side's name (as
    the user gave it) to its rows. Cosine scoring uses only the nearest neighbour, so only K_MAX applies."""
    if not 1 <= k <= K_MAX:
        raise InvalidArgument(f"--k {k}: expected 1 to {K_MAX} neighbours per sentence (the papers use 4)")
    if scoring != "margin":
        return
    name, smaller = min(rows.items(), key=lambda item: item[1])
    if k > max_k(smaller):
        raise InvalidArgument(
            f"--k {k}: {name} has {smaller} rows to search, and a margin's mean over {k} neighbours of them "
            f"is no longer a neighbourhood; give --k at most {max_k(smaller)} (a tenth of the rows, or 4)"
        )


def check_index_rows(kind: str, nlist: int | None, rows: dict[str, int]) -> None:
    """Refuse (one line) an index the smaller side's rows cannot train or hold: more IVF lists than rows,
    more PQ centroids (2^nbits) than rows, an NSG graph over NSG_MIN_KEYS - 1 rows or fewer. `kind` is
    --index (a preset's lists are --nlist when given, else derived to fit)."""
    name, smaller = min(rows.items(), key=lambda item: item[1])
    if kind in ("ivfpq", "ivf-fastscan") and smaller < IVF_MIN_KEYS:
        raise InvalidArgument(
            f"--index {kind}: needs at least {IVF_MIN_KEYS} rows a side to train, {name} has {smaller}; "
            "use --index flat"
        )
    lists = nlist if kind in ("ivfpq", "ivf-fastscan") else ivf_lists(kind)
    if lists is not None and lists > smaller:
        flag = "--nlist" if kind in ("ivfpq", "ivf-fastscan") else "--index"
        shown = lists if flag == "--nlist" else kind
        raise InvalidArgument(
            f"{flag} {shown}: {lists:,} IVF lists need at least as many rows to train, {name} has {smaller}; "
            "use fewer lists or --index flat"
        )
    nbits = pq_nbits(kind)
    if nbits is not None and 2**nbits > smaller:
        raise InvalidArgument(
            f"--index {kind}: {nbits}-bit PQ codes need {2**nbits:,} centroids, trained on at least as many "
            f"rows; {name} has {smaller}: use fewer bits or --index flat"
        )
    if uses_nsg(kind) and smaller < NSG_MIN_KEYS:
        raise InvalidArgument(
            f"--index {kind}: FAISS builds an NSG graph over more than {NSG_MIN_KEYS - 1} rows; {name} has "
            f"{smaller}: use --index flat"
        )
