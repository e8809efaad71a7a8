"""What an objective may declare beyond `forward(batch) -> {name: loss}`; every hook is optional.

- `param_groups(base_lr) -> list[dict]`: optimizer groups with their own `lr` (and `weight_decay`), e.g.
  an entity table trained at another rate; parameters not named keep the run's lr and weight decay.
- `extra_optimizers() -> dict[str, ExtraOptimizer]`: optimizers the objective builds over its own
  parameters, stepped `steps` times before each main optimizer step on `inner_loss(batch, name, step)`
  (a WGAN critic, Emu Algorithm 1). Their parameters are left out of the main optimizer.
- `min_batch_rows`, `int_columns`, `extra_text_columns`: see `sentkit.training.data`.
"""

from __future__ import annotations

from torch import nn

from sentkit.objectives.hooks import ExtraOptimizer


def objective_param_groups(objective: nn.Module, base_lr: float) -> list[dict]:
    """The objective's own parameter groups (`param_groups(base_lr)`), checked: parameters of the objective,
    each in one group only."""
    declare = getattr(objective, "param_groups", None)
    groups = list(declare(base_lr)) if callable(declare) else []
    _check_disjoint(objective, [list(g["params"]) for g in groups], "param_groups")
    return groups


def objective_extra_optimizers(objective: nn.Module) -> dict[str, ExtraOptimizer]:
    """The objective's extra optimizers (`extra_optimizers()`), checked like the parameter groups."""
    declare = getattr(objective, "extra_optimizers", None)
    extras = dict(declare()) if callable(declare) else {}
    for name, extra in extras.items():
        if not isinstance(extra, ExtraOptimizer):
            raise TypeError(
                f"extra_optimizers()[{name!r}]: expected an ExtraOptimizer, got {type(extra).__name__}"
            )
    if extras and not callable(getattr(objective, "inner_loss", None)):
        raise TypeError(
            f"{type(objective).__name__} declares extra optimizers but no inner_loss(batch, name, step)"
        )
    _check_disjoint(objective, [e.parameters() for e in extras.values()], "extra_optimizers")
    return extras


def _check_disjoint(objective: nn.Module, parts: list[list[nn.Parameter]], hook: str) -> None:
    owned = {id(p) for p in objective.parameters()}
    seen: set[int] = set()
    for params in parts:
        for p in params:
            if id(p) not in owned:
                raise ValueError(
                    f"{type(objective).__name__}.{hook}: a parameter that is not the objective's"
                )
            if id(p) in seen:
                raise ValueError(f"{type(objective).__name__}.{hook}: a parameter named in two groups")
            seen.add(id(p))
