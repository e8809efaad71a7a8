"""`train`: check the config and the run directory, load data and model, train, write results.json;
`train_stages`: several such runs in order, each from the previous stage's best model."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import torch
import transformers
from transformers import TrainerCallback, TrainingArguments

from sentkit.atomic import atomic_write_json, atomic_write_text
from sentkit.encoders.torch_files import check_checkpoint_files
from sentkit.errors import ConfigError, SentkitError
from sentkit.training.config import RESUMABLE_CHANGES, StagedConfig, TrainConfig
from sentkit.training.data import (
    DATA_RECORD_FILE,
    SentenceCollator,
    check_same_data,
    checked_training_rows,
    data_record,
    extra_text_columns,
    int_columns,
    training_rows,
)
from sentkit.training.probes import ProbeRecord, probe_sentences
from sentkit.training.results import checked_test_tasks, run_paths, run_results
from sentkit.training.run_dir import (
    checkpoint_state,
    clear_run_dir,
    holds_run,
    incomplete_checkpoints,
    plan_run,
    read_metrics,
    remove_failed_run,
)
from sentkit.training.run_lock import RunLock, run_entries
from sentkit.training.sane_state import read_start_scales, was_checked
from sentkit.training.trainer import ProgressPostfix, SentenceTrainer, read_totals


def trainable_encoder(model: str, pooling: str = "auto"):
    """Load the base encoder and set its training pooling; `auto` gives a [CLS] model SimCSE's MLP head."""
    from sentkit.encoders import load_encoder
    from sentkit.encoders.transformer import TransformerEncoder

    try:
        encoder = load_encoder(model)
    except SentkitError:
        raise
    except (OSError, ValueError) as err:  # what transformers / huggingface_hub raise for a missing model
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ConfigError(
            f"model: cannot load {model!r}: not a packaged short name or a loadable local directory ({reason})"
        ) from None
    if not isinstance(encoder, TransformerEncoder):
        raise ConfigError(
            f"model: {model!r} ({type(encoder).__name__}) is not trainable: need a TransformerEncoder"
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
        dense=list(encoder.dense),  # the model's own Dense layers train with it and are saved back
        include_prompt=encoder.include_prompt,
        lowercase=encoder.lowercase,
    )


def checked_objective(config: TrainConfig) -> tuple[type, dict]:
    """The objective class and its overrides, checked before anything is loaded or written."""
    from sentkit.objectives import OBJECTIVES, objective_config

    cls = OBJECTIVES.get(config.objective)  # UnknownName with close matches
    overrides = config.objective_overrides()
    try:
        objective_config(config.objective, **overrides)  # types and ranges: `sentkit.objectives.options`
    except (TypeError, ValueError) as err:
        raise ConfigError(f"objective {config.objective!r}: {err}") from None
    return cls, overrides


def checked_eval_task(config: TrainConfig):
    """The model-selection Task (None without one), built before any model loads: an unknown name or a
    missing or malformed user file is one line naming `eval_task`."""
    from sentkit.tasks import get_task

    if not config.eval_task:
        return None
    try:
        return get_task(
            config.eval_task, data_root=config.data_root or None, batch_size=config.eval_batch_size
        )
    except SentkitError as err:
        raise ConfigError(f"eval_task: {' '.join(str(err).split())}") from None


def train(
    config: TrainConfig | StagedConfig,
    *,
    data=None,
    eval_task=None,
    callbacks: Sequence[TrainerCallback] = (),
    config_file: str | Path | None = None,
) -> Path:
    """Train `config.model` with `config.objective` into `config.output_dir` and return that folder.

    Starts, resumes, does nothing (finished run) or refuses as `sentkit.training.run_dir` says; a second
    training into the same folder meanwhile is refused (`sentkit.training.run_lock`). `data` (a Dataset or
    callable) replaces `config.data`; `eval_task` (a Task) replaces `config.eval_task`; `config_file` (the
    YAML it came from) is recorded in results.json. A diverging run raises TrainingDiverged.
    """
    if isinstance(config, StagedConfig):
        if data is not None or eval_task is not None:
            raise ConfigError("stages: set data and eval_task per stage in the config, not as arguments")
        return train_stages(config, callbacks=callbacks, config_file=config_file)
    # torchrun and accelerate launch set RANK and WORLD_SIZE before any process group exists
    main_process = int(os.environ.get("RANK", "0")) == 0
    # every name, option and user file is checked before the folder is locked or any model loads
    checked = checked_objective(config)
    checked_test_tasks(config)
    task = eval_task if eval_task is not None else checked_eval_task(config)
    with RunLock(config.output_dir) if main_process else contextlib.nullcontext():
        return _train_locked(config, checked, task, data, callbacks, config_file, main_process)


def _train_locked(config, checked, task, data, callbacks, config_file, main_process: bool) -> Path:
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    run_dir = Path(config.output_dir)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    objective_cls, overrides = checked
    start = plan_run(run_dir, config, RESUMABLE_CHANGES)  # read only: every process decides the same
    if start.action == "finished":
        if main_process:
            print(f"{run_dir}: finished run (results.json); nothing to do (--overwrite to train it again)")
        return run_dir
    checkpoint = start.checkpoint
    if checkpoint is not None:
        check_checkpoint_files(checkpoint)  # tensors only, refused in one line before any model loads
    spec = data if data is not None else config.data
    dataset = training_rows(spec, config.data_root)
    dataset, drop_last = checked_training_rows(
        dataset, objective_cls, config.objective, config.batch_size, world_size, config.max_train_samples
    )
    data_info = data_record(spec, dataset)
    if start.action == "resume":
        check_same_data(run_dir, data_info)

    args = _training_arguments(config, run_dir, task is not None, checkpoint is None, drop_last)
    _barrier(args)  # every process has read the folder before process 0 changes it
    if main_process and start.delete:
        clear_run_dir(run_dir)
    resumed_step = int(checkpoint.name.rsplit("-", 1)[-1]) if checkpoint else 0
    metrics_rows = read_metrics(run_dir, resumed_step) if checkpoint else []
    try:
        transformers.set_seed(config.seed)  # the MLP head and objective parameters start the same every run
        encoder = trainable_encoder(config.model, config.pooling)
        from sentkit.objectives import build_objective

        objective = build_objective(config.objective, encoder, **overrides)
        start_scales = read_start_scales(checkpoint)
        # the start model's behaviour, measured before any checkpoint loads into it (a checkpoint of an
        # older sentkit carries none)
        probes = (
            start_scales.probes
            if was_checked(checkpoint)
            else ProbeRecord.measure(encoder, probe_sentences(dataset))
        )
        trainer = SentenceTrainer(
            model=objective,
            args=args,
            train_dataset=dataset,
            data_collator=SentenceCollator(
                encoder, config.max_length, int_columns(objective), extra_text_columns(objective)
            ),
            callbacks=list(callbacks),
            encoder=encoder,
            task=task,
            run_dir=run_dir,
            metrics_rows=metrics_rows,
            planned_steps=(checkpoint_state(checkpoint) or {}).get("max_steps") if checkpoint else None,
            totals=read_totals(checkpoint),
            start=start_scales,
            probes=probes,
        )
        trainer.add_callback(ProgressPostfix(trainer))
        trainer.add_callback(_StartRunDir(run_dir, config, checkpoint, main_process, data_info))
        output = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        if task is not None and (
            not trainer.metrics_rows or trainer.metrics_rows[-1]["step"] != trainer.state.global_step
        ):
            trainer.evaluate()  # the last step is always scored, so the best model is chosen over the whole run
        if task is None and main_process:
            trainer.save_best()
        totals = trainer.totals_now()  # every process: the loss is averaged over them
        _barrier(args)
        if main_process:
            results = run_results(
                config, trainer, output, overrides, started, t0, resumed_step, totals, data_info, config_file
            )
            atomic_write_json(run_dir / "results.json", results)
    except BaseException:
        if main_process:
            remove_failed_run(run_dir, start)
        raise
    return run_dir


class _StartRunDir(TrainerCallback):
    """Once the optimizer, schedule and checkpoint have loaded: clear cut-short checkpoints and write
    config.yaml, so a run refused or failing while loading leaves the folder as it was."""

    def __init__(
        self, run_dir: Path, config: TrainConfig, checkpoint: Path | None, main_process: bool, data: dict
    ) -> None:
        self.run_dir, self.config, self.checkpoint, self.main_process = (
            run_dir,
            config,
            checkpoint,
            main_process,
        )
        self.data = data

    def on_train_begin(self, args, state, control, **kwargs):
        if not self.main_process:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for stale in incomplete_checkpoints(self.run_dir, self.checkpoint):
            shutil.rmtree(stale, ignore_errors=True)
        atomic_write_text(self.run_dir / "config.yaml", _yaml(self.config.to_dict()))
        atomic_write_json(self.run_dir / DATA_RECORD_FILE, self.data)  # what a resume must train on


def train_stages(
    plan: StagedConfig,
    *,
    callbacks: Sequence[TrainerCallback] = (),
    config_file: str | Path | None = None,
) -> Path:
    """Run each stage into `<output_dir>/<name>` (a finished stage is skipped, an interrupted one resumes);
    `<output_dir>/results.json` lists every stage's results once the last one has finished."""
    top = Path(plan.output_dir)
    if top.exists() and not top.is_dir():
        raise ConfigError(f"output_dir: {top} is a file, expected a folder")
    main_process = int(os.environ.get("RANK", "0")) == 0
    with RunLock(top) if main_process else contextlib.nullcontext():
        return _train_stages_locked(plan, top, callbacks, config_file)


def _train_stages_locked(plan: StagedConfig, top: Path, callbacks, config_file) -> Path:
    if plan.overwrite and top.is_dir():
        entries = run_entries(top)
        if entries and not (holds_run(top) or all(holds_run(e) for e in entries)):
            raise ConfigError(f"output_dir: {top} is not a sentkit run directory; refusing to delete it")
        clear_run_dir(top)
    trained = False
    for stage in plan.stages:
        before = (Path(stage.output_dir) / "results.json").stat().st_mtime_ns if _finished(stage) else None
        train(stage, callbacks=callbacks, config_file=config_file)
        trained |= before is None or (Path(stage.output_dir) / "results.json").stat().st_mtime_ns != before
    # each stage checked its own config; the summary changes only when a stage trained or the list did
    if int(os.environ.get("RANK", "0")) == 0 and (trained or _stage_names(top) != plan.names):
        stages = []
        for name, stage in zip(plan.names, plan.stages, strict=True):
            results = json.loads((Path(stage.output_dir) / "results.json").read_text(encoding="utf-8"))
            stages.append({"name": name, "run_dir": stage.output_dir, "results": results})
        atomic_write_text(top / "config.yaml", _yaml(plan.to_dict()))
        atomic_write_json(
            top / "results.json",
            {
                "stages": stages,
                "best_model": str(Path(plan.stages[-1].output_dir) / "best"),
                "paths": {
                    **run_paths(plan.stages[0], config_file),
                    "output_dir": str(top.resolve()),
                    "best_model": str((Path(plan.stages[-1].output_dir) / "best").resolve()),
                },
                "config": plan.to_dict(),
            },
        )
    return top


def _stage_names(top: Path) -> list[str] | None:
    path = top / "results.json"
    if not path.is_file():
        return None
    return [stage["name"] for stage in json.loads(path.read_text(encoding="utf-8")).get("stages", [])]


def _finished(config: TrainConfig) -> bool:
    return (Path(config.output_dir) / "results.json").is_file()


def _training_arguments(
    config: TrainConfig, run_dir: Path, has_eval: bool, eval_on_start: bool, drop_last: bool
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
        # fresh runs only: a resume must not score its start twice
        eval_on_start=has_eval and eval_on_start and config.eval_on_start,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=config.save_total_limit,
        logging_steps=config.logging_steps,
        seed=config.seed,
        remove_unused_columns=False,  # the collator needs the raw text columns
        dataloader_num_workers=config.num_workers,
        dataloader_pin_memory=torch.cuda.is_available(),
        # a last batch smaller than the objective's min_batch_rows would train on a zero loss
        dataloader_drop_last=drop_last,
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
