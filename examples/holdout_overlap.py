"""The held-out sets of the pre-registered confirmations (docs/preregistration.md) against the text the
methods were developed on: which held-out items repeat a development text, and each confirmation's
comparison recomputed without them, from the per-item values committed beside its results.

- MewsC-16 (EASE, task `mewsc16-holdout`): held-out sentences whose text is also a sentence of the
  development sample `mewsc16-100` in the same language (the files repeat some sentences, so a held-out row
  can carry a development row's text).
- MARC (Emu, task `knn-marc-category-body-holdout`): held-out reviews (title + body) whose text is also a
  review of the MARC dev sets Emu trains on (`training_data.specialization.marc_specialization_sentences`:
  English labelled, the other languages a seeded sample of unlabelled reviews), counted both against the
  whole dev sets and against the rows the confirmation runs' settings sample.

The sensitivity check drops those items from every run's per-item values and compares again
(`sentkit.stats.seeds.seed_aware_difference`, the verdict of `seeds.verdict`). A dropped MARC review leaves
as a query only (it stays a candidate neighbour of the other reviews), and a dropped MewsC-16 sentence
leaves the accuracy after k-means ran with it: both are what the committed per-item values allow, short
of encoding again.

    python examples/holdout_overlap.py [--results docs/results] [--out docs/results/confirm/overlap.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

# (name, task, development task or pool, baseline folder, method folder, the paper's effect for the verdict)
CONFIRMATIONS = {
    "emu": ("knn-marc-category-body-holdout", "emu-no-ld", "emu", 1.05),
    "ease": ("mewsc16-holdout", "simcse-unsup", "ease", 1.9),
}
SEED_SETS = {"five seeds (45-49)": ("_holdout",), "ten seeds (45-54)": ("_holdout", "_holdout_50_54")}


def mewsc16_overlap(root) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(language -> mask over `mewsc16-holdout`'s sentences: True where the text is also in
    `mewsc16-100`; group -> the identity hash the task gives those items, to check the masks' order)."""
    from sentkit.stats.items import digest_rows
    from sentkit.tasks import get_task

    used, held = get_task("mewsc16-100", data_root=root), get_task("mewsc16-holdout", data_root=root)
    used.load()
    held.load()
    masks = {
        lang: np.array([t in set(used._data[lang][0]) for t in held._data[lang][0]]) for lang in held.subsets
    }
    return masks, {lang: digest_rows(*held._data[lang][:2]) for lang in held.subsets}


def marc_overlap(root, settings: dict, sampled: bool) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(language -> mask over the MARC held-out reviews: True where the text is also among Emu's training
    reviews (`sampled`: the rows the run's settings draw; else the whole dev sets they are drawn from);
    language pair -> the identity hash the task gives its items)."""
    from sentkit.datasets.labelled_sentences import load_marc_categories
    from sentkit.stats.items import digest_rows
    from sentkit.tasks import get_task
    from sentkit.training_data.specialization import MARC_TRAIN_SPLIT, marc_specialization_sentences

    field = settings["text_field"]
    if sampled:
        pool = set(
            marc_specialization_sentences(
                root=root, text_field=field, max_adversarial=settings["max_adversarial"], seed=0
            ).texts
        )
    else:
        langs = ("en", "de", "es", "fr", "ja", "zh")
        pool = {t for lang in langs for t in load_marc_categories(lang, MARC_TRAIN_SPLIT, root, field).texts}
    held = get_task("knn-marc-category-body-holdout", data_root=root)
    held.load()
    masks = {lang: np.array([t in pool for t in held.data[lang].texts]) for lang in held.languages}
    ids = {lang: digest_rows(data.texts, data.labels) for lang, data in held.data.items()}
    return masks, {f"{a}->{b}": digest_rows([ids[a], ids[b]]) for a in ids for b in ids}


def without(items, drop: dict[str, np.ndarray], ids: dict[str, str]):
    """A copy of a task's per-item values without the items `drop` marks in each stratum (a language),
    after checking each group holds the items `ids` names in the order the masks have; each group's
    identity hash then names what was dropped, so runs compare only on the same remaining items."""
    from sentkit.stats.items import TaskItems

    out = TaskItems(items.unit, extra_sha256=items.extra_sha256)
    for key, group in items.groups.items():
        mask = drop[group.stratum]
        if group.ids_sha256 != ids[key] or len(mask) != group.n:
            raise ValueError(f"{key}: not the items of the data here, in its order (another data version?)")
        tag = hashlib.sha256(np.flatnonzero(mask).tobytes()).hexdigest()[:16]
        arrays = {name: a[~mask] for name, a in group.arrays.items()}
        out.add(key, group.statistic, f"{group.ids_sha256}-without-{tag}", group.stratum, **arrays)
    for name, aggregate in items.aggregates.items():
        out.aggregate(name, aggregate.groups, aggregate.combine)
    return out


def run_items(path: Path, task: str):
    """The per-item values of `task` in a results file, from its sidecar (checked against its sha256)."""
    from sentkit.stats.items import TaskItems, read_sidecar

    run = json.loads(path.read_text(encoding="utf-8"))
    ref = run["items_file"]
    sidecar = read_sidecar(path.parent / ref["path"], ref["sha256"], path)
    return TaskItems.from_record(run["tasks"][task]["items"], sidecar, f"{path}: tasks.{task}.items")


def sensitivity(results: Path, name: str, folders: tuple[str, ...], overlap: tuple[dict, dict]) -> dict:
    """The confirmation's comparison over the seeds of `folders`, with every item and without the ones
    `overlap` (masks, identity hashes) marks."""
    from sentkit.compare import compare_seeds
    from sentkit.stats.seeds import seed_aware_difference, verdict

    task, a, b, effect = CONFIRMATIONS[name]
    roots = [results / "confirm" / f"{name}{suffix}" for suffix in folders]
    pairs = compare_seeds([r / a for r in roots], [r / b for r in roots], tasks=[task])["pairs"]
    full = [(run_items(Path(p["a"]["path"]), task), run_items(Path(p["b"]["path"]), task)) for p in pairs]
    out = {"seeds": [p["seed"] for p in pairs]}
    for label, items in (("all items", full), ("without the overlap", None)):
        if items is None:
            items = [(without(x, *overlap), without(y, *overlap)) for x, y in full]
        record = seed_aware_difference(items)["main_score"]
        out[label] = {
            "items": sum(items[0][0].strata().values()),
            "delta": record["delta"],
            "ci": record["ci"],
            "p_value": record["p_value"],
            "detectable": record["detectable"],
            "verdict": verdict(record, +1, effect)["verdict"],
        }
    return out


def counts(mask: dict[str, np.ndarray]) -> dict:
    per_lang = {lang: int(m.sum()) for lang, m in mask.items()}
    return {
        "total": sum(per_lang.values()),
        "of": sum(len(m) for m in mask.values()),
        "per_language": per_lang,
    }


def main(argv=None) -> dict:
    from sentkit.atomic import atomic_write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("docs/results"))
    parser.add_argument("--out", type=Path, default=None, help="default: <results>/confirm/overlap.json")
    parser.add_argument("--data-root", default=None)
    args = parser.parse_args(argv)
    settings = json.loads((args.results / "confirm" / "emu.json").read_text(encoding="utf-8"))["settings"]
    masks = {
        "ease": mewsc16_overlap(args.data_root),
        "emu": marc_overlap(args.data_root, settings, sampled=False),
    }
    record = {
        "about": "Held-out items that repeat a development text, and each confirmation without them "
        "(examples/holdout_overlap.py).",
        "mewsc16_holdout_in_mewsc16_100": counts(masks["ease"][0]),
        "marc_holdout_in_emu_dev_sets": counts(masks["emu"][0]),
        "marc_holdout_in_emu_training_rows": counts(marc_overlap(args.data_root, settings, sampled=True)[0]),
        "sensitivity": {
            name: {
                label: sensitivity(args.results, name, folders, masks[name])
                for label, folders in SEED_SETS.items()
            }
            for name in CONFIRMATIONS
        },
    }
    out = args.out or args.results / "confirm" / "overlap.json"
    atomic_write_json(out, record)
    print(json.dumps(record, indent=1))
    return record


if __name__ == "__main__":
    main()
