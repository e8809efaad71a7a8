"""`results.json` of a run: config, objective, best and last scores, versions, and training totals that
add up over every resume (steps, loss, time), kept in each checkpoint as `run_totals.json`."""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentkit.provenance import machine_info, package_versions, source_revision

TOTALS_FILE = "run_totals.json"


@dataclass
class RunTotals:
    """What a run has done up to a checkpoint: optimizer steps, the sum of per-step losses (each the mean
    over processes), seconds spent training (each process start to its checkpoint), and one
    (from_step, to_step, seconds, lr) per part."""

    steps: int = 0
    loss_sum: float = 0.0
    train_s: float = 0.0
    parts: list[dict] = field(default_factory=list)

    def plus(self, steps: int, loss_sum: float, train_s: float, lr: float | None = None) -> RunTotals:
        """These totals followed by a part that ran from `self.steps` to `steps` (at peak rate `lr`)."""
        part = {"from_step": self.steps, "to_step": steps, "train_s": round(train_s, 3)}
        if lr is not None:
            part["lr"] = lr
        return RunTotals(steps, self.loss_sum + loss_sum, self.train_s + train_s, [*self.parts, part])

    @property
    def mean_loss(self) -> float | None:
        return self.loss_sum / self.steps if self.steps else None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> RunTotals:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


def checked_test_tasks(config) -> list[str]:
    """The test tasks' names, resolved before any model loads: an unknown name, or a user file that is
    missing or malformed (each `family:file` task is built, which reads its files), is refused in one
    line now rather than after training."""
    from sentkit.errors import ConfigError, SentkitError
    from sentkit.tasks import get_task, resolve_tasks

    try:
        names = resolve_tasks(config.test_tasks)
        for name in names:
            if ":" in name:
                get_task(name, data_root=config.data_root or None, batch_size=config.eval_batch_size)
    except SentkitError as err:
        raise ConfigError(f"test_tasks: {' '.join(str(err).split())}") from None
    return names


def run_paths(config, config_file: str | Path | None) -> dict[str, str | None]:
    """Absolute forms of the paths a run was given as typed (the model only when it is a local folder)."""
    model = Path(config.model).expanduser()
    return {
        "output_dir": str(Path(config.output_dir).resolve()),
        "best_model": str((Path(config.output_dir) / "best").resolve()),
        "config_file": str(Path(config_file).resolve()) if config_file else None,
        "model": str(model.resolve()) if model.is_dir() else None,
    }


def test_failures(run_dir: str | Path) -> dict[str, str]:
    """Test tasks that failed in a finished run (`stage/task` for a multi-stage run): name -> error.
    Empty while there is no results.json (under DDP only process 0 writes it)."""
    path = Path(run_dir) / "results.json"
    if not path.is_file():
        return {}
    results = json.loads(path.read_text(encoding="utf-8"))
    parts = [("", results)] + [(f"{s['name']}/", s["results"]) for s in results.get("stages", [])]
    return {
        prefix + name: f"{error['type']}: {error['message']}"
        for prefix, part in parts
        for name, error in part.get("test_errors", {}).items()
    }


def run_results(
    config,
    trainer,
    output,
    overrides: dict,
    started,
    t0: float,
    resumed_step: int,
    totals: RunTotals,
    data: dict[str, Any],
    config_file: str | Path | None = None,
) -> dict:
    """The results.json mapping of a finished run; `totals` (`trainer.totals_now()`) sum every part of a
    resumed run; `data` is the training data's record (`sentkit.training.data.data_record`)."""
    from sentkit.objectives import objective_config

    best_file = trainer.run_dir / "best.json"
    best = json.loads(best_file.read_text(encoding="utf-8")) if best_file.is_file() else None
    results: dict[str, Any] = {
        "model": config.model,
        "objective": {
            "name": config.objective,
            **dataclasses.asdict(objective_config(config.objective, **overrides)),
        },
        "config": config.to_dict(),
        "seed": config.seed,
        "world_size": trainer.args.world_size,
        "global_step": trainer.state.global_step,
        "resumed_from_step": resumed_step or None,
        "train": {
            "steps": totals.steps,
            "train_loss": totals.mean_loss,
            "train_s": round(totals.train_s, 3),
            "parts": totals.parts,
            "last_part": dict(output.metrics),
        },
        "best": best,
        "last_eval": trainer.metrics_rows[-1] if trainer.metrics_rows else None,
        "best_model": str(trainer.run_dir / "best"),
        "paths": run_paths(config, config_file),
        "data": data,
        "versions": package_versions(),
        **source_revision(),
        "machine": machine_info(),
        "started": started.isoformat(timespec="seconds"),
        "wall_s": round(time.perf_counter() - t0, 3),
    }
    if config.test_tasks:
        from sentkit.encoders import load_encoder
        from sentkit.evaluate import evaluate

        reloaded = load_encoder(trainer.run_dir / "best")
        tested = evaluate(
            reloaded,
            config.test_tasks,
            seed=config.seed,
            batch_size=config.eval_batch_size,
            data_root=config.data_root or None,
            show_progress=config.progress,
        )
        results["test"] = {name: r["scores"] for name, r in tested["tasks"].items()}
        # as `sentkit eval` records them: each task's meta (user files: path, sha256, rows) and errors
        results["test_meta"] = {name: r["meta"] for name, r in tested["tasks"].items()}
        results["test_errors"] = tested["errors"]
    return results
