"""Unsupervised SimCSE on JCSE's Japanese clinical corpus from multilingual-e5-small: JAC-STS before vs after.

Issue #3, run 1. Start = the packaged e5-small port (`e5-small-m`); training = `sentkit.trainer.train`
with the `simcse-unsup` objective on `ja-clinic` (11,776 distinct lines), model selection on JAC-STS dev
(183 pairs) every `--eval-steps`, as SimCSE selects on STS-B dev; the selected model is scored on JAC-STS
test (3481 pairs), which training never sees. Writes `<out>/results.json` (atomically) and prints a
start-vs-end table. Defaults are sized for < 20 minutes on 2 CPU cores.

    python examples/train_ja_clinic.py [--max-steps 100] [--out runs/ja-clinic-simcse]
    python examples/train_ja_clinic.py --smoke      # minutes: 64 rows, 2 steps, dev set as the test
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="e5-small-m")
    parser.add_argument("--data", default="ja-clinic", help="training data spec (sentkit.build.triplets)")
    parser.add_argument("--max-rows", type=int, default=0, help="seeded sample of N corpus lines (0 = all)")
    parser.add_argument("--batch-size", type=int, default=64, help="SimCSE unsup: 64")
    parser.add_argument("--max-length", type=int, default=32, help="SimCSE: 32 tokens")
    parser.add_argument("--lr", type=float, default=3e-5, help="SimCSE BERT-base unsup: 3e-5")
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--eval-steps", type=int, default=25, help="JAC-STS dev selection every N steps")
    parser.add_argument("--no-select", action="store_true", help="keep the last model, no dev selection")
    parser.add_argument("--test-task", default="jacsts", help="jacsts (test, 3481 pairs) or jacsts-dev")
    parser.add_argument("--eval-batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--out", type=Path, default=Path("runs/ja-clinic-simcse"))
    parser.add_argument("--smoke", action="store_true", help="tiny settings to check the pipeline runs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.max_rows, args.max_steps, args.eval_steps, args.test_task = 64, 2, 1, "jacsts-dev"
        args.batch_size = min(args.batch_size, 16)

    import torch

    from sentkit.atomic import atomic_write_json
    from sentkit.build.triplets import load_training_data
    from sentkit.encoders import load_encoder
    from sentkit.provenance import machine_info, package_versions, seed_everything
    from sentkit.tasks import get_task
    from sentkit.trainer import TrainConfig, train

    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()

    def test_task():
        return get_task(args.test_task, data_root=args.data_root, batch_size=args.eval_batch_size)

    data = load_training_data(
        args.data, max_rows=args.max_rows or None, seed=args.seed, data_root=args.data_root
    )
    start_encoder = load_encoder(args.model)
    clock = time.perf_counter()
    start_scores = test_task().evaluate(start_encoder)
    timings["start_eval_s"] = round(time.perf_counter() - clock, 1)
    del start_encoder

    config = TrainConfig(
        model=args.model,
        objective="simcse-unsup",
        data=args.data,
        output_dir=str(args.out / "run"),
        max_length=args.max_length,
        batch_size=args.batch_size,
        lr=args.lr,
        max_steps=args.max_steps,
        eval_task="" if args.no_select else "jacsts-dev",
        eval_steps=args.eval_steps,
        save_steps=max(args.max_steps, 1),
        save_total_limit=1,
        logging_steps=max(1, min(25, args.max_steps)),
        seed=args.seed,
        eval_batch_size=args.eval_batch_size,
        data_root=args.data_root or "",
        overwrite=True,
    )
    clock = time.perf_counter()
    run_dir = train(config, data=data)
    timings["train_s"] = round(time.perf_counter() - clock, 1)

    clock = time.perf_counter()
    end_scores = test_task().evaluate(load_encoder(run_dir / "best"))
    timings["end_eval_s"] = round(time.perf_counter() - clock, 1)
    timings["total_s"] = round(time.perf_counter() - t0, 1)

    import json

    train_results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    results = {
        "example": "train_ja_clinic",
        "question": "does unsupervised SimCSE on ja-clinic raise JAC-STS Spearman over the e5-small start?",
        "test_task": args.test_task,
        "start": start_scores,
        "end": end_scores,
        "delta_main_score": end_scores["main_score"] - start_scores["main_score"],
        "selected_step": (train_results.get("best") or {}).get("step"),
        "train_rows": len(data),
        "train_loss": train_results["train"].get("train_loss"),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "train_config": config.to_dict(),
        "seed": args.seed,
        "timings": timings,
        "run_dir": str(run_dir),
        "versions": package_versions(),
        "machine": machine_info(),
    }
    atomic_write_json(args.out / "results.json", results)
    print_table(args.test_task, start_scores, end_scores, results)
    return results


def print_table(task: str, start: dict, end: dict, results: dict) -> None:
    print(
        f"\n{task} Spearman x100 ({results['train_rows']} training rows, selected step {results['selected_step']})"
    )
    print(f"{'key':<12} {'start':>8} {'end':>8} {'delta':>8}")
    for key in start:
        print(f"{key:<12} {start[key]:>8.2f} {end[key]:>8.2f} {end[key] - start[key]:>+8.2f}")
    t = results["timings"]
    print(f"time: start eval {t['start_eval_s']}s, train {t['train_s']}s, end eval {t['end_eval_s']}s")


if __name__ == "__main__":
    main()
