"""Type and range checks of objective hyper-parameters: a config dataclass names the range of each number
(`RANGES`), so a value that would make the loss NaN (temperature 0, a negative weight, `nan`) is refused
in one line before any model loads, whether it came from `objective_options`, a flag or Python."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, ClassVar

Range = tuple[str, Callable[[Any], bool]]

POSITIVE_NUMBER: Range = ("a positive number", lambda x: x > 0)
# A softmax temperature divides cosines in [-1, 1] in float32 (cosine_logits): the logits reach 1/t and
# each loss gradient with respect to a cosine about 1/t, and the gradient norm sums their squares, so 1/t**2
# must stay below float32's largest value (3.4e38): t >= 1/sqrt(3.4e38) = 5.4e-20, rounded up to 1e-19.
# Below it the loss or the gradient norm is infinite or NaN by construction (1e-300 itself rounds to 0).
# docs/training.md ("Option checks") states the range.
TEMPERATURE_MIN = 1e-19
TEMPERATURE: Range = (f"a number >= {TEMPERATURE_MIN:g}", lambda x: x >= TEMPERATURE_MIN)
# far below every published setting (SimCSE studies 0.001 to 1): a divergence there names the temperature
TINY_TEMPERATURE = 1e-3
NON_NEGATIVE_NUMBER: Range = ("a number >= 0", lambda x: x >= 0)
UNIT_INTERVAL: Range = ("a number in [0, 1]", lambda x: 0 <= x <= 1)
DROPOUT_RATE: Range = ("a number in [0, 1)", lambda x: 0 <= x < 1)
POSITIVE_INT: Range = ("a positive integer", lambda x: x >= 1)
NON_NEGATIVE_INT: Range = ("an integer >= 0", lambda x: x >= 0)

_KINDS = {float: "a finite number", int: "an integer", bool: "true or false", str: "a string"}


def _has_kind(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


class CheckedOptions:
    """Mixin for objective config dataclasses: every field must have its default's type (floats finite)
    and lie in its `RANGES` entry; otherwise ValueError `name: expected ..., got ...`."""

    RANGES: ClassVar[dict[str, Range]] = {}

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            kind = type(f.default)
            if kind not in _KINDS:
                continue
            words, ok = _KINDS[kind], _has_kind(value, kind)
            rule = self.RANGES.get(f.name)
            if rule is not None:
                words = rule[0]  # int fields take the integer ranges (POSITIVE_INT ...), floats the others
                ok = ok and rule[1](value)
            if not ok:
                raise ValueError(f"{f.name}: expected {words}, got {value!r}")
