"""`SentenceTrainer`: the Hugging Face `Trainer` with named loss terms, sentkit-Task model selection and the
objective hooks of `sentkit.training.hooks` (parameter groups, extra optimizers with inner steps)."""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Any

import torch
from transformers import Trainer, TrainerCallback

from sentkit.atomic import apply_default_modes, atomic_write_json
from sentkit.datasets.columns import TEXT_COLUMNS
from sentkit.encoders.torch_files import load_tensors
from sentkit.errors import ConfigError, TrainingDiverged
from sentkit.objectives.options import TINY_TEMPERATURE
from sentkit.training.hooks import objective_extra_optimizers, objective_param_groups
from sentkit.training.probes import ProbeRecord
from sentkit.training.results import TOTALS_FILE, RunTotals
from sentkit.training.rng import rng_preserved
from sentkit.training.run_dir import latest_checkpoint, write_metrics
from sentkit.training.sane_state import StartScales, largest_weight, was_checked

EXTRA_OPTIMIZERS_FILE = "extra_optimizers.pt"


class SentenceTrainer(Trainer):
    """`Trainer` + named loss terms + sentkit-Task evaluation that keeps the best encoder on disk.

    `planned_steps` (from the checkpoint being resumed) guards the learning-rate schedule; `totals`
    (also from that checkpoint) are the steps, loss and time of the run's earlier parts; `start` (also from
    it) the run's starting scales (sane_state.py); `probes` what the start model does on the probe sentences
    (probes.py), measured before training when the checkpoint carries none.
    A NaN or infinite loss term, gradient norm, weight or evaluation score stops the run at that step
    (TrainingDiverged) before anything non-finite is logged, checkpointed or saved as best/; so do weights or
    a loss grown by orders of magnitude since the start, or a model ruined by the probe rule, found when a
    checkpoint, best/ or a score is due. A checkpoint whose model is ruined is refused as a resume point.
    """

    def __init__(
        self,
        *args,
        encoder,
        task=None,
        run_dir: str | Path,
        metrics_rows=(),
        planned_steps: int | None = None,
        totals: RunTotals | None = None,
        start: StartScales | None = None,
        probes: ProbeRecord | None = None,
        **kwargs,
    ) -> None:
        # the Task stands in for the eval set: Trainer requires one when evaluation is on
        super().__init__(*args, eval_dataset=task, **kwargs)
        self.encoder = encoder
        self.task = task
        self.run_dir = Path(run_dir)
        self.metrics_rows: list[dict] = list(metrics_rows)
        self.planned_steps = planned_steps
        self.totals = totals or RunTotals()
        self.start = start  # measured at this process's first step when the checkpoint carries none
        self.probes = probes if start is None or start.probes is None else start.probes
        if self.start is not None and self.start.probes is None and self.probes is not None:
            self.start = dataclasses.replace(self.start, probes=self.probes)
        self._last_loss: torch.Tensor | None = None
        self._term_sums: dict[str, torch.Tensor] = {}
        self._loss_sum: torch.Tensor | None = None  # this process's per-step losses since it started
        self._term_step: int | None = None  # step of the last log; set at the first step of this process
        self._sentences = 0
        self._clock = time.perf_counter()
        self._segment_start = time.perf_counter()
        self._inner_done_at: int | None = None
        self.extra_optimizers = objective_extra_optimizers(self.model)
        for extra in self.extra_optimizers.values():
            # outside their inner steps these parameters are constants: the main backward gives them no
            # gradient, the main optimizer and clipping skip them, and DDP leaves them out of its reducer
            for p in extra.parameters():
                p.requires_grad_(False)

    # ---- training --------------------------------------------------------------------------------------
    def train(self, *args, **kwargs):
        self._segment_start = time.perf_counter()
        self._loss_sum = None
        return super().train(*args, **kwargs)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if self._term_step is None:
            self._term_step, self._clock = self.state.global_step, time.perf_counter()
        terms = model(inputs)
        loss = sum(terms.values())
        self._check_finite({**terms, "total": loss}, "loss term")
        chance = _chance_levels(self.model, terms)
        for name, value in terms.items():
            # scaled like the Trainer's own loss, so a logged term is a mean per optimizer step
            self._add_term(name, value.detach() / self.current_gradient_accumulation_steps)
            if name in chance:
                self._add_term(
                    f"{name}@chance", torch.tensor(chance[name] / self.current_gradient_accumulation_steps)
                )
        self._sentences += sum(v["input_ids"].shape[0] for k, v in inputs.items() if k in TEXT_COLUMNS)
        return (loss, terms) if return_outputs else loss

    def training_step(self, model, inputs, num_items_in_batch=None) -> torch.Tensor:
        # the inner loop runs once per optimizer step, on its first micro-batch (global_step is the same
        # for every micro-batch of one step)
        weight = largest_weight(self.model) if self.start is None else None  # before any update
        if self.extra_optimizers and self._inner_done_at != self.state.global_step:
            self._inner_done_at = self.state.global_step
            self._inner_steps(inputs)
        loss = super().training_step(model, inputs, num_items_in_batch)  # detached, scaled like the log
        self._loss_sum = loss if self._loss_sum is None else self._loss_sum + loss
        self._last_loss = loss
        if weight is not None:
            self.start = StartScales(weight, self._mean_last_loss(), self.probes)
        return loss

    def _inner_steps(self, inputs: dict[str, Any]) -> None:
        """Each extra optimizer's `steps` updates on `objective.inner_loss(batch, name, step)`.

        Runs on the unwrapped objective, outside DDP: gradients of the extra parameters are averaged over
        processes here, so every replica takes the same step.
        """
        objective = self.model
        objective.train()
        batch = self._prepare_inputs(inputs)
        if self._term_step is None:
            self._term_step, self._clock = self.state.global_step, time.perf_counter()
        for name, extra in self.extra_optimizers.items():
            params = extra.parameters()
            for p in params:
                p.requires_grad_(True)
            for step in range(extra.steps):
                extra.optimizer.zero_grad(set_to_none=True)
                with self.compute_loss_context_manager(), self.accelerator.autocast():
                    terms = objective.inner_loss(batch, name, step)
                self._check_finite({f"{name}_{term}": v for term, v in terms.items()}, "inner loss term")
                sum(terms.values()).backward()
                self._average_over_processes(params)
                extra.optimizer.step()
                if extra.after_step is not None:
                    extra.after_step()
                chance = _chance_levels(objective, terms)
                for term, value in terms.items():
                    self._add_term(f"{name}_{term}", value.detach() / extra.steps)  # mean over inner steps
                    if term in chance:
                        self._add_term(f"{name}_{term}@chance", torch.tensor(chance[term] / extra.steps))
            extra.optimizer.zero_grad(set_to_none=True)
            for p in params:
                p.requires_grad_(False)
        objective.zero_grad(set_to_none=True)  # an inner loss must not leave gradients for the main step

    def _average_over_processes(self, params: list[torch.nn.Parameter]) -> None:
        if self.args.world_size <= 1:
            return
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            torch.distributed.all_reduce(p.grad)
            p.grad /= self.args.world_size

    # ---- divergence ------------------------------------------------------------------------------------
    def _check_finite(self, terms: dict[str, torch.Tensor], what: str) -> None:
        """Stop at the step being computed when a loss term is NaN or infinite (one device sync)."""
        values = torch.stack([v.detach().float().reshape(()) for v in terms.values()])  # (terms,)
        if bool(torch.isfinite(values).all()):
            return
        name, value = next((n, float(v)) for n, v in zip(terms, values.tolist()) if not math.isfinite(v))
        raise self.diverged(self.state.global_step + 1, f"{what} {name!r} is {value}")

    def _get_grad_norm(self, model, grad_norm=None):
        # the Trainer's gradient norm of every optimizer step (pre-clipping), before the optimizer uses it
        grad_norm = super()._get_grad_norm(model, grad_norm=grad_norm)
        value = float(grad_norm) if grad_norm is not None else 0.0
        if not math.isfinite(value):
            raise self.diverged(self.state.global_step + 1, f"the gradient norm is {value}")
        return grad_norm

    def diverged(self, step: int, what: str) -> TrainingDiverged:
        """The one-line error for a run stopped at `step`, saying what is kept and how to go on."""
        kept = latest_checkpoint(self.run_dir)
        tiny = _tiny_temperature(self.model)
        if tiny is not None:  # the cause is the temperature, which a resume cannot change: not the lr
            name, value = tiny
            flag = "--temperature" if name == "temperature" else f"--objective-options {name}=..."
            again = "start again with --overwrite" if kept is not None else "start again"
            return TrainingDiverged(
                f"training diverged at step {step}: {what} ({name} {value:g}, lr {self.args.learning_rate:g}); "
                f"the {name} is far below any usable value (cosines divided by it reach {1 / value:.1e}): "
                f"{again} with a {flag} of at least {TINY_TEMPERATURE:g} (SimCSE uses 0.05); "
                "a lower --lr does not help"
            )
        if kept is not None and was_checked(kept):
            hint = f"{kept} is kept: run the same command with a lower --lr to resume from it"
        elif kept is not None:
            hint = (
                f"{kept} was written without a check of what its model does and may hold a ruined model: "
                "start again with --overwrite and a lower --lr"
            )
        else:
            hint = "no checkpoint had been written, so nothing is kept: start again with a lower --lr"
        return TrainingDiverged(
            f"training diverged at step {step}: {what} (lr {self.args.learning_rate:g}); {hint}"
        )

    def _check_weights(self, module: torch.nn.Module, step: int) -> None:
        bad = non_finite_tensor(module)
        if bad is not None:
            raise self.diverged(step, f"weight {bad!r} holds NaN or Infinity")

    def _check_sane(self, step: int, with_loss: bool = True) -> None:
        """Finite weights, weights and loss not grown by orders of magnitude since the run's start, and a
        model that still works on the probe sentences (probes.py).

        `with_loss` averages the last loss over processes, a collective: only where every process calls it.
        """
        self._check_weights(self.model, step)
        if self.start is None:  # no step taken yet: nothing has moved
            return
        loss = self._mean_last_loss() if with_loss else None
        problem = self.start.problem(largest_weight(self.model), loss)
        if problem is None and self.start.probes is not None:
            problem = self.start.probes.problem(self.encoder)
        if problem is not None:
            raise self.diverged(step, problem)

    def _check_resume_point(self, checkpoint: str) -> None:
        """A checkpoint whose model the probe rule finds ruined is no place to go on from, whatever the lr."""
        if self.probes is None:
            return
        bad = non_finite_tensor(self.model)
        problem = f"weight {bad!r} holds NaN or Infinity" if bad else self.probes.problem(self.encoder)
        if problem is not None:
            raise TrainingDiverged(
                f"{checkpoint} holds a ruined model ({problem}); resuming from it cannot give a useful "
                "model, at any --lr: start again with --overwrite and a lower --lr"
            )

    def _mean_last_loss(self) -> float | None:
        if self._last_loss is None:
            return None
        return float(self.accelerator.reduce(self._last_loss.float().reshape(1), reduction="mean").item())

    def save_best(self) -> None:
        """Write the encoder to <run>/best (sane weights only; process 0 alone calls it: no loss check)."""
        self._check_sane(self.state.global_step, with_loss=False)
        self.encoder.save(self.run_dir / "best")

    def _save_checkpoint(self, model, trial) -> None:
        # the last checkpoint stays a sane one (every process saves: the loss check may reduce)
        self._check_sane(self.state.global_step)
        super()._save_checkpoint(model, trial)

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        super().save_model(output_dir, _internal_call)
        if self.args.should_save and output_dir is not None and Path(output_dir).is_dir():
            # a checkpoint folder: safetensors creates model.safetensors 0600, open() would give 0666 & ~umask
            apply_default_modes(output_dir)

    def _add_term(self, name: str, value: torch.Tensor) -> None:
        self._term_sums[name] = self._term_sums.get(name, 0.0) + value

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs and self._term_sums:
            steps = max(self.state.global_step - (self._term_step or 0), 1)
            for name, total in self._term_sums.items():
                value = self.accelerator.reduce(torch.as_tensor(total).reshape(1), reduction="mean")
                term, _, chance = name.partition("@")  # "entity@chance": that term's chance value
                logs[f"{chance}_{term}" if chance else f"loss_{term}"] = round(float(value.item()) / steps, 6)
            now = time.perf_counter()
            logs["sentences_per_s"] = round(self._sentences * self.args.world_size / (now - self._clock), 1)
            self._term_sums, self._term_step = {}, self.state.global_step
            self._sentences, self._clock = 0, now
        super().log(logs, start_time)

    # ---- optimizers ------------------------------------------------------------------------------------
    def create_optimizer(self, model=None) -> torch.optim.Optimizer:
        """The Trainer's AdamW, with the objective's own parameter groups (and extra-optimizer parameters
        left out); without such groups exactly the Trainer's optimizer."""
        objective = self.model if model is None else model
        groups = objective_param_groups(self.model, self.args.learning_rate)
        if self.optimizer is not None or not groups:
            return super().create_optimizer(model)
        taken = {id(p) for g in groups for p in g["params"]}
        taken |= {id(p) for e in self.extra_optimizers.values() for p in e.parameters()}
        decay = set(self.get_decay_parameter_names(objective))
        rest = [(n, p) for n, p in objective.named_parameters() if p.requires_grad and id(p) not in taken]
        param_groups = [
            {"params": [p for n, p in rest if n in decay], "weight_decay": self.args.weight_decay},
            {"params": [p for n, p in rest if n not in decay], "weight_decay": 0.0},
            *({"weight_decay": self.args.weight_decay, **g, "params": list(g["params"])} for g in groups),
        ]
        optimizer_cls, kwargs = self.get_optimizer_cls_and_kwargs(self.args, objective)
        self.optimizer = optimizer_cls([g for g in param_groups if g["params"]], **kwargs)
        return self.optimizer

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        if self.planned_steps is not None and num_training_steps != self.planned_steps:
            raise ConfigError(
                f"{self.run_dir}: the run being resumed was planned for {self.planned_steps} optimizer steps "
                f"and its learning-rate schedule ends there, this config plans {num_training_steps} "
                "(max_steps/epochs changed); keep them, train its best/ model into a new output_dir, "
                "or pass --overwrite"
            )
        return super().create_scheduler(num_training_steps, optimizer)

    def _save_optimizer_and_scheduler(self, output_dir: str) -> None:
        """Also the extra optimizers' states and the run totals, before trainer_state.json marks the
        checkpoint complete."""
        super()._save_optimizer_and_scheduler(output_dir)
        totals = self.totals_now()  # every process: the loss is averaged over them
        if not self.args.should_save:
            return
        if self.extra_optimizers:
            states = {name: e.optimizer.state_dict() for name, e in self.extra_optimizers.items()}
            torch.save(states, Path(output_dir) / EXTRA_OPTIMIZERS_FILE)
        atomic_write_json(Path(output_dir) / TOTALS_FILE, totals.to_dict())
        if self.start is not None:  # also marks the checkpoint as checked sane (`diverged`)
            self.start.write(Path(output_dir))

    def _load_optimizer_and_scheduler(self, checkpoint: str | None) -> None:
        planned = list(getattr(self.lr_scheduler, "base_lrs", []))  # this config's peak lr per group
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None:
            self._check_resume_point(checkpoint)  # its weights are loaded by now
            self._keep_planned_lrs(planned)
        if checkpoint is None or not self.extra_optimizers:
            return
        path = Path(checkpoint) / EXTRA_OPTIMIZERS_FILE
        if not path.is_file():
            raise ConfigError(
                f"{checkpoint}: no {EXTRA_OPTIMIZERS_FILE} for the objective's extra optimizers"
            )
        states = load_tensors(path)
        for name, extra in self.extra_optimizers.items():
            if name not in states:
                raise ConfigError(f"{path}: no state for extra optimizer {name!r} (has {sorted(states)})")
            extra.optimizer.load_state_dict(states[name])

    def _keep_planned_lrs(self, planned: list[float]) -> None:
        """A resume with another --lr (after a divergence): the checkpoint's schedule state goes on from
        its step, scaled to this config's peak learning rates (the checkpoint stores the old ones)."""
        scheduler = self.lr_scheduler
        groups = self.optimizer.param_groups
        lambdas = getattr(scheduler, "lr_lambdas", None)
        if not planned or lambdas is None or len(planned) != len(groups) or planned == scheduler.base_lrs:
            return
        scheduler.base_lrs = planned
        for group, base, factor in zip(groups, planned, lambdas, strict=True):
            group["initial_lr"] = base
            group["lr"] = base * factor(scheduler.last_epoch)
        scheduler._last_lr = [group["lr"] for group in groups]

    def totals_now(self) -> RunTotals:
        """Totals of the whole run so far: earlier parts plus the steps since this process started, the
        loss averaged over processes. A collective under DDP: every process calls it."""
        local = self._loss_sum if self._loss_sum is not None else torch.zeros((), device=self.args.device)
        loss = self.accelerator.reduce(local.float().reshape(1), reduction="mean")
        return self.totals.plus(
            steps=self.state.global_step,
            loss_sum=float(loss.item()),
            train_s=time.perf_counter() - self._segment_start,
            lr=self.args.learning_rate,
        )

    # ---- evaluation ------------------------------------------------------------------------------------
    def evaluate(
        self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval"
    ) -> dict[str, float]:
        """Score the encoder on the Task (rank 0, broadcast), record the row, save a new best atomically."""
        if self.task is None:
            return {}
        self._check_sane(self.state.global_step)  # a NaN or blown-up model is not scored or kept
        start = time.perf_counter()
        scores = None
        if self.is_world_process_zero():
            with rng_preserved():
                scores = {k: float(v) for k, v in self.task.evaluate(self.encoder).items()}
        if self.args.world_size > 1:
            box = [scores]
            torch.distributed.broadcast_object_list(box, src=0)
            scores = box[0]
        seconds = time.perf_counter() - start
        self._clock += seconds  # throughput counts training time only
        step = self.state.global_step
        bad = next((k for k, v in scores.items() if not math.isfinite(v)), None)
        if bad is not None:
            raise self.diverged(step, f"evaluation on {self.task.name} gave {bad} = {scores[bad]}")
        main = scores["main_score"]
        is_best = self.state.best_metric is None or main > self.state.best_metric
        if is_best:
            self.state.best_metric, self.state.best_global_step = main, step
        if self.is_world_process_zero():
            if is_best:
                self.save_best()
                atomic_write_json(self.run_dir / "best.json", {"step": step, "scores": scores})
            row = {
                "step": step,
                "epoch": self.state.epoch,
                **scores,
                "best": is_best,
                "eval_s": round(seconds, 3),
            }
            self.metrics_rows = [r for r in self.metrics_rows if r["step"] != step] + [row]
            write_metrics(self.run_dir, self.metrics_rows)
        metrics = {f"{metric_key_prefix}_{k}": v for k, v in scores.items()}
        metrics[f"{metric_key_prefix}_runtime"] = round(seconds, 3)
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics


def non_finite_tensor(module: torch.nn.Module) -> str | None:
    """Name of the first floating-point parameter or buffer holding NaN or Infinity (one device sync)."""
    named = [
        (name, t)
        for name, t in [*module.named_parameters(), *module.named_buffers()]
        if t.is_floating_point()
    ]
    if not named:
        return None
    finite = torch.stack([torch.isfinite(t.detach()).all() for _, t in named])  # (tensors,)
    if bool(finite.all()):
        return None
    return named[int((~finite).nonzero()[0, 0])][0]


def read_totals(checkpoint: Path | None) -> RunTotals | None:
    """The run totals stored in a checkpoint (None for a fresh run or a checkpoint written before them)."""
    path = None if checkpoint is None else Path(checkpoint) / TOTALS_FILE
    if path is None or not path.is_file():
        return None
    return RunTotals.from_dict(json.loads(path.read_text(encoding="utf-8")))


class ProgressPostfix(TrainerCallback):
    """Shows the latest loss and throughput on the Trainer's own progress bar."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    def on_log(self, args, state, control, logs=None, **kwargs):
        from transformers.trainer_callback import ProgressCallback

        bar = next(
            (
                getattr(cb, "training_bar", None)
                for cb in self.trainer.callback_handler.callbacks
                if isinstance(cb, ProgressCallback)
            ),
            None,
        )
        if bar is not None and logs and "loss" in logs:
            bar.set_postfix(loss=f"{logs['loss']:.4f}", sent_s=logs.get("sentences_per_s"))


def _tiny_temperature(objective) -> tuple[str, float] | None:
    """(name, value) of the objective's smallest softmax temperature when it is below TINY_TEMPERATURE."""
    config = getattr(objective, "config", None)
    if not dataclasses.is_dataclass(config):
        return None
    found = [
        (f.name, float(getattr(config, f.name)))
        for f in dataclasses.fields(config)
        if "temperature" in f.name and isinstance(getattr(config, f.name), (int, float))
    ]
    found = [(name, value) for name, value in found if value < TINY_TEMPERATURE]
    return min(found, key=lambda item: item[1]) if found else None


def _chance_levels(objective, terms: dict) -> dict[str, float]:
    """The objective's `chance` for this batch's terms (see sentkit.objectives.hooks), finite values only."""
    chance = getattr(objective, "chance", None)
    if not isinstance(chance, dict):
        return {}
    return {k: float(v) for k, v in chance.items() if k in terms and math.isfinite(float(v))}
