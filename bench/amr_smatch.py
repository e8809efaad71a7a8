"""Smatch of the offline AMR parsers on the 143 gold Little Prince test graphs (v1.6 test split).

Prints a table of Smatch and the detailed scores (concepts, frames, SRL, re-entrancies, ...) for the
rule-based parser and the no-structure baseline (the same concepts all hung off the root), and writes
bench/out/amr_smatch.json. The parser's lexicon comes from the training split only; this script is the
only place the test graphs are read, and it scores them once with fixed restarts and seed.

    python -m bench.amr_smatch [--restarts 4] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from sentkit.amr.io import read_amr
from sentkit.amr.parse import parse
from sentkit.amr.scoring import detailed_scores
from sentkit.atomic import atomic_write_json
from sentkit.datasets.root import data_file
from sentkit.provenance import package_versions

TEST_FILE = ("amr", "en", "amr-bank-struct-v1.6-test.txt")
ROWS = (
    "Smatch",
    "Unlabeled",
    "No WSD",
    "Concepts",
    "Frames",
    "Named Ent.",
    "Negations",
    "SRL",
    "Reentrancies",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--restarts", type=int, default=4, help="smatch random restarts per pair")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="bench/out/amr_smatch.json")
    args = ap.parse_args()

    gold = read_amr(data_file(*TEST_FILE)).graphs
    sentences = [g.metadata["snt"] for g in gold]
    results: dict = {"gold": "/".join(TEST_FILE), "graphs": len(gold), "restarts": args.restarts}
    results["seed"] = args.seed
    for parser in ("flat", "rules"):
        t0 = time.perf_counter()
        predicted = parse(sentences, lang="en", parser=parser)
        parse_s = time.perf_counter() - t0
        scores = detailed_scores(predicted, gold, restarts=args.restarts, seed=args.seed)
        results[parser] = {"scores": scores, "parse_seconds": parse_s}
    print(
        f"Smatch on {len(gold)} gold Little Prince test graphs (restarts {args.restarts}, seed {args.seed})"
    )
    print(f"| {'score':<13} | {'no structure (P/R/F)':>22} | {'rules (P/R/F)':>22} |")
    print(f"|{'-' * 15}|{'-' * 24}|{'-' * 24}|")
    for row in ROWS:
        cells = []
        for parser in ("flat", "rules"):
            s = results[parser]["scores"].get(row)
            cells.append(f"{s['precision']:5.1f} {s['recall']:5.1f} {s['f1']:5.1f}" if s else "-")
        print(f"| {row:<13} | {cells[0]:>22} | {cells[1]:>22} |")
    results["versions"] = package_versions()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(Path(args.out), results)
    print(f"wrote {args.out}")
    print(json.dumps({p: round(results[p]["scores"]["Smatch"]["f1"], 2) for p in ("flat", "rules")}))


if __name__ == "__main__":
    main()
