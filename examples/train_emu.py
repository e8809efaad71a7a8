"""Emu (Hirota et al., AAAI 2020) on MARC product categories from multilingual-e5-small: base vs. softmax vs.
Emu w/o LD vs. Emu on Emu's cross-lingual leave-one-out 1-NN matrix, plus a t-SNE before/after (Emu Fig. 2).

Issue #9. Emu's intent sets (ATIS / Quora / HotelQA translations) are not available offline; MARC's
`product_category` is a label shared by en, de, es, fr, ja and zh. Training: the 5000 English dev titles
with their categories (MARC's train split is not here) and, for the language discriminator, unlabelled
titles of the other five languages' dev sets. Evaluation: `knn-marc-category` on the test splits (en, de,
es, fr, zh; ja has no test split and its dev titles were adversarial data, so it is left out), a seeded
sample of `--eval-per-lang` titles per language, every ordered language pair. No model selection (Emu has
no dev split): the model after the last step is scored. Writes `<out>/results.json` (every matrix, mean
and spread over seeds, arguments, objective configs, timings) and `<out>/tsne.png`.

    python examples/train_emu.py                 # 3 methods x 3 seeds; ~25 min on 2 idle cores
    python examples/train_emu.py --quick         # 1 seed, fewer steps and titles; ~8 min
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

import numpy as np

METHODS = ("softmax", "emu-no-ld", "emu")
LABELS = {"base": "base (e5-small-m)", "softmax": "softmax", "emu-no-ld": "Emu w/o LD", "emu": "Emu"}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="e5-small-m")
    parser.add_argument("--methods", default=",".join(METHODS), help="objectives to train, comma-separated")
    parser.add_argument("--seeds", default="42,43,44")
    parser.add_argument("--max-steps", type=int, default=120, help="encoder updates per run")
    parser.add_argument("--batch-size", type=int, default=16, help="Emu's batch size: 16")
    parser.add_argument(
        "--lr", type=float, default=2e-5, help="encoder lr (Emu's 1e-3 is for LASER's BiLSTM)"
    )
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--text-field", default="review_title", choices=("review_title", "review_body"))
    parser.add_argument(
        "--max-adversarial", type=int, default=2000, help="unlabelled titles per other language"
    )
    parser.add_argument(
        "--eval-per-lang", type=int, default=500, help="test titles per language (0 = all 5000)"
    )
    parser.add_argument("--tsne-lang", default="de", help="the language plotted with English")
    parser.add_argument("--objective-options", default="", help="extra key=value for every Emu objective")
    parser.add_argument("--quick", action="store_true", help="1 seed, 60 steps, 300 titles per language")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--out", default="runs/emu")
    parser.add_argument("--data-root", default="")
    parser.add_argument("--eval-batch-size", type=int, default=128)
    args = parser.parse_args(argv)
    if args.quick:  # smaller defaults; values given on the command line still win
        quick = {"seeds": "42", "max_steps": 60, "eval_per_lang": 300}
        given = parser.parse_args([], namespace=None)
        for key, value in quick.items():
            if getattr(args, key) == getattr(given, key):
                setattr(args, key, value)

    from sentkit.atomic import atomic_write_json
    from sentkit.encoders import load_encoder
    from sentkit.objectives import objective_config
    from sentkit.tasks import get_task
    from sentkit.training import TrainConfig, train
    from sentkit.training_data.specialization import marc_specialization_sentences, specialization_rows

    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    root = args.data_root or None
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    sentences = marc_specialization_sentences(
        root=root, text_field=args.text_field, max_adversarial=args.max_adversarial, seed=0
    )
    task = get_task(
        "knn-marc-category",
        data_root=root,
        batch_size=args.eval_batch_size,
        max_per_lang=args.eval_per_lang or None,
        text_field=args.text_field,
    )
    task.load()

    runs: dict[str, list[dict]] = {"base": []}
    start = time.perf_counter()
    base = load_encoder(args.model)
    runs["base"].append(
        {"seed": None, "scores": task.evaluate(base), "eval_s": round(time.perf_counter() - start, 1)}
    )
    vectors = {"base": _tsne_vectors(base, task, args.tsne_lang, args.eval_batch_size)}
    print(_line("base", runs["base"][0]["scores"]))
    configs: dict[str, dict] = {}
    atomic_write_json(out / "results.json", _results(args, task, sentences, runs, configs, t0))
    for method in methods:
        runs[method] = []
    tsne_method = "emu" if "emu" in methods else methods[-1]
    for seed in seeds:  # seeds outer: a run cut short still has every method at the first seed
        for method in methods:
            data, names = specialization_rows(sentences, adversarial=method.startswith("emu"), seed=seed)
            options = f"num_classes={len(names)}"
            if method.startswith("emu") and args.objective_options:
                options += "," + args.objective_options
            config = TrainConfig(
                model=args.model,
                objective=method,
                output_dir=str(out / f"{method}-seed{seed}"),
                batch_size=args.batch_size,
                lr=args.lr,
                max_steps=args.max_steps,
                max_length=args.max_length,
                objective_options=options,
                eval_task="",
                save_steps=args.max_steps,
                save_total_limit=1,
                logging_steps=min(10, args.max_steps),
                seed=seed,
                data_root=args.data_root,
                progress=False,
                overwrite=True,
            )
            configs[method] = dataclasses.asdict(objective_config(method, **config.objective_overrides()))
            start = time.perf_counter()
            run_dir = train(config, data=data)
            train_s = time.perf_counter() - start
            encoder = load_encoder(run_dir / "best")
            start = time.perf_counter()
            scores = task.evaluate(encoder)
            runs[method].append(
                {
                    "seed": seed,
                    "scores": scores,
                    "train_s": round(train_s, 1),
                    "eval_s": round(time.perf_counter() - start, 1),
                    "train_log": _train_log(run_dir),
                }
            )
            print(_line(f"{method} seed {seed}", scores))
            atomic_write_json(out / "results.json", _results(args, task, sentences, runs, configs, t0))
            if method == tsne_method and seed == seeds[0]:
                vectors[method] = _tsne_vectors(encoder, task, args.tsne_lang, args.eval_batch_size)

    results = _results(args, task, sentences, runs, configs, t0)
    if not args.no_plot and len(vectors) > 1:
        results["tsne"] = str(_plot_tsne(vectors, task, args.tsne_lang, out / "tsne.png"))
    atomic_write_json(out / "results.json", results)
    print(results["table"])
    return results


def _results(args, task, sentences, runs: dict, configs: dict, t0: float) -> dict:
    """Everything measured so far (written after every run, so a cut-short run leaves its numbers)."""
    from sentkit.provenance import machine_info, package_versions

    summary = {name: _summary(rows) for name, rows in runs.items() if rows}
    return {
        "example": "train_emu",
        "question": f"does Emu raise {args.model}'s cross-lingual LOO 1-NN accuracy on MARC product categories?",
        "task": {
            "name": task.name,
            "files": task.meta.get("files"),
            "n_per_lang": task.meta.get("n_per_lang"),
        },
        "train_rows": len(sentences.where(lambda t, label, lang, i: label != "")),
        "adversarial_rows": len(sentences.where(lambda t, label, lang, i: label == "")),
        "summary": summary,
        "runs": runs,
        "objectives": configs,
        "args": vars(args),
        "table": _table(summary, task.pairs),
        "versions": package_versions(),
        "machine": machine_info(),
        "total_s": round(time.perf_counter() - t0, 1),
    }


def _line(name: str, scores: dict) -> str:
    cross = np.mean([v for k, v in scores.items() if "->" in k and k.split("->")[0] != k.split("->")[1]])
    return f"{name:>18}: mean {scores['main_score']:.2f}  cross-lingual {cross:.2f}"


def _summary(rows: list[dict]) -> dict:
    """Mean and sample standard deviation over seeds of every score, plus the cross-lingual mean (A != B)."""
    keys = rows[0]["scores"].keys()
    out = {}
    for key in keys:
        values = [r["scores"][key] for r in rows]
        out[key] = {
            "mean": statistics.fmean(values),
            "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
        }
    cross = [
        np.mean([v for k, v in r["scores"].items() if "->" in k and k.split("->")[0] != k.split("->")[1]])
        for r in rows
    ]
    out["cross_lingual"] = {
        "mean": float(np.mean(cross)),
        "sd": float(np.std(cross, ddof=1)) if len(cross) > 1 else 0.0,
    }
    out["seeds"] = len(rows)
    return out


def _table(summary: dict, pairs) -> str:
    """Markdown: one row per method, the mean of all pairs, the cross-lingual mean and every A->B pair."""
    keys = [f"{a}->{b}" for a, b in pairs]
    head = "| method | seeds | mean | cross-lingual | " + " | ".join(keys) + " |"
    lines = [head, "|" + "---|" * (4 + len(keys))]
    for name, s in summary.items():
        cells = [f"{s[k]['mean']:.1f}" for k in keys]
        lines.append(
            f"| {LABELS.get(name, name)} | {s['seeds']} | {_spread(s['main_score'], s['seeds'])} | "
            f"{_spread(s['cross_lingual'], s['seeds'])} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def _spread(score: dict, seeds: int) -> str:
    return f"{score['mean']:.2f}" + (f" ± {score['sd']:.2f}" if seeds > 1 else "")


def _train_log(run_dir: Path) -> list[dict]:
    states = sorted(run_dir.glob("checkpoint-*/trainer_state.json"))
    if not states:
        return []
    history = json.loads(states[-1].read_text(encoding="utf-8"))["log_history"]
    return [
        {k: v for k, v in h.items() if k == "step" or k.startswith("loss")} for h in history if "loss" in h
    ]


def _tsne_vectors(encoder, task, other: str, batch_size: int) -> dict[str, np.ndarray]:
    return {lang: encoder.encode(task.data[lang].texts, batch_size=batch_size) for lang in ("en", other)}


def _plot_tsne(vectors: dict, task, other: str, path: Path, top: int = 8) -> Path:
    """English and `other` test titles, t-SNE of each model's vectors, coloured by the `top` commonest
    categories (the rest grey); circles = English, crosses = the other language."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.manifold import TSNE

    labels = np.concatenate([task.data["en"].labels, task.data[other].labels])
    langs = np.array(["en"] * len(task.data["en"]) + [other] * len(task.data[other]))
    names, counts = np.unique(labels, return_counts=True)
    common = list(names[np.argsort(-counts)][:top])
    colours = plt.get_cmap("tab10")
    fig, axes = plt.subplots(1, len(vectors), figsize=(6 * len(vectors), 5.5), squeeze=False)
    for ax, (name, by_lang) in zip(axes[0], vectors.items()):
        x = np.concatenate([by_lang["en"], by_lang[other]])
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        xy = TSNE(n_components=2, metric="cosine", init="pca", random_state=0, perplexity=30).fit_transform(x)
        rest = ~np.isin(labels, common)
        ax.scatter(xy[rest, 0], xy[rest, 1], s=4, c="lightgrey", label="other categories")
        for i, category in enumerate(common):
            for lang, marker in (("en", "o"), (other, "x")):
                keep = (labels == category) & (langs == lang)
                ax.scatter(
                    xy[keep, 0],
                    xy[keep, 1],
                    s=10,
                    marker=marker,
                    color=colours(i),
                    label=f"{category} ({lang})",
                )
        ax.set_title(f"{LABELS.get(name, name)}: en (o) and {other} (x) test titles")
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0][-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(path)
    return path


if __name__ == "__main__":
    main()
