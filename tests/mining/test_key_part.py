"""Key parts (what each Ray worker of `sentkit mine` holds): merged in part order, exact search over parts gives
the lists of one search over the whole side; an index's lists chosen once (coarse) search as the index's own
choice does; approximate parts, sharing one trained index, find at least what one index finds."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.mining.approximate import trained_index
from sentkit.mining.engine_ray import merged
from sentkit.mining.exact import UnitRows, exact_search
from sentkit.mining.key_part import KeyPart, SearchPlan
from sentkit.mining.recall import found_share
from sentkit.mining.vectors import normalized


def _vectors(n: int, dim: int = 24, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, dim)).astype(np.float32)
    rows = centres[rng.integers(0, 12, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    rows[5::97] = rows[4::97][: len(rows[5::97])]  # exact duplicates: ties must break by row
    return normalized(rows)


def _parts(keys: np.ndarray, cuts: list[int], plan: SearchPlan, trained=None) -> list[KeyPart]:
    bounds = [0, *cuts, len(keys)]
    return [KeyPart(UnitRows(keys[a:b]), a, plan, trained) for a, b in zip(bounds[:-1], bounds[1:])]


def test_exact_parts_merged_in_order_are_one_search_over_the_whole_side():
    keys, queries = _vectors(900), _vectors(150, seed=1)
    queries[:20] = keys[4:404:20]  # queries whose best neighbours are tied duplicates
    plan = SearchPlan("flat", 6, "float32", "cpu")
    whole_s, whole_i, _ = exact_search(UnitRows(queries), UnitRows(keys), 6, "float32", "cpu")
    for cuts in ([300, 600], [1, 450, 899], [97]):
        parts = _parts(keys, cuts, plan)
        sims, rows = merged([part.search(queries) for part in parts], 6)
        assert (rows == whole_i).all() and (sims == whole_s).all()
    # a tie keeps the lower row, whichever part holds it
    tied = np.flatnonzero(np.isclose(whole_s[:, 0], whole_s[:, 1], atol=0))
    assert len(tied) and (whole_i[tied, 0] < whole_i[tied, 1]).all()


def test_lists_chosen_once_search_as_the_index_chooses_them():
    keys, queries = _vectors(3000), _vectors(200, seed=2)
    index, _, _ = trained_index(UnitRows(keys), "IVF32,PQ8x4fs", seed=0)
    import faiss

    trained = faiss.serialize_index(index)
    plan = SearchPlan("IVF32,PQ8x4fs", 4, "float32", "cpu", refine=8)
    part = KeyPart(UnitRows(keys), 0, plan, trained)
    assert part.preassignable
    own = part.search(queries, nprobe=6)
    assigned = part.coarse(queries, 6)
    assert assigned[1].shape == (200, 6)
    chosen = part.search(queries, nprobe=6, assigned=assigned)
    assert (chosen[0] == own[0]).all() and (chosen[1] == own[1]).all()


@pytest.mark.parametrize("cuts", [[1500], [700, 1400, 2100]])
def test_approximate_parts_sharing_one_index_find_at_least_what_it_finds(cuts):
    keys, queries = _vectors(3000, seed=3), _vectors(300, seed=4)
    index, _, _ = trained_index(UnitRows(keys), "IVF32,PQ8x4fs", seed=0)
    import faiss

    trained = faiss.serialize_index(index)
    plan = SearchPlan("IVF32,PQ8x4fs", 4, "float32", "cpu", refine=4)
    one = KeyPart(UnitRows(keys), 0, plan, trained).search(queries, nprobe=4)
    parts = _parts(keys, cuts, plan, trained)
    assigned = parts[0].coarse(queries, 4)  # any part ranks for all: they share the quantizer
    split = merged([part.search(queries, 4, assigned) for part in parts], 4)
    exact_s, _, _ = exact_search(UnitRows(queries), UnitRows(keys), 4, "float32", "cpu")
    kth = exact_s[:, -1]
    # each part re-scores its own refine x k candidates: the merged lists score at least as high, row by row
    assert (split[0] >= one[0] - 1e-6).all()
    assert found_share(*split, kth) >= found_share(*one, kth)
    assert found_share(*one, kth) < 1.0  # the index alone misses some: the comparison means something
