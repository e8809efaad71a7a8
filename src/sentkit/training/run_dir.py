"""The run directory: what a folder holds decides whether `train` starts, resumes, does nothing or refuses.

- empty or absent: a fresh run;
- a complete `checkpoint-N` and no results.json: resume (same config up to `RESUMABLE_CHANGES`);
- results.json (a finished run) and the same config: nothing to do, the results stay as they are;
- any other run (config.yaml, results.json or best/ without a checkpoint to resume, or a different
  config): refused unless `overwrite`, which deletes the run first.
A fresh run that fails before its first checkpoint removes what it wrote, so no half-run is left behind.
The lock file (`sentkit.training.run_lock`) is never part of a run: ignored, kept when a run is cleared.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from sentkit.atomic import atomic_write_text
from sentkit.errors import ConfigError
from sentkit.training.run_lock import run_entries

RUN_MARKERS = ("config.yaml", "results.json", "best")


def write_metrics(run_dir: Path, rows: list[dict]) -> None:
    """metrics.jsonl: one strict-JSON line per evaluation (NaN refused), rewritten whole and atomically."""
    atomic_write_text(run_dir / "metrics.jsonl", "".join(json.dumps(r, allow_nan=False) + "\n" for r in rows))


def read_metrics(run_dir: Path, up_to_step: int | None = None) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if up_to_step is None or r["step"] <= up_to_step]


def _checkpoint_folders(run_dir: Path) -> list[tuple[int, Path]]:
    found = []
    for folder in run_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*"):
        step = folder.name.rsplit("-", 1)[-1]
        if folder.is_dir() and step.isdigit():
            found.append((int(step), folder))
    return sorted(found, reverse=True)


def checkpoint_state(folder: Path) -> dict | None:
    """A checkpoint's trainer_state.json when complete (written last, parses, says the folder's step)."""
    try:
        state = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    step = folder.name.rsplit("-", 1)[-1]
    return state if isinstance(state, dict) and str(state.get("global_step")) == step else None


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The newest complete `checkpoint-N`; one cut short by a kill has no valid state file and is skipped,
    so resuming never reads half a checkpoint."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return None
    for _, folder in _checkpoint_folders(run_dir):
        if checkpoint_state(folder) is not None:
            return folder
    return None


def incomplete_checkpoints(run_dir: Path, keep: Path | None) -> list[Path]:
    """Checkpoint folders newer than `keep`: cut short by a kill, removed before training goes on."""
    newest = int(keep.name.rsplit("-", 1)[-1]) if keep else -1
    return [folder for step, folder in _checkpoint_folders(run_dir) if step > newest]


def holds_run(run_dir: Path) -> bool:
    """Whether a folder holds a sentkit run (config.yaml, results.json, best/ or a checkpoint)."""
    return run_dir.is_dir() and (
        any((run_dir / m).exists() for m in RUN_MARKERS) or bool(_checkpoint_folders(run_dir))
    )


@dataclass
class RunStart:
    """How `train` proceeds in a run directory: `fresh`, `resume` (from `checkpoint`) or `finished`;
    `delete`: remove the old run first (overwrite)."""

    action: str
    checkpoint: Path | None = None
    existing: frozenset[str] = frozenset()  # entries of the folder before this run (kept on failure)
    delete: bool = False


def plan_run(run_dir: Path, config, free_changes: frozenset[str]) -> RunStart:
    """Decide fresh / resume / finished from what the folder holds, or raise a one-line ConfigError.

    Reads only (every process of a distributed run decides the same). `free_changes`: config fields that
    may differ from the stored config.yaml without refusing.
    """
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"output_dir: {run_dir} is a file, expected a folder")
    if config.overwrite and run_dir.is_dir():
        if run_entries(run_dir) and not holds_run(run_dir):
            raise ConfigError(f"output_dir: {run_dir} is not a sentkit run directory; refusing to delete it")
        return RunStart("fresh", delete=True)
    existing = frozenset(p.name for p in run_entries(run_dir)) if run_dir.is_dir() else frozenset()
    if not holds_run(run_dir):
        return RunStart("fresh", existing=existing)
    finished = (run_dir / "results.json").is_file()
    checkpoint = latest_checkpoint(run_dir)
    if finished or checkpoint is None:
        # a spent schedule or none to go on from: more steps or another lr is a new run, not a resume
        from sentkit.training.config import TRAINING_CHANGES

        free_changes = free_changes - TRAINING_CHANGES
    diffs = _config_changes(run_dir, config, free_changes)
    if diffs:
        kind = "finished run" if finished else "run"
        raise ConfigError(
            f"{run_dir} holds a {kind} with a different config ({diffs}); pass --overwrite "
            "(overwrite=True) to start over or choose another output_dir"
        )
    if finished:
        return RunStart("finished", checkpoint, existing)
    if checkpoint is None:
        raise ConfigError(
            f"{run_dir} holds a run (config.yaml, best/) but no checkpoint to resume; pass --overwrite "
            "(overwrite=True) to start over or choose another output_dir"
        )
    return RunStart("resume", checkpoint, existing)


def _config_changes(run_dir: Path, config, free_changes: frozenset[str]) -> str:
    """'field: old -> new, ...' for stored-config fields that differ and may not; '' when none do."""
    from sentkit.training.config import TrainConfig

    path = run_dir / "config.yaml"
    if not path.is_file():
        if (run_dir / "results.json").is_file() or (run_dir / "best").exists():
            return "no config.yaml"
        return ""
    old = TrainConfig.from_yaml(path).to_dict()
    new = config.to_dict()
    changed = sorted(k for k, v in new.items() if old.get(k) != v and k not in free_changes)
    return ", ".join(f"{k}: {old.get(k)!r} -> {new[k]!r}" for k in changed)


def remove_failed_run(run_dir: Path, start: RunStart) -> None:
    """After a fresh run failed before its first complete checkpoint: delete what it wrote (all of the
    folder when it did not exist or was empty), so no config.yaml-only folder is left behind."""
    if start.action != "fresh" or not run_dir.is_dir() or latest_checkpoint(run_dir) is not None:
        return
    _remove_entries(run_dir, keep=start.existing)
    if not start.existing:
        try:
            run_dir.rmdir()  # fails while the run's lock file is there: the lock removes the folder then
        except OSError:
            pass


def clear_run_dir(run_dir: Path) -> None:
    """`overwrite`: delete the old run, everything in the folder but the lock this process holds."""
    _remove_entries(run_dir, keep=frozenset(), ignore_errors=False)


def _remove_entries(run_dir: Path, keep: frozenset[str], ignore_errors: bool = True) -> None:
    for entry in run_entries(run_dir):
        if entry.name in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=ignore_errors)
        else:
            entry.unlink(missing_ok=True)
