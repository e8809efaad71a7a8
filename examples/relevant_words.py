"""Relevant content words (JCSE sec. 4.3): which word's removal lowers a relevant pair's cosine most, by POS.

Relevant pairs = JAC-STS test pairs with gold >= `--min-gold` (a seeded sample of `--pairs`); words = GiNZA
tokens. For each model (e.g. the e5 start and a JCSE-trained `runs/jcse/e5-small-m/stage1/best`) writes
`<out>/relevant_words.json`, the POS table `<out>/relevant_words.md` and the bar chart `<out>/relevant_words.png`.

    python examples/relevant_words.py --models e5-small-m,runs/jcse/e5-small-m/stage1/best [--pairs 200]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="e5-small-m", help="comma list: short names or model folders")
    parser.add_argument("--pairs", type=int, default=200, help="seeded sample of relevant pairs")
    parser.add_argument("--min-gold", type=float, default=4.0, help="JAC-STS gold (0-5) of a relevant pair")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--out", type=Path, default=Path("runs/relevant_words"))
    args = parser.parse_args(argv)

    import numpy as np

    from sentkit.analysis.relevant_words import (
        distribution_table,
        plot_distribution,
        pos_distribution,
        relevant_content_words,
    )
    from sentkit.atomic import atomic_write_json, atomic_write_text
    from sentkit.datasets.jsts import read_jsts
    from sentkit.datasets.root import data_file
    from sentkit.encoders import load_encoder
    from sentkit.training_data.jcse.domain_corpus import load_pipeline

    pairs = read_jsts(data_file("sts-ja", "JAC-STS", "JAC-sts-test.csv", root=args.data_root))
    relevant = np.flatnonzero(pairs.gold >= args.min_gold)
    chosen = np.sort(np.random.default_rng(args.seed).permutation(relevant)[: args.pairs])
    sample = [(pairs.sent1[i], pairs.sent2[i]) for i in chosen]
    nlp = load_pipeline("ja")
    results: dict = {"pairs": len(sample), "relevant_pairs": int(len(relevant)), "models": {}}
    distributions = {}
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        words = relevant_content_words(load_encoder(model), sample, nlp)
        distributions[model] = pos_distribution(words)
        results["models"][model] = {
            "pos_percent": distributions[model],
            "words": [[w.pair, w.word, w.pos, round(w.drop, 5)] for w in words],
        }
        print(model, {k: round(v, 1) for k, v in list(distributions[model].items())[:6]})
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out / "relevant_words.json", results)
    atomic_write_text(args.out / "relevant_words.md", distribution_table(distributions))
    plot_distribution(distributions, args.out / "relevant_words.png")
    print(distribution_table(distributions))
    return results


if __name__ == "__main__":
    main()
