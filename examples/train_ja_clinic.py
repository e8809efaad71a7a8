"""Unsupervised SimCSE on JCSE's Japanese clinical corpus from multilingual-e5-small: JAC-STS before vs after.

Issue #3, run 1. Start = the packaged e5-small port (`e5-small-m`); training = `sentkit.training.train`
with the `simcse-unsup` objective on `ja-clinic` (11,776 distinct lines), model selection on JAC-STS dev
(184 pairs) every `--eval-steps` with the untrained model as step 0, as SimCSE selects on STS-B dev; the
kept model is scored on JAC-STS test (3482 pairs), which training never sees. Writes
`<out>/results.json` (atomically) and prints a start-vs-end table. Defaults take ~11 minutes on 2 CPU cores.

    python examples/train_ja_clinic.py [--max-steps 30] [--lr 1e-5] [--out runs/ja-clinic-simcse]
    python examples/train_ja_clinic.py --smoke      # minutes: 64 rows, 2 steps, dev set as the test
"""

from __future__ import annotations

import argparse

from before_after import add_run_args, run_before_after


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="e5-small-m")
    parser.add_argument(
        "--data", default="ja-clinic", help="training data spec (sentkit.training_data.specs)"
    )
    parser.add_argument("--max-rows", type=int, default=0, help="seeded sample of N corpus lines (0 = all)")
    parser.add_argument("--batch-size", type=int, default=64, help="SimCSE unsup: 64")
    parser.add_argument("--max-length", type=int, default=32, help="SimCSE: 32 tokens")
    parser.add_argument(
        "--lr", type=float, default=1e-5, help="SimCSE BERT-base unsup: 3e-5; e5 is already sentence-tuned"
    )
    parser.add_argument("--temperature", type=float, default=0.05, help="SimCSE: 0.05")
    parser.add_argument("--warmup-ratio", type=float, default=0.0, help="SimCSE: no warm-up")
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--eval-steps", type=int, default=5, help="JAC-STS dev selection every N steps")
    parser.add_argument("--no-select", action="store_true", help="keep the last model, no dev selection")
    parser.add_argument("--test-task", default="jacsts", help="jacsts (test, 3482 pairs) or jacsts-dev")
    add_run_args(parser, out="runs/ja-clinic-simcse")
    args = parser.parse_args(argv)
    if args.smoke:
        args.max_rows, args.max_steps, args.eval_steps, args.test_task = 64, 2, 1, "jacsts-dev"
        args.batch_size = min(args.batch_size, 16)

    from sentkit.tasks import get_task

    return run_before_after(
        args,
        example="train_ja_clinic",
        question=f"does unsupervised SimCSE on {args.data} raise JAC-STS Spearman over the {args.model} start?",
        objective="simcse-unsup",
        data_spec=args.data,
        test_task=lambda: get_task(args.test_task, data_root=args.data_root, batch_size=args.eval_batch_size),
        eval_task="" if args.no_select else "jacsts-dev",
        eval_steps=args.eval_steps,
        temperature=args.temperature,
        warmup_ratio=args.warmup_ratio,
    )


if __name__ == "__main__":
    main()
