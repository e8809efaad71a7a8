"""The one training path: a Hugging Face `Trainer` whose changes are the loss, model selection and the
objective hooks below. Resume, DDP (torchrun / accelerate launch), bf16, gradient accumulation and
checkpoint rotation come from `transformers.Trainer`.

Modules, one job each: `config` (TrainConfig / StagedConfig, checked where parsed), `data` (rows +
collator, the data record), `trainer` (SentenceTrainer), `run_dir` (start / resume / no-op / refuse),
`run_lock` (one training per folder), `results` (results.json, totals over resumes), `hooks` (what an
objective may declare), `run` (`train`).

Run directory (`output_dir`): config.yaml, data.json (the training data's path, sha256 and rows
sha256), metrics.jsonl (one row per evaluation), checkpoint-N/ (the objective's full state: encoder and
auxiliary modules, optimizers, schedule, RNG, run totals), best/ (a plain sentence-transformers model:
the encoder only), best.json, results.json (written last), .sentkit.lock while a training runs.
- A folder that holds a run is refused unless `overwrite`; the same config with a checkpoint resumes
  (bit-exact); a finished run (results.json) with the same config is a no-op; a resume that would change
  the planned number of optimizer steps (max_steps / epochs) or the training rows is refused; `lr` and
  `max_grad_norm` may change on resume (the schedule goes on from the checkpoint's step, scaled).
- A NaN or infinite loss term, gradient norm, weight or evaluation score stops the run at that step
  (TrainingDiverged); checkpoints, best/ and metrics.jsonl only ever hold finite numbers.
- results.json's `train` adds up every part of a resumed run (steps, mean loss, seconds, parts).
- A fresh run that fails before its first checkpoint removes what it wrote.
- Objectives that contrast rows (`min_batch_rows`, default 2) refuse smaller data or batches, and a last
  batch below it is dropped.

Objective hooks (all optional; an objective is an nn.Module whose `forward(batch)` returns named losses):
- `required_columns`, `config_class` (paper defaults), `min_batch_rows: int = 2`.
- `int_columns: tuple[str, ...]`: extra integer id columns the collator turns into LongTensors, besides
  `sentkit.datasets.columns.INT_COLUMNS` (label, entity_ids, negative_entity_ids, lang_id).
- `extra_text_columns: tuple[str, ...]`: text columns tokenized besides anchor/positive/negative.
- `param_groups(self, base_lr: float) -> list[dict]`: optimizer groups ({"params", "lr", optional
  "weight_decay"}), each decayed by the same linear schedule; parameters not named use the run's lr.
- Auxiliary modules: any submodule besides `encoder` (entity table, classifier, critic) is trained,
  saved in every checkpoint and restored on resume, and never written to best/. Keep their state in
  parameters or buffers (checkpoints hold `state_dict()`), and do not share a tensor with the encoder
  (safetensors refuses shared tensors; use the encoder's weight functionally instead).
- `extra_optimizers(self) -> dict[str, ExtraOptimizer]` with `inner_loss(self, batch, name, step) ->
  dict[str, Tensor]`: before each main optimizer step (on its first micro-batch) the trainer runs, for
  each extra optimizer, `steps` updates: zero_grad, backward of the summed inner loss, gradients averaged
  over processes, `optimizer.step()`, `after_step()` (e.g. weight clipping). Those parameters are frozen
  outside their inner steps (no gradient from the main loss, outside DDP's reducer and the main
  optimizer), their optimizer states are checkpointed and restored, and each inner term is logged as
  `loss_<name>_<term>`, a mean over the inner steps and the optimizer steps since the last log.
  Compute the encoder's vectors under `torch.no_grad()` in `inner_loss` when only the extra parameters
  should learn; any gradient an inner loss leaves elsewhere is cleared before the main step.

Stages (`StagedConfig`, a YAML with `stages:`): run in order into <output_dir>/<name>; stage k+1 starts
from stage k's best/; a finished stage is skipped and an interrupted one resumes; <output_dir>/results.json
lists every stage's results.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> module; imported on first use, so `sentkit train --help` and option checks stay fast
_EXPORTS = {
    "SentenceCollator": "data",
    "SentenceTrainer": "trainer",
    "StagedConfig": "config",
    "TrainConfig": "config",
    "latest_checkpoint": "run_dir",
    "load_config": "config",
    "train": "run",
    "train_stages": "run",
    "trainable_encoder": "run",
    "training_rows": "data",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sentkit.training' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sentkit.training.{_EXPORTS[name]}"), name)


__all__ = sorted(_EXPORTS)
