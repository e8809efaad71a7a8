"""Training objectives: one file each; an objective is an nn.Module whose forward(batch) returns named losses."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from torch import nn

from sentkit.objectives.entity import EntityAwareContrastive
from sentkit.objectives.simcse import UnsupervisedSimCSE
from sentkit.objectives.specialize import (
    ContrastiveMargin,
    Emu,
    EmuNoLD,
    EmuNoLDCL,
    EmuParallel,
    NPair,
    SoftmaxClassifier,
)
from sentkit.objectives.supervised import SupervisedSimCSE
from sentkit.registry import Registry

OBJECTIVES: Registry[Callable[..., nn.Module]] = Registry("objective")

OBJECTIVES.add("simcse-unsup", UnsupervisedSimCSE)
OBJECTIVES.add("simcse-sup", SupervisedSimCSE)
OBJECTIVES.add("ease", EntityAwareContrastive)
OBJECTIVES.add("emu", Emu)
OBJECTIVES.add("emu-no-ld", EmuNoLD)
OBJECTIVES.add("emu-no-ld-cl", EmuNoLDCL)
OBJECTIVES.add("emu-parallel", EmuParallel)
OBJECTIVES.add("softmax", SoftmaxClassifier)
OBJECTIVES.add("contrastive", ContrastiveMargin)
OBJECTIVES.add("n-pair", NPair)


def objective_config(name: str, **overrides):
    """The objective's hyper-parameter dataclass with paper defaults, `overrides` applied (unknown keys raise)."""
    cls = OBJECTIVES.get(name)
    known = {f.name for f in dataclasses.fields(cls.config_class)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"objective {name!r} has no option(s) {unknown}; it takes {sorted(known)}")
    return cls.config_class(**overrides)


def build_objective(name: str, encoder: nn.Module, **overrides) -> nn.Module:
    """Instantiate a registered objective around a trainable encoder."""
    return OBJECTIVES.get(name)(encoder, objective_config(name, **overrides))


__all__ = ["OBJECTIVES", "build_objective", "objective_config"]
