"""Evaluation tasks: one file per task type, one registry line per task."""

from __future__ import annotations

from collections.abc import Callable

from sentkit.registry import Registry
from sentkit.tasks.task import Task

TASKS: Registry[Callable[..., Task]] = Registry("task")

# Registry lines: name -> factory. Every factory takes keyword arguments only
# (langs=None, data_root=None, batch_size=64) and returns a Task.
# --- sts ---
# --- end sts ---
# --- clustering+bitext ---
# --- end clustering+bitext ---
# --- transfer+knn+retrieval ---
# --- end transfer+knn+retrieval ---

# Named suites: `sentkit eval --tasks default`.
SUITES: dict[str, list[str]] = {}


def get_task(name: str, **kwargs) -> Task:
    """Build a registered task; kwargs (langs, data_root, batch_size) go to its factory."""
    return TASKS.get(name)(**kwargs)


def resolve_tasks(spec: str | list[str]) -> list[str]:
    """Expand a comma list of task and suite names into task names, in order, without repeats."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    names: list[str] = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        if item in SUITES:
            expanded = SUITES[item]
        else:
            TASKS.get(item)  # raises with a "did you mean" hint
            expanded = [item]
        names.extend(n for n in expanded if n not in names)
    return names
