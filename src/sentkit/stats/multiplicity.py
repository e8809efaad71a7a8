"""Multiplicity correction for a family of tests: Holm's step-down adjustment (Holm 1979, "A simple
sequentially rejective multiple test procedure", Scand. J. Statist. 6: 65-70).

With m tests, sort their p-values p_(1) <= ... <= p_(m); the adjusted p-value of the i-th smallest is

    max over j <= i of min(1, (m - j + 1) * p_(j)),

and rejecting every test whose adjusted p-value is below alpha is Holm's procedure: the chance of one or
more false rejections in the family stays at most alpha, whatever the dependence between the tests. It
rejects everything Bonferroni (m * p) rejects, and sometimes more.
"""

from __future__ import annotations

from collections.abc import Sequence

METHOD = "Holm (1979) step-down, family-wise error rate"


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """The Holm-adjusted p-values, in the order given. A None (no test: a comparison without a p-value)
    stays None and does not count in m. Ties keep their order; the result is never below the input."""
    tests = [(p, i) for i, p in enumerate(p_values) if p is not None]
    for p, i in tests:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value {p!r} at position {i} is not in [0, 1]")
    adjusted: list[float | None] = [None] * len(p_values)
    m, running = len(tests), 0.0
    for rank, (p, i) in enumerate(sorted(tests, key=lambda t: t[0])):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
