"""The one training path: a Hugging Face `Trainer` whose only real change is `compute_loss`.

Every objective (SimCSE, entity CL, specialization, ...) is an nn.Module returning named loss terms; resume,
DDP (torchrun / accelerate launch), bf16, gradient accumulation and checkpoint rotation come from
`transformers.Trainer`. Model selection evaluates a sentkit Task every `eval_steps` and keeps the best
encoder as a sentence-transformers directory under `<output_dir>/best`.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from transformers import Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from sentkit.atomic import atomic_write_json, atomic_write_text
from sentkit.datasets.columns import TEXT_COLUMNS, text_columns
from sentkit.errors import DataFormatError, MissingDataError
from sentkit.provenance import machine_info, package_versions

# Fields that may change between an interrupted run and the command that resumes it.
RESUMABLE_CHANGES = frozenset(
    {"max_steps", "epochs", "eval_steps", "save_steps", "save_total_limit", "logging_steps", "test_tasks"}
    | {"num_workers", "progress", "overwrite", "data_root"}
)


def _opt(default: Any, help: str) -> Any:  # noqa: A002 - `help` is the argparse word
    return field(default=default, metadata={"help": help})


@dataclass
class TrainConfig:
    """Every `sentkit train` flag; defaults are unsupervised SimCSE's (Gao et al., 2021, sec. 3 + appendix A)."""

    model: str = _opt(
        "minilm-en", "base encoder: short name (minilm-en, e5-small-m), local directory or hub name"
    )
    objective: str = _opt("simcse-unsup", "registered objective (simcse-unsup, simcse-sup, ...)")
    data: str = _opt("", ".txt (one sentence a line) or .csv/.tsv/.jsonl with anchor[,positive[,negative]]")
    output_dir: str = _opt(
        "runs/simcse", "run directory: config, metrics.jsonl, checkpoints, best/, results.json"
    )
    pooling: str = _opt(
        "auto",
        "auto (cls -> cls_mlp, SimCSE's MLP over [CLS] in training only; else the model's) | cls | cls_mlp | mean",
    )
    max_length: int = _opt(
        32, "max tokens per training sentence (SimCSE: 32); evaluation keeps the model's own"
    )
    batch_size: int = _opt(
        64, "sentences per process per step (SimCSE unsup: 64); DDP multiplies the negatives"
    )
    lr: float = _opt(3e-5, "peak learning rate, linear decay to 0 (SimCSE BERT-base unsup: 3e-5)")
    epochs: float = _opt(1.0, "passes over the data (SimCSE: 1)")
    max_steps: int = _opt(-1, "optimizer steps; > 0 overrides epochs")
    warmup_ratio: float = _opt(0.0, "fraction of steps with linear warm-up (SimCSE: none)")
    weight_decay: float = _opt(0.0, "AdamW weight decay (SimCSE: 0)")
    max_grad_norm: float = _opt(1.0, "gradient clipping norm (Trainer default, as SimCSE)")
    temperature: float | None = _opt(
        None, "softmax temperature; empty = the objective's paper value (SimCSE 0.05)"
    )
    hard_negative_weight: float | None = _opt(
        None, "weight alpha of each anchor's own hard negative (JCSE eq. 5); empty = objective default (1)"
    )
    objective_options: str = _opt("", "other objective fields as key=value,key=value")
    eval_task: str = _opt("stsb-dev", "task evaluated every eval_steps for model selection (empty = none)")
    eval_steps: int = _opt(250, "evaluate every N optimizer steps (SimCSE: 250)")
    eval_on_start: bool = _opt(True, "also evaluate the untrained model (step 0) so the gain is on record")
    eval_batch_size: int = _opt(64, "batch size for encoding during evaluation")
    test_tasks: str = _opt("", "comma list of tasks/suites evaluated once on the best model at the end")
    save_steps: int = _opt(250, "write a resumable checkpoint every N steps")
    save_total_limit: int = _opt(2, "keep at most this many checkpoints")
    logging_steps: int = _opt(50, "log the loss terms every N steps")
    seed: int = _opt(42, "seed for initialisation, data order and dropout (SimCSE: 42)")
    bf16: bool = _opt(False, "bf16 mixed precision (GPUs with bf16 support)")
    gradient_accumulation_steps: int = _opt(
        1, "micro-batches per optimizer step (negatives stay per micro-batch)"
    )
    max_train_samples: int = _opt(0, "use only the first N training rows (0 = all)")
    num_workers: int = _opt(0, "data loader worker processes")
    data_root: str = _opt("", "benchmark data folder for evaluation (default: $SENTKIT_DATA)")
    progress: bool = _opt(True, "show the progress bar")
    overwrite: bool = _opt(False, "delete an existing run in output_dir instead of resuming it")

    @classmethod
    def from_yaml(cls, path: str | Path) -> TrainConfig:
        """Read a YAML (or JSON) mapping of field -> value; unknown fields raise with a close-name hint."""
        import yaml

        path = Path(path)
        if not path.is_file():
            raise MissingDataError(path, "expected a YAML file of TrainConfig fields")
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise DataFormatError(
                path, 1, f"expected a mapping of TrainConfig fields, got {type(data).__name__}"
            )
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: dict, source: str = "config") -> TrainConfig:
        known = [f.name for f in dataclasses.fields(cls)]
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"{source}: unknown training option {key!r}{hint}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def objective_overrides(self) -> dict[str, Any]:
        """Objective hyper-parameters set here (None = keep the paper default) plus `objective_options`."""
        from sentkit.objectives import OBJECTIVES

        fields = {f.name: f for f in dataclasses.fields(OBJECTIVES.get(self.objective).config_class)}
        out: dict[str, Any] = {}
        for name in ("temperature", "hard_negative_weight"):
            value = getattr(self, name)
            if value is not None:
                if name not in fields:
                    raise ValueError(f"objective {self.objective!r} has no {name!r} option")
                out[name] = value
        for item in filter(None, (s.strip() for s in self.objective_options.split(","))):
            key, sep, raw = item.partition("=")
            if not sep or key.strip() not in fields:
                raise ValueError(
                    f"objective_options: expected key=value with key in {sorted(fields)}, got {item!r}"
                )
            default = fields[key.strip()].default
            out[key.strip()] = _cast(raw.strip(), type(default))
        return out


def _cast(raw: str, kind: type) -> Any:
    if kind is bool:
        return raw.lower() in ("1", "true", "yes", "on")
    return kind(raw) if kind in (int, float, str) else raw


# ---- data --------------------------------------------------------------------------------------------
def load_training_data(spec, data_root: str | Path | None = None):
    """A `datasets.Dataset` with contract columns from a Dataset, a callable returning one, or a data spec.

    Specs (files, folders, `xnli[:langs]`, corpus names) are resolved by `sentkit.training_data.triplets`; the rows
    keep their file order here because the Trainer shuffles them with the run's seed.
    """
    import datasets
    from sentkit.training_data.triplets import load_training_data as resolve_spec

    if isinstance(spec, datasets.Dataset):
        return spec
    if callable(spec):
        return load_training_data(spec())
    if not str(spec).strip():
        raise ValueError("no training data: pass --data (a file, a folder, xnli[:langs] or a corpus name)")
    return resolve_spec(str(spec), shuffle=False, data_root=data_root or None)


class SentenceCollator:
    """Tokenizes the text columns of a batch on the fly, all padded to one length so they stack.

    Returns {column: {input_ids, attention_mask, ...}} plus any other column as a list (or a tensor
    when numeric), the batch an objective's forward receives.
    """

    def __init__(self, encoder, max_length: int) -> None:
        self.encoder = encoder
        self.max_length = max_length

    def __call__(self, rows: Sequence[dict]) -> dict[str, Any]:
        columns = text_columns(rows[0].keys())
        prefix = getattr(self.encoder, "prefix", "")
        texts = [prefix + row[c] for c in columns for row in rows]
        tokens = self.encoder.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        n = len(rows)
        batch: dict[str, Any] = {
            c: {k: v[i * n : (i + 1) * n] for k, v in tokens.items()}  # (batch, seq) each
            for i, c in enumerate(columns)
        }
        for key in rows[0].keys():
            if key in TEXT_COLUMNS:
                continue
            values = [row[key] for row in rows]
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            batch[key] = torch.tensor(values) if numeric else values
        return batch


# ---- trainer -----------------------------------------------------------------------------------------
class SentenceTrainer(Trainer):
    """`Trainer` + named loss terms + sentkit-Task evaluation that keeps the best encoder on disk."""

    def __init__(self, *args, encoder, task=None, run_dir: str | Path, metrics_rows=(), **kwargs) -> None:
        # the Task stands in for the eval set: Trainer requires one when evaluation is on
        super().__init__(*args, eval_dataset=task, **kwargs)
        self.encoder = encoder
        self.task = task
        self.run_dir = Path(run_dir)
        self.metrics_rows: list[dict] = list(metrics_rows)
        self._term_sums: dict[str, torch.Tensor] = {}
        self._term_step = 0
        self._sentences = 0
        self._clock = time.perf_counter()

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        terms = model(inputs)
        loss = sum(terms.values())
        for name, value in terms.items():
            # scaled like the Trainer's own loss, so a logged term is a mean per optimizer step
            part = value.detach() / self.current_gradient_accumulation_steps
            self._term_sums[name] = self._term_sums.get(name, 0.0) + part
        self._sentences += sum(v["input_ids"].shape[0] for k, v in inputs.items() if k in TEXT_COLUMNS)
        return (loss, terms) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs and self._term_sums:
            steps = max(self.state.global_step - self._term_step, 1)
            for name, total in self._term_sums.items():
                value = self.accelerator.reduce(total.reshape(1), reduction="mean")
                logs[f"loss_{name}"] = round(float(value.item()) / steps, 6)
            now = time.perf_counter()
            logs["sentences_per_s"] = round(self._sentences * self.args.world_size / (now - self._clock), 1)
            self._term_sums, self._term_step = {}, self.state.global_step
            self._sentences, self._clock = 0, now
        super().log(logs, start_time)

    def evaluate(
        self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval"
    ) -> dict[str, float]:
        """Score the encoder on the Task (rank 0, broadcast), record the row, save a new best atomically."""
        if self.task is None:
            return {}
        start = time.perf_counter()
        scores = None
        if self.is_world_process_zero():
            with _rng_preserved():
                scores = {k: float(v) for k, v in self.task.evaluate(self.encoder).items()}
        if self.args.world_size > 1:
            box = [scores]
            torch.distributed.broadcast_object_list(box, src=0)
            scores = box[0]
        seconds = time.perf_counter() - start
        self._clock += seconds  # throughput counts training time only
        step = self.state.global_step
        main = scores["main_score"]
        is_best = self.state.best_metric is None or main > self.state.best_metric
        if is_best:
            self.state.best_metric, self.state.best_global_step = main, step
        if self.is_world_process_zero():
            if is_best:
                self.encoder.save(self.run_dir / "best")
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


class _ProgressPostfix(TrainerCallback):
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


class _rng_preserved:
    """Evaluation must not shift the training RNG streams (dropout masks, data order) that resume replays."""

    def __enter__(self):
        self.state = (random.getstate(), np.random.get_state(), torch.random.get_rng_state())
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None

    def __exit__(self, *exc):
        random.setstate(self.state[0])
        np.random.set_state(self.state[1])
        torch.random.set_rng_state(self.state[2])
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
        return False


# ---- run directory -----------------------------------------------------------------------------------
def write_metrics(run_dir: Path, rows: list[dict]) -> None:
    """metrics.jsonl: one JSON line per evaluation, rewritten whole and atomically."""
    atomic_write_text(run_dir / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def read_metrics(run_dir: Path, up_to_step: int | None = None) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if up_to_step is None or r["step"] <= up_to_step]


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The newest complete `checkpoint-N` (its trainer_state.json, written last, parses and says step N).

    A checkpoint cut short by a kill has no valid state file and is skipped, so resuming never reads
    half a checkpoint.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return None
    found = []
    for folder in run_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*"):
        step = folder.name.rsplit("-", 1)[-1]
        if folder.is_dir() and step.isdigit():
            found.append((int(step), folder))
    for step, folder in sorted(found, reverse=True):
        try:
            state = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if state.get("global_step") == step:
            return folder
    return None


def _incomplete_checkpoints(run_dir: Path, keep: Path | None) -> list[Path]:
    newest = int(keep.name.rsplit("-", 1)[-1]) if keep else -1
    out = []
    for folder in run_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*"):
        step = folder.name.rsplit("-", 1)[-1]
        if folder.is_dir() and step.isdigit() and int(step) > newest:
            out.append(folder)
    return out


def _check_resumable(run_dir: Path, config: TrainConfig) -> None:
    path = run_dir / "config.yaml"
    if not path.is_file():
        return
    old = TrainConfig.from_yaml(path).to_dict()
    changed = {k for k, v in config.to_dict().items() if old.get(k) != v} - RESUMABLE_CHANGES
    if changed:
        diffs = ", ".join(f"{k}: {old.get(k)!r} -> {getattr(config, k)!r}" for k in sorted(changed))
        raise ValueError(
            f"{run_dir} holds a run with a different config ({diffs}); pass overwrite=True (--overwrite) "
            "to start over or choose another output_dir"
        )


# ---- encoder ------------------------------------------------------------------------------------------
def trainable_encoder(model: str, pooling: str = "auto"):
    """Load the base encoder and set its training pooling; `auto` gives a [CLS] model SimCSE's MLP head."""
    from sentkit.encoders import load_encoder
    from sentkit.encoders.transformer import TransformerEncoder

    encoder = load_encoder(model)
    if not isinstance(encoder, TransformerEncoder):
        raise TypeError(
            f"model {model!r} ({type(encoder).__name__}) is not trainable: need a TransformerEncoder"
        )
    if pooling == "auto":
        pooling = "cls_mlp" if encoder.pooling == "cls" else encoder.pooling
    if pooling == encoder.pooling:
        return encoder
    return TransformerEncoder(
        encoder.model,
        encoder.tokenizer,
        pooling=pooling,
        max_length=encoder.max_length,
        prefix=encoder.prefix,
        normalize=encoder.normalize,
        name=encoder.name,
    )


# ---- entry point --------------------------------------------------------------------------------------
def train(
    config: TrainConfig,
    *,
    data=None,
    eval_task=None,
    callbacks: Sequence[TrainerCallback] = (),
) -> Path:
    """Train `config.model` with `config.objective`; resume if `output_dir` holds a checkpoint; return the run dir.

    `data` (a Dataset or callable) replaces `config.data`; `eval_task` (a Task) replaces `config.eval_task`.
    """
    from sentkit.objectives import build_objective
    from sentkit.tasks import get_task

    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    run_dir = Path(config.output_dir)
    # torchrun and accelerate launch set RANK; the run directory is prepared before any process group exists
    main_process = int(os.environ.get("RANK", "0")) == 0
    if config.overwrite and run_dir.exists() and main_process:
        if any(run_dir.iterdir()) and not (run_dir / "config.yaml").is_file():
            raise ValueError(
                f"{run_dir} is not a sentkit run directory (no config.yaml); refusing to delete it"
            )
        shutil.rmtree(run_dir)
    checkpoint = None if config.overwrite else latest_checkpoint(run_dir)
    if checkpoint is not None:
        _check_resumable(run_dir, config)
    has_eval = bool(eval_task is not None or config.eval_task)
    args = _training_arguments(
        config, run_dir, has_eval, eval_on_start=config.eval_on_start and checkpoint is None
    )
    _barrier(args)
    if main_process:
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in _incomplete_checkpoints(run_dir, checkpoint):
            shutil.rmtree(stale, ignore_errors=True)
        atomic_write_text(run_dir / "config.yaml", _yaml(config.to_dict()))
    resumed_step = int(checkpoint.name.rsplit("-", 1)[-1]) if checkpoint else 0
    metrics_rows = read_metrics(run_dir, resumed_step) if checkpoint else []

    transformers.set_seed(config.seed)  # the MLP head and any objective parameters start the same every run
    encoder = trainable_encoder(config.model, config.pooling)
    overrides = config.objective_overrides()
    objective = build_objective(config.objective, encoder, **overrides)
    dataset = load_training_data(data if data is not None else config.data, config.data_root)
    missing = [c for c in objective.required_columns if c not in dataset.column_names]
    if missing:
        raise ValueError(
            f"objective {config.objective!r} needs columns {list(objective.required_columns)}; "
            f"the training data has {dataset.column_names}"
        )
    if config.max_train_samples > 0:
        dataset = dataset.select(range(min(config.max_train_samples, len(dataset))))
    task = eval_task
    if task is None and config.eval_task:
        task = get_task(
            config.eval_task, data_root=config.data_root or None, batch_size=config.eval_batch_size
        )

    trainer = SentenceTrainer(
        model=objective,
        args=args,
        train_dataset=dataset,
        data_collator=SentenceCollator(encoder, config.max_length),
        callbacks=list(callbacks),
        encoder=encoder,
        task=task,
        run_dir=run_dir,
        metrics_rows=metrics_rows,
    )
    trainer.add_callback(_ProgressPostfix(trainer))
    output = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    if task is not None and (
        not trainer.metrics_rows or trainer.metrics_rows[-1]["step"] != trainer.state.global_step
    ):
        trainer.evaluate()  # the last step is always scored, so the best model is chosen over the whole run
    if task is None and main_process:
        encoder.save(run_dir / "best")
    _barrier(args)
    if main_process:
        results = _results(config, trainer, output, overrides, started, t0, resumed_step)
        atomic_write_json(run_dir / "results.json", results)
    return run_dir


def _training_arguments(
    config: TrainConfig, run_dir: Path, has_eval: bool, eval_on_start: bool
) -> TrainingArguments:
    return TrainingArguments(
        output_dir=str(run_dir),
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.lr,
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        lr_scheduler_type="linear",
        # transformers 5 dropped warmup_ratio: a float in [0, 1) given as warmup_steps is the ratio
        warmup_steps=float(config.warmup_ratio),
        weight_decay=config.weight_decay,
        max_grad_norm=config.max_grad_norm,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        bf16=config.bf16,
        eval_strategy="steps" if has_eval else "no",
        eval_steps=config.eval_steps,
        eval_on_start=has_eval and eval_on_start,  # fresh runs only: a resume must not score its start twice
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=config.save_total_limit,
        logging_steps=config.logging_steps,
        seed=config.seed,
        remove_unused_columns=False,  # the collator needs the raw text columns
        dataloader_num_workers=config.num_workers,
        dataloader_pin_memory=torch.cuda.is_available(),
        ddp_find_unused_parameters=False,  # the contract test checks every parameter gets a gradient
        report_to="none",
        # accelerate only forms a multi-CPU (gloo) group when told to use the CPU; on GPUs this stays False
        use_cpu=not torch.cuda.is_available() and int(os.environ.get("WORLD_SIZE", "1")) > 1,
        disable_tqdm=not config.progress,
    )


def _barrier(args: TrainingArguments) -> None:
    if args.world_size > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()


def _yaml(data: dict) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _results(config, trainer, output, overrides, started, t0, resumed_step) -> dict:
    from sentkit.objectives import objective_config

    best = (
        json.loads((trainer.run_dir / "best.json").read_text())
        if (trainer.run_dir / "best.json").is_file()
        else None
    )
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
        "train": {k: v for k, v in output.metrics.items()},
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


__all__ = [
    "SentenceCollator",
    "SentenceTrainer",
    "TrainConfig",
    "latest_checkpoint",
    "load_training_data",
    "train",
    "trainable_encoder",
]
