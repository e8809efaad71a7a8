"""Registries refuse duplicates and suggest close names."""

from __future__ import annotations

import pytest

from sentkit.registry import Registry


def test_duplicate_raises_and_typo_hints():
    reg: Registry[int] = Registry("widget")
    reg.add("stsb", 1)
    with pytest.raises(ValueError, match="duplicate widget name 'stsb'"):
        reg.add("stsb", 2)
    with pytest.raises(KeyError, match="did you mean stsb"):
        reg.get("stbs")
    assert reg.get("stsb") == 1 and "stsb" in reg and reg.names() == ["stsb"]
