"""EASE (Nishikawa et al., NAACL 2022) at CPU scale, end to end from a real Wikipedia dump.

1. `sentkit build ease` on gensim's English dump sample (106 articles): (sentence, entity, hard-negative
   entity) rows, entity types from spaCy NER of the anchors (offline stand-in for Wikidata), plus the
   XNLI dev translations of every English sentence naming an entity (14 more languages).
2. Wikipedia2Vec trained on the same dump (50 dims, 10 iterations; cached) initialises the entity table.
3. From the multilingual e5-small port: unsupervised SimCSE and EASE on the same sentences, same steps and
   seed; the untrained start; and the Table 7 ablations (no hard negatives, random entity init, no
   dropout loss), scored on MewsC-16 (100-sentence sample per language), the five English short-text
   clustering sets (seeded samples), STS17 and Tatoeba. Ablations are scored on MewsC-16 only.

    python examples/train_ease.py            # ~30+ min on 2 free cores
    python examples/train_ease.py --quick    # pipeline check: tiny samples, 4 steps, no ablations, no Tatoeba

Writes <out>/results.json (every score, settings, timings, versions, the paper's numbers beside ours).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from before_after import add_run_args  # noqa: E402 - the examples' shared flags

# Published numbers (the EASE repository's README, models trained on 18-language Wikipedia with mBERT /
# XLM-R base; full MewsC-16, full STS17): not comparable in scale with this run, cited for orientation.
PAPER = {
    "source": "studio-ousia/ease README (Nishikawa et al. 2022)",
    "ease-mbert": {"mSTS17 avg (Spearman)": 57.2, "MewsC-16 avg (clustering acc.)": 36.0},
    "ease-xlmr": {"mSTS17 avg (Spearman)": 57.1, "MewsC-16 avg (clustering acc.)": 35.4},
    "ease-bert-base-uncased (English)": {"STS avg": 77.0, "short-text clustering avg": 63.1},
}
ENGLISH_STC = ("agnews", "biomedical", "searchsnippets", "stackoverflow", "tweet")
GENSIM_SAMPLE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="e5-small-m")
    p.add_argument("--dump", default="", help="pages-articles dump (default: gensim's English sample)")
    p.add_argument("--min-links", type=int, default=5, help="EASE uses 10 on full Wikipedia")
    p.add_argument("--max-rows", type=int, default=4000, help="training rows sampled from the built set")
    p.add_argument("--max-steps", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-length", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-5, help="e5 was already trained contrastively: low lr")
    p.add_argument("--w2v-dim", type=int, default=50)
    p.add_argument("--w2v-iterations", type=int, default=10)
    p.add_argument(
        "--entity-vectors", default="", help="a Wikipedia2Vec .pkl / text file instead of training one"
    )
    p.add_argument("--no-wikipedia2vec", action="store_true", help="random entity init (skips Wikipedia2Vec)")
    p.add_argument("--stc-rows", type=int, default=500, help="seeded sample of each English STC set")
    p.add_argument("--mewsc-rows", type=int, default=100, help="seeded sample of MewsC-16 per language")
    p.add_argument("--tatoeba-langs", default="", help="comma list (default: EASE's 16; none = skip)")
    p.add_argument("--sts17-langs", default="", help="comma list of STS17 pairs (default: all 10)")
    p.add_argument("--types", default="auto", help="entity types: auto (NER offline) | ner | category")
    p.add_argument("--splitter", default="auto", help="sentence splitter: auto (spaCy) | rule")
    p.add_argument("--no-ablations", action="store_true")
    p.add_argument(
        "--objective-options", default="", help="extra key=value for every EASE run (e.g. entity_lr=1e-3)"
    )
    p.add_argument("--quick", action="store_true", help="tiny samples and 4 steps: checks the pipeline")
    add_run_args(p, out="runs/ease-example")
    args = p.parse_args(argv)
    if args.quick or args.smoke:
        args.max_rows, args.max_steps, args.batch_size, args.stc_rows = 256, 4, 16, 60
        args.mewsc_rows, args.tatoeba_langs = 30, "none"
        args.sts17_langs = args.sts17_langs or "en-en"
        args.types, args.splitter = "category", "rule"
        args.no_ablations = True
    return args


def build_pairs(args, dump: str) -> tuple[Path, dict]:
    from sentkit.training_data.ease.entity_pairs import EaseBuildConfig, build_entity_pairs

    out = Path(args.out) / "pairs"
    config = EaseBuildConfig(
        dump=dump,
        out=str(out),
        min_links=args.min_links,
        processes=args.threads,
        pages_per_shard=20,  # the 106-article sample in 6 shards, so both processes get work
        parallel="xnli",
        types=args.types,
        splitter=args.splitter,
        seed=args.seed,
        data_root=args.data_root or "",
        max_rows=args.max_rows,
    )
    return out, build_entity_pairs(config, log=print)


def entity_vectors(args, dump: str) -> tuple[str, dict]:
    from wikipedia2vec import Wikipedia2Vec

    from sentkit.training_data.ease.entity_vectors import train_wikipedia2vec

    clock = time.perf_counter()
    path = train_wikipedia2vec(
        dump, dim=args.w2v_dim, iterations=args.w2v_iterations, processes=args.threads, seed=args.seed
    )
    model = Wikipedia2Vec.load(str(path))
    neighbours = {}
    for title in ("Oxygen", "Aristotle", "Algeria"):
        entity = model.get_entity(title)
        if entity is not None:
            neighbours[title] = [
                (getattr(item, "title", getattr(item, "text", "")), round(float(score), 3))
                for item, score in model.most_similar(entity, 6)[1:]
            ]
    return str(path), {"seconds": round(time.perf_counter() - clock, 1), "neighbours": neighbours}


def tasks(args) -> list:
    from sentkit.tasks import get_task
    from sentkit.tasks.clustering import mewsc16

    common = {"data_root": args.data_root or None, "batch_size": args.eval_batch_size}
    chosen = [mewsc16(max_per_lang=args.mewsc_rows, name=f"mewsc16-{args.mewsc_rows}", **common)]
    for name in ENGLISH_STC:
        task = get_task(name, **common)
        chosen.append(dataclasses.replace(task, max_per_subset=args.stc_rows, name=f"{name}-{args.stc_rows}"))
    chosen.append(get_task("sts17", langs=[x for x in args.sts17_langs.split(",") if x] or None, **common))
    if args.tatoeba_langs != "none":
        langs = [x for x in args.tatoeba_langs.split(",") if x] or None
        chosen.append(get_task("tatoeba", langs=langs, **common))
    return chosen


def score(encoder, task_list) -> dict:
    out = {}
    for task in task_list:
        clock = time.perf_counter()
        result = task.evaluate(encoder)
        out[task.name] = {
            "main_score": round(float(result["main_score"]), 2),
            "seconds": round(time.perf_counter() - clock, 1),
        }
        print(f"  {task.name}: {out[task.name]['main_score']:.2f} ({out[task.name]['seconds']} s)")
    return out


def train_one(args, name: str, objective: str, data, options: str = "") -> Path:
    from sentkit.training import TrainConfig, train

    config = TrainConfig(
        model=args.model,
        objective=objective,
        output_dir=str(Path(args.out) / "runs" / name),
        max_length=args.max_length,
        batch_size=args.batch_size,
        lr=args.lr,
        max_steps=args.max_steps,
        eval_task="",
        save_steps=max(args.max_steps, 1),
        save_total_limit=1,
        logging_steps=max(1, min(10, args.max_steps)),
        seed=args.seed,
        objective_options=options,
        overwrite=True,
        progress=False,
    )
    return train(config, data=data) / "best"


def main(argv=None) -> dict:
    import torch

    from datasets import Dataset
    from sentkit.atomic import atomic_write_json
    from sentkit.encoders import load_encoder
    from sentkit.provenance import machine_info, package_versions, seed_everything
    from sentkit.training_data.ease.entity_pairs import read_entity_pairs

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    t0 = time.perf_counter()
    dump = args.dump
    if not dump:
        from gensim.test.utils import datapath

        dump = datapath(GENSIM_SAMPLE)
    timings = {}
    clock = time.perf_counter()
    pairs, manifest = build_pairs(args, dump)
    timings["build_s"] = round(time.perf_counter() - clock, 1)
    if args.no_wikipedia2vec:
        vectors, w2v = "", {"skipped": True}
    elif args.entity_vectors:
        vectors, w2v = args.entity_vectors, {"file": args.entity_vectors}
    else:
        vectors, w2v = entity_vectors(args, dump)
        timings["wikipedia2vec_s"] = w2v["seconds"]
    rows = read_entity_pairs(pairs)
    sentences = Dataset.from_dict({"anchor": rows["anchor"], "lang": rows["lang"]})
    extra = f",{args.objective_options}" if args.objective_options else ""
    entity_opts = f"entities={pairs}" + (f",entity_vectors={vectors}" if vectors else "") + extra

    runs = {
        "start": None,
        "simcse-unsup": ("simcse-unsup", sentences, ""),
        "ease": ("ease", rows, entity_opts),
    }
    if not args.no_ablations:
        runs["ease-no-hard-negatives"] = ("ease", rows, entity_opts + ",hard_negatives=false")
        if vectors:
            runs["ease-random-entity-init"] = ("ease", rows, f"entities={pairs}{extra}")
        runs["ease-no-dropout-loss"] = ("ease", rows, entity_opts + ",dropout_loss=false")
    task_list = tasks(args)
    scores: dict[str, dict] = {}
    for name, spec in runs.items():
        print(f"== {name}")
        clock = time.perf_counter()
        model = args.model if spec is None else train_one(args, name, *spec)
        trained_s = round(time.perf_counter() - clock, 1)
        evaluated = task_list if name in ("start", "simcse-unsup", "ease") else task_list[:1]
        scores[name] = {"train_s": trained_s, "scores": score(load_encoder(str(model)), evaluated)}
    timings["total_s"] = round(time.perf_counter() - t0, 1)
    results = {
        "example": "train_ease",
        "question": "Does entity-aware contrastive learning (EASE) beat unsupervised SimCSE on the same "
        "sentences, from multilingual e5-small, on clustering / STS17 / Tatoeba?",
        "data": {k: manifest[k] for k in ("rows", "rows_by_lang", "entities", "entity_types", "type_counts")},
        "wikipedia2vec": w2v,
        "runs": scores,
        "paper": PAPER,
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "timings": timings,
        "versions": package_versions(),
        "machine": machine_info(),
        "threads_env": os.environ.get("OMP_NUM_THREADS"),
    }
    atomic_write_json(Path(args.out) / "results.json", results)
    print(f"results written to {Path(args.out) / 'results.json'} ({timings['total_s']} s)")
    return results


if __name__ == "__main__":
    main()
