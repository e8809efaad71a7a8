"""EASE (Nishikawa et al., NAACL 2022) at CPU scale, end to end from a real Wikipedia dump, over several seeds.

1. `sentkit build ease` on gensim's English dump sample (106 articles): (sentence, entity, hard-negative
   entity) rows, entity types from spaCy NER of the anchors (offline stand-in for Wikidata), plus the
   XNLI dev translations of every English sentence naming an entity (14 more languages).
2. Wikipedia2Vec trained on the same dump (50 dims, 10 iterations; cached) initialises the entity table.
   The rows and the vectors are built once (`--data-seed`); the seeds vary the training only.
3. From the multilingual e5-small port: the untrained start (scored once); per seed, unsupervised SimCSE
   and EASE on the same sentences, steps and seed, and the Table 7 ablations (no hard negatives, random
   entity init, no dropout loss). SimCSE, EASE and the start are scored on MewsC-16 (100-sentence sample
   per language), the five English short-text clustering sets (seeded samples), STS17 and Tatoeba; the
   ablations on MewsC-16 and STS17 (Table 7 measures them on STS17). No model selection: the model after
   the last step is scored, so no test set steers training.

    python examples/train_ease.py            # 3 seeds; ~30 min a seed on 2 idle cores, plus ~10 min once
    python examples/train_ease.py --quick    # pipeline check: 1 seed, tiny samples, 4 steps, no ablations

Writes <out>/results.json (every row per seed, the summary, settings, timings, versions), each model's
sentkit results JSON under <out>/evals/, and <out>/table.md: mean and spread over seeds, every score with
its 95% CI, and EASE against SimCSE (and each ablation) as paired differences, the paper's cells beside.
A seed already complete in results.json is skipped, so the seeds can run in separate sessions.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from before_after import add_run_args  # noqa: E402 - the examples' shared flags
from seeds import Claim, Row, SeedRuns, drop_checkpoints, seeds_of, settings_of, train_log  # noqa: E402 - seeds and paired comparisons

ENGLISH_STC = ("agnews", "biomedical", "searchsnippets", "stackoverflow", "tweet")
GENSIM_SAMPLE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
ROWS = (
    Row("start", "start (untrained)", seeded=False),
    Row("simcse-unsup", "unsup. SimCSE (same sentences)"),
    Row("ease", "EASE"),
    Row("ease-no-hard-negatives", "EASE w/o hard negatives"),
    Row("ease-random-entity-init", "EASE w/o Wikipedia2Vec"),
    Row("ease-no-dropout-loss", "EASE w/o dropout loss"),
)
ABLATIONS = ROWS[3:]
# The paper's cells (shared/papers/ease.txt; ease-with-appendix.txt for Tables 7 and 15): multilingual
# models (mBERT / XLM-R, 18-language Wikipedia) on the multilingual sets, EASE-BERT on English STC.
STC_CELLS = {  # Table 15, EASE-BERT vs SimCSE-BERT (English short-text clustering accuracy)
    "agnews": (85.8, 74.4),
    "biomedical": (36.2, 34.3),
    "searchsnippets": (71.7, 64.3),
    "stackoverflow": (68.1, 49.6),
    "tweet": (54.8, 52.1),
}
ABLATION_CELLS = {  # Table 7, mSTS (STS17) average: full model 57.2 (mBERT) / 57.1 (XLM-R)
    "ease-no-dropout-loss": ("w/o self-supervised CL", 49.3, 53.1),
    "ease-no-hard-negatives": ("w/o hard negative", 53.8, 52.7),
    "ease-random-entity-init": ("w/o Wikipedia2Vec", 52.1, 54.3),
}
CHANGES = (
    "With the defaults (3,197 rows over 203 entities from 106 articles, tens of steps, lambda = 0.01) the entity "
    "term is a small part of the loss, and e5-small-m was already trained contrastively on about a billion "
    "multilingual pairs, so a few dropout steps have little left to change. What the paper had and this run "
    "lacks: 1M English pairs or 50k pairs in each of 18 languages from full dumps (`--min-links 10`, "
    "Wikidata types), a plain pretrained start (mBERT / XLM-R; `--model` with a local copy), an epoch of "
    "training (`--max-steps`), and an entity table trained long enough to leave its chance loss (see the "
    "`chance_entity` column of each run's train log; `--objective-options entity_lr=...` chosen on a dev "
    "split, never on these test sets)."
)


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
    p.add_argument("--data-seed", type=int, default=42, help="seed of the row sample and Wikipedia2Vec")
    p.add_argument(
        "--quick", action="store_true", help="1 seed, tiny samples and 4 steps: checks the pipeline"
    )
    add_run_args(p, out="runs/ease-example", seeds=True)
    args = p.parse_args(argv)
    if args.quick or args.smoke:
        args.max_rows, args.max_steps, args.batch_size, args.stc_rows = 256, 4, 16, 60
        args.mewsc_rows, args.tatoeba_langs = 30, "none"
        args.sts17_langs = args.sts17_langs or "en-en"
        args.types, args.splitter = "category", "rule"
        args.no_ablations = True
    return args


# what may differ between two builds of the same rows: where they are written, how many processes, and
# where the dump and the data lie (the dump is matched by its file name instead)
MACHINE_FIELDS = ("out", "processes", "data_root", "dump")


def matching_build(manifest_file: Path, config) -> dict | None:
    """The manifest in `manifest_file` when it records a build of the same rows as `config` (so a later
    session, or another machine given the folder, trains on exactly those rows instead of rebuilding them);
    None otherwise."""
    if not manifest_file.is_file():
        return None
    import json

    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    built, wanted = manifest.get("config", {}), dataclasses.asdict(config)
    same = all(built.get(k) == v for k, v in wanted.items() if k not in MACHINE_FIELDS)
    return manifest if same and Path(built.get("dump", "")).name == Path(config.dump).name else None


def build_pairs(args, dump: str) -> tuple[Path, dict]:
    """The EASE rows: built once per settings into <out>/pairs, reused when that build matches."""
    from sentkit.training_data.ease.entity_pairs import MANIFEST, EaseBuildConfig, build_entity_pairs

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
        seed=args.data_seed,
        data_root=args.data_root or "",
        max_rows=args.max_rows,
    )
    manifest = matching_build(out / MANIFEST, config)
    if manifest is not None:
        print(f"reusing the rows built in {out}", flush=True)
        return out, manifest
    return out, build_entity_pairs(config, log=print)


def default_dump(args) -> str:
    """--dump, or gensim's English sample."""
    if args.dump:
        return args.dump
    from gensim.test.utils import datapath

    return datapath(GENSIM_SAMPLE)


def entity_vector_file(args, dump: str) -> tuple[str, dict]:
    """The file initialising the entity table ("" = random init) and what to record of it."""
    if args.no_wikipedia2vec:
        return "", {"skipped": True}
    if args.entity_vectors:
        return args.entity_vectors, {"file": args.entity_vectors}
    return entity_vectors(args, dump)


def entity_vectors(args, dump: str) -> tuple[str, dict]:
    from wikipedia2vec import Wikipedia2Vec

    from sentkit.training_data.ease.entity_vectors import train_wikipedia2vec

    clock = time.perf_counter()
    path = train_wikipedia2vec(
        dump, dim=args.w2v_dim, iterations=args.w2v_iterations, processes=args.threads, seed=args.data_seed
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


def all_tasks(args) -> list:
    """Fresh task objects (an evaluation consumes them): MewsC-16, the English STC sets, STS17, Tatoeba."""
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


def ablation_tasks(args) -> list:
    """MewsC-16 and STS17: Table 7 measures the ablations on STS17 (mSTS) for the multilingual models."""
    return [t for t in all_tasks(args) if t.name in (f"mewsc16-{args.mewsc_rows}", "sts17")]


def claims(args) -> list[Claim]:
    """EASE against SimCSE on the same sentences (the main claim), against its start, and each ablation."""
    mewsc, stc = f"mewsc16-{args.mewsc_rows}", args.stc_rows
    paper = {
        mewsc: "Table 3 (MewsC-16, mean of 16 languages): EASE-mBERT 36.0 vs SimCSE 34.1 (+1.9); "
        "EASE-XLM-R 35.4 vs SimCSE 31.8 (+3.6)",
        "sts17": "Table 2 (STS17, mean of 10 pairs): EASE-mBERT 57.2 vs SimCSE 50.9 (+6.3); "
        "EASE-XLM-R 57.1 vs SimCSE 54.1 (+3.0)",
        "tatoeba": "Table 4 (Tatoeba, EASE's 16 languages): EASE-mBERT 56.9 vs SimCSE 41.4 (+15.5); "
        "EASE-XLM-R 69.4 vs SimCSE 63.5 (+5.9)",
    }
    # the paper's B - A for "underpowered": the smaller of its two backbones where it reports two
    effect = {mewsc: 1.9, "sts17": 3.0, "tatoeba": 5.9}
    for name, (ease, simcse) in STC_CELLS.items():
        paper[f"{name}-{stc}"] = (
            f"Table 15 (English): EASE-BERT {ease} vs SimCSE-BERT {simcse} ({ease - simcse:+.1f})"
        )
        effect[f"{name}-{stc}"] = round(ease - simcse, 2)
    vanilla = {
        mewsc: "Table 3: EASE-mBERT 36.0 vs vanilla mBERT 33.0; EASE-XLM-R 35.4 vs vanilla 27.0 (their start "
        "is a plain pretrained encoder; ours was trained contrastively)",
        "sts17": "Table 2: 57.2 vs vanilla 35.4; 57.1 vs 25.0 (a plain pretrained start)",
        "tatoeba": "Table 4: 56.9 vs vanilla 43.4; 69.4 vs 27.2 (a plain pretrained start)",
    }
    out = [
        Claim(
            "ease",
            "simcse-unsup",
            "EASE beats unsup. SimCSE on the same sentences (main claim)",
            paper,
            effect=effect,
        ),
        Claim("ease", "start", "EASE improves on its start", vanilla, tasks=(mewsc, "sts17", "tatoeba")),
    ]
    for row, (name, mbert, xlmr) in ABLATION_CELLS.items():
        cells = {
            "sts17": f"Table 7 (mSTS): full EASE-mBERT 57.2 vs {name} {mbert}; EASE-XLM-R 57.1 vs {xlmr}",
            mewsc: "not measured (Table 7 reports STS only)",
        }
        out.append(Claim("ease", row, f"each component helps: EASE beats EASE {name}", cells))
    return out


def train_one(args, name: str, seed: int, objective: str, data, options: str = "") -> tuple[Path, dict]:
    """Train one row at `seed` (a finished run in its folder is reused); the model folder and a summary."""
    import json

    from sentkit.datasets.columns import ANCHOR, GROUP
    from sentkit.stats.items import digest_rows
    from sentkit.training import TrainConfig, train

    config = TrainConfig(
        model=args.model,
        objective=objective,
        output_dir=str(Path(args.out) / "runs" / f"seed{seed}" / name),
        max_length=args.max_length,
        batch_size=args.batch_size,
        lr=args.lr,
        max_steps=args.max_steps,
        eval_task="",
        save_steps=max(args.max_steps, 1),
        save_total_limit=1,
        logging_steps=max(1, min(10, args.max_steps)),
        seed=seed,
        objective_options=options,
        progress=False,
    )
    clock = time.perf_counter()
    run_dir = train(config, data=data)
    trained = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    info = {
        "run_dir": str(run_dir),
        "objective": objective,
        "objective_options": options,
        "rows": len(data),
        "columns": data.column_names,
        # the sentences and groups trained on: SimCSE's and EASE's must be equal
        "sentences_sha256": digest_rows(*(data[c] for c in (ANCHOR, GROUP) if c in data.column_names)),
        "train_loss": (trained.get("train") or {}).get("train_loss"),
        "train_s": round(time.perf_counter() - clock, 1),
        "train_log": train_log(run_dir),  # each loss term beside its chance value (entity: ln N x lambda)
    }
    return run_dir / "best", info


def main(argv=None) -> dict:
    import torch

    from sentkit.datasets.columns import ANCHOR, GROUP, LANG
    from sentkit.provenance import seed_everything
    from sentkit.training_data.ease.entity_pairs import read_entity_pairs

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    seed_everything(args.data_seed)
    seeds = seeds_of(args, args.quick or args.smoke)
    t0 = time.perf_counter()
    rows = [r for r in ROWS if not (args.no_ablations and r in ABLATIONS)]
    if args.no_wikipedia2vec and not args.entity_vectors:  # EASE itself starts from random vectors then
        rows = [r for r in rows if r.key != "ease-random-entity-init"]
    runs = SeedRuns(
        args.out,
        example="train_ease",
        question="Does entity-aware contrastive learning (EASE) beat unsupervised SimCSE on the same "
        f"sentences, from {args.model}, on clustering / STS17 / Tatoeba?",
        settings=settings_of(args, ignore=("no_ablations",)),
        rows=rows,
        claims=claims(args),
        notes=[
            f"Training: {args.max_steps} steps of {args.batch_size} rows, lr {args.lr}, the same rows, "
            "steps and seed for SimCSE (the rows' sentences) and EASE; no model selection (the last step "
            "is scored), so no test set steers training.",
            "The paper's cells are from models trained on full Wikipedia (mBERT / XLM-R, 18 languages; "
            "EASE-BERT for English): compare directions, not levels.",
        ],
        changes=CHANGES,
    )
    todo = runs.pending(seeds, [r.key for r in rows])
    if not runs.done("start"):
        runs.score("start", None, args.model, partial(all_tasks, args), data_root=args.data_root)
    if todo:
        dump = default_dump(args)
        clock = time.perf_counter()
        pairs, manifest = build_pairs(args, dump)
        build_s = round(time.perf_counter() - clock, 1)
        vectors, w2v = entity_vector_file(args, dump)
        keys = ("rows", "rows_by_lang", "entities", "entity_types", "type_counts")
        runs.note("data", {**{k: manifest[k] for k in keys}, "build_s": build_s})
        runs.note("wikipedia2vec", w2v)
        data = read_entity_pairs(pairs)
        # SimCSE's rows: EASE's sentences, order and groups (so both mask the same in-batch pairs),
        # without the entity columns
        sentences = data.select_columns([c for c in (ANCHOR, LANG, GROUP) if c in data.column_names])
        extra = f",{args.objective_options}" if args.objective_options else ""
        entity_opts = f"entities={pairs}" + (f",entity_vectors={vectors}" if vectors else "") + extra
        specs = {
            "simcse-unsup": ("simcse-unsup", sentences, ""),
            "ease": ("ease", data, entity_opts),
            "ease-no-hard-negatives": ("ease", data, entity_opts + ",hard_negatives=false"),
            "ease-random-entity-init": ("ease", data, f"entities={pairs}{extra}"),
            "ease-no-dropout-loss": ("ease", data, entity_opts + ",dropout_loss=false"),
        }
    for seed in todo:  # seeds outer: a run cut short still has every row at its first seeds
        for row in rows:
            if not row.seeded or runs.done(row.key, seed):
                continue
            print(f"== {row.label}, seed {seed}", flush=True)
            model, info = train_one(args, row.key, seed, *specs[row.key])
            tasks = partial(ablation_tasks if row in ABLATIONS else all_tasks, args)
            runs.score(row.key, seed, model, tasks, data_root=args.data_root, train=info)
            if not args.keep_checkpoints:
                drop_checkpoints(info["run_dir"])
    runs.note(
        "last_session",
        {
            "seeds_trained": todo,
            "total_s": round(time.perf_counter() - t0, 1),
            "threads_env": os.environ.get("OMP_NUM_THREADS"),
        },
    )
    return runs.finish()


if __name__ == "__main__":
    main()
