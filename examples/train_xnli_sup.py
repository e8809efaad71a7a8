"""Supervised SimCSE on XNLI dev triplets (15 languages) from multilingual-e5-small: STS17 before vs after.

Issue #3, run 2. The English NLI training sets SimCSE uses are not available offline, so the triplets
are built from XNLI's dev sets (830 premises x 15 languages = 12,450 (premise, entailment,
contradiction) triplets; `sentkit.training_data.triplets.xnli_triplets`). Training = `sentkit.training.train`
with `simcse-sup` (hard negatives weighted by alpha, JCSE eq. 5; alpha = 1 is SimCSE eq. 5); the last
model is kept (STS17 has no dev split, and selecting on it would be selecting on the test). Success =
the STS17 average (10 pairs, 250 each) rises or holds. Writes `<out>/results.json` atomically and prints
a start-vs-end table. Defaults are sized for < 20 minutes on 2 CPU cores.

    python examples/train_xnli_sup.py [--langs en,de,...] [--max-steps 40] [--out runs/xnli-sup]
    python examples/train_xnli_sup.py --smoke      # minutes: 2 steps, 2 STS17 pairs
"""

from __future__ import annotations

import argparse

from before_after import add_run_args, run_before_after


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="e5-small-m")
    parser.add_argument("--langs", default="", help="XNLI languages, comma-separated (default: all 15)")
    parser.add_argument("--max-rows", type=int, default=0, help="seeded sample of N triplets (0 = all)")
    parser.add_argument(
        "--batch-size", type=int, default=64, help="triplets per step (SimCSE sup: 512 on GPUs)"
    )
    parser.add_argument("--max-length", type=int, default=32, help="SimCSE: 32 tokens")
    parser.add_argument("--lr", type=float, default=1e-5, help="small: e5 is already sentence-tuned")
    parser.add_argument("--hard-negative-weight", type=float, default=1.0, help="alpha of JCSE eq. 5")
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument(
        "--sts17-pairs", default="", help="STS17 pairs to score (default: the 10 of the task)"
    )
    add_run_args(parser, out="runs/xnli-sup")
    args = parser.parse_args(argv)
    if args.smoke:
        args.max_rows, args.max_steps, args.batch_size = 64, 2, min(args.batch_size, 16)
        args.sts17_pairs = args.sts17_pairs or "en-en,en-de"

    from sentkit.tasks import get_task

    pairs = [p.strip() for p in args.sts17_pairs.split(",") if p.strip()] or None
    return run_before_after(
        args,
        example="train_xnli_sup",
        question=f"do XNLI dev triplets raise or keep the STS17 average of {args.model}?",
        objective="simcse-sup",
        data_spec=f"xnli:{args.langs}" if args.langs else "xnli",
        test_task=lambda: get_task(
            "sts17", langs=pairs, data_root=args.data_root, batch_size=args.eval_batch_size
        ),
        hard_negative_weight=args.hard_negative_weight,
    )


if __name__ == "__main__":
    main()
