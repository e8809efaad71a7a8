"""EASE's entity-table learning rate, chosen on a dev split: the rows, vectors and settings of
examples/train_ease.py, one EASE run per candidate `entity_lr` (0 = the run's lr), each scored on STS-B dev
(never a test set), with the entity loss at its first and last logged step beside its chance value.

The entity table (Wikipedia2Vec vectors) and the projection W form their own optimizer group; this script
shows whether a larger lr for that group lets the entity term (EASE eq. 2) leave its chance value within
the example's steps, and whether that helps the encoder on dev. Writes `<out>/results.json` (every run's
dev score, entity-loss trace, settings, versions, timings) and prints the table; the choice is the
candidate with the best dev score to two decimals (ties: the smallest lr).

    python examples/ease_entity_lr.py [--entity-lrs 0,1e-4,1e-3,1e-2] [train_ease.py flags]
    python examples/ease_entity_lr.py --quick --no-wikipedia2vec    # pipeline check
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_ease  # noqa: E402 - the EASE example's rows, vectors and training
from seeds import seeds_of  # noqa: E402


def choose(runs: dict[str, dict]) -> str:
    """The candidate with the best dev score at the precision scores are reported with (two decimals); on a
    tie the smallest learning rate (0, the run's own, first)."""
    return max(runs, key=lambda lr: (round(runs[lr]["dev"], 2), -float(lr)))


def main(argv: list[str] | None = None) -> dict:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0], add_help=False)
    own.add_argument("--entity-lrs", default="0,1e-4,1e-3,1e-2", help="candidates, comma-separated")
    own.add_argument("--dev-task", default="stsb-dev")
    mine, rest = own.parse_known_args(argv)
    args = train_ease.parse_args(rest + (["--out", "runs/ease-entity-lr"] if "--out" not in rest else []))
    import torch

    from sentkit.atomic import atomic_write_json
    from sentkit.encoders import load_encoder
    from sentkit.evaluate import evaluate
    from sentkit.provenance import machine_info, package_versions
    from sentkit.training_data.ease.entity_pairs import read_entity_pairs

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    seed = seeds_of(args, args.quick or args.smoke)[0]
    candidates = [x.strip() for x in mine.entity_lrs.split(",") if x.strip()]
    dump = train_ease.default_dump(args)
    pairs, manifest = train_ease.build_pairs(args, dump)
    vectors = train_ease.entity_vector_file(args, dump)[0]
    data = read_entity_pairs(pairs)
    out = Path(args.out)

    def dev_score(model, name: str) -> float:
        results = evaluate(
            load_encoder(str(model)),
            [mine.dev_task],
            out=out / "evals" / name,
            data_root=args.data_root or None,
            show_progress=False,
        )
        return results["tasks"][mine.dev_task]["main_score"]

    record: dict = {
        "example": "ease_entity_lr",
        "dev_task": mine.dev_task,
        "seed": seed,
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "threads", "data_root")},
        "data": {k: manifest[k] for k in ("rows", "entities")},
        "start": {"dev": dev_score(args.model, "start")},
        "runs": {},
    }
    for lr in candidates:
        options = f"entities={pairs}" + (f",entity_vectors={vectors}" if vectors else "") + f",entity_lr={lr}"
        print(f"== EASE, entity_lr {lr} (0 = the run's lr {args.lr}), seed {seed}", flush=True)
        name = f"ease-entity-lr-{lr}"
        model, info = train_ease.train_one(args, name, seed, "ease", data, options)
        trace = [step for step in info["train_log"] if "loss_entity" in step]
        record["runs"][lr] = {
            "dev": dev_score(model, name),
            "entity_trace": trace,
            "train_s": info["train_s"],
        }
        print(f"  {mine.dev_task} {record['runs'][lr]['dev']:.2f}", flush=True)
    record["chosen"] = choose(record["runs"])
    record.update(
        versions=package_versions(), machine=machine_info(), total_s=round(time.perf_counter() - t0, 1)
    )
    atomic_write_json(out / "results.json", record)
    print(f"\n| entity_lr | {mine.dev_task} | entity loss first -> last (chance) |\n|---|---:|---|")
    print(f"| start | {record['start']['dev']:.2f} | - |")
    for lr, run in record["runs"].items():
        trace = run["entity_trace"]
        loss = (
            f"{trace[0]['loss_entity']:.5f} -> {trace[-1]['loss_entity']:.5f} ({trace[-1]['chance_entity']:.5f})"
            if trace
            else "-"
        )
        print(f"| {lr}{' (chosen)' if lr == record['chosen'] else ''} | {run['dev']:.2f} | {loss} |")
    return record


if __name__ == "__main__":
    main()
