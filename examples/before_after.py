"""Shared driver of the training examples: score a test task, train, score the trained model, write both.

Each example names its objective, data, test task and model selection; this module does the rest the same
way for all of them: seeds, times each phase, trains with `sentkit.training.train`, writes
`<out>/results.json` atomically (start and end scores, config, versions, machine, seed, timings) and
prints a start-vs-end table.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def add_run_args(parser, *, out: str, seeds: bool = False) -> None:
    """The flags every example shares: evaluation batch, seed, threads, data root, output folder, smoke.

    With `seeds`, `--seeds 42,43,44` (several training seeds, resumable: examples/seeds.py) replaces `--seed`,
    and `--keep-checkpoints` is added.
    """
    parser.add_argument("--eval-batch-size", type=int, default=64)
    if seeds:
        from seeds import add_seed_args

        add_seed_args(parser)
    else:
        parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--out", type=Path, default=Path(out))
    parser.add_argument("--smoke", action="store_true", help="tiny settings to check the pipeline runs")


def run_before_after(
    args,
    *,
    example: str,
    question: str,
    objective: str,
    data_spec: str,
    test_task: Callable[[], object],
    eval_task: str = "",
    eval_steps: int = 250,
    **train_options,
) -> dict:
    """Score `test_task()` on `args.model`, train `objective` on `data_spec`, score the kept model again.

    `args` carries model, max_rows, batch_size, max_length, lr, max_steps, eval_batch_size, seed, threads,
    data_root and out. With `eval_task` the model is selected on it every `eval_steps` (step 0 included,
    so "no gain" keeps the start model); without, the last model is kept.
    """
    import torch

    from sentkit.atomic import atomic_write_json
    from sentkit.encoders import load_encoder
    from sentkit.provenance import machine_info, package_versions, seed_everything
    from sentkit.training import TrainConfig, train
    from sentkit.training_data.specs import load_training_data

    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    data = load_training_data(
        data_spec, max_rows=args.max_rows or None, seed=args.seed, data_root=args.data_root
    )

    clock = time.perf_counter()
    start = test_task().evaluate(load_encoder(args.model))
    timings["start_eval_s"] = round(time.perf_counter() - clock, 1)

    config = TrainConfig(
        model=args.model,
        objective=objective,
        data=data_spec,
        output_dir=str(Path(args.out) / "run"),
        max_length=args.max_length,
        batch_size=args.batch_size,
        lr=args.lr,
        max_steps=args.max_steps,
        eval_task=eval_task,
        eval_steps=eval_steps,
        save_steps=max(args.max_steps, 1),
        save_total_limit=1,
        logging_steps=max(1, min(20, args.max_steps)),
        seed=args.seed,
        eval_batch_size=args.eval_batch_size,
        data_root=args.data_root or "",
        overwrite=True,
        **train_options,
    )
    clock = time.perf_counter()
    run_dir = train(config, data=data)
    timings["train_s"] = round(time.perf_counter() - clock, 1)

    clock = time.perf_counter()
    end = test_task().evaluate(load_encoder(run_dir / "best"))
    timings["end_eval_s"] = round(time.perf_counter() - clock, 1)
    timings["total_s"] = round(time.perf_counter() - t0, 1)

    trained = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    results = {
        "example": example,
        "question": question,
        "start": start,
        "end": end,
        "delta_main_score": end["main_score"] - start["main_score"],
        "selected_step": (trained.get("best") or {}).get("step") if eval_task else args.max_steps,
        "train_rows": len(data),
        "train_languages": sorted(set(data["lang"])) if "lang" in data.column_names else None,
        "train_loss": trained["train"].get("train_loss"),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "train_config": config.to_dict(),
        "seed": args.seed,
        "timings": timings,
        "run_dir": str(run_dir),
        "versions": package_versions(),
        "machine": machine_info(),
    }
    atomic_write_json(Path(args.out) / "results.json", results)
    print_table(results)
    return results


def print_table(results: dict) -> None:
    start, end, t = results["start"], results["end"], results["timings"]
    print(f"\n{results['example']}: {results['question']}")
    print(f"{results['train_rows']} training rows, model kept from step {results['selected_step']}")
    print(f"{'key':<12} {'start':>8} {'end':>8} {'delta':>8}")
    for key in start:
        print(f"{key:<12} {start[key]:>8.2f} {end[key]:>8.2f} {end[key] - start[key]:>+8.2f}")
    print(f"time: start eval {t['start_eval_s']}s, train {t['train_s']}s, end eval {t['end_eval_s']}s")
