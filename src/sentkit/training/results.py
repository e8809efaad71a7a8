"""`results.json` of a run: config, objective, best and last scores, versions, and training totals that
add up over every resume (steps, loss, time), kept in each checkpoint as `run_totals.json`."""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from typing import Any

from sentkit.provenance import machine_info, package_versions

TOTALS_FILE = "run_totals.json"


@dataclass
class RunTotals:
    """What a run has done up to a checkpoint: optimizer steps, the sum of per-step losses, seconds spent
    training (each process start to its checkpoint), and one (from_step, to_step, seconds) per part."""

    steps: int = 0
    loss_sum: float = 0.0
    train_s: float = 0.0
    parts: list[dict] = field(default_factory=list)

    def plus(self, steps: int, loss_sum: float, train_s: float) -> RunTotals:
        """These totals followed by a part that ran from `self.steps` to `steps`."""
        part = {"from_step": self.steps, "to_step": steps, "train_s": round(train_s, 3)}
        return RunTotals(steps, self.loss_sum + loss_sum, self.train_s + train_s, [*self.parts, part])

    @property
    def mean_loss(self) -> float | None:
        return self.loss_sum / self.steps if self.steps else None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> RunTotals:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


def run_results(config, trainer, output, overrides: dict, started, t0: float, resumed_step: int) -> dict:
    """The results.json mapping of a finished run; `train` sums every part of a resumed run."""
    from sentkit.objectives import objective_config

    best_file = trainer.run_dir / "best.json"
    best = json.loads(best_file.read_text(encoding="utf-8")) if best_file.is_file() else None
    totals = trainer.totals_now()
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
        "versions": package_versions(),
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
    return results
