"""AMR retrofitting end to end on CPU (Cai et al., EMNLP 2022): text-only vs. retrofitted `muse-m` / `e5-small-m`,
over several seeds of the AMR encoder, with the paper's table cells beside.

1. Per seed, train the AMR encoder: XNLI dev English + JSICK train (Japanese) triplets, parsed by the offline
   rule parser, mixed as in Algorithm 1 (an English slot keeps its text with q = 0.5, other languages are
   always graphs), supervised SimCSE on MiniLM with its own (mean) pooling and no head, the vocabulary
   extended by frequent relation/frame tokens. The seed drives the mixing and the training; the triplets
   are the same. Or take one trained encoder with `--amr-model DIR` (then one seed).
2. Score, with sentkit's evaluation (95% CIs and the per-item values of a paired comparison), on the tasks
   in languages the parser covers (English, Japanese): STS-B test, STS17 en-en (Table 2), XNLI en, PAWS-X
   en/ja, QAM en, MARC en/ja (Tables 6-9):
   - once, as they do not depend on the AMR encoder: text only (s), and the control s/|s| concat
     MiniLM(text)/|.| (the AMR encoder's start model on the *text*, so that a gain from ensembling with
     MiniLM is not mistaken for a gain from the graphs), STS only;
   - per seed: the paper's s/|s| concat h/|h| (the default) and the weighted [s/|s| ; w h/|h|] with w chosen
     on STS-B dev (`--weight-dev`; never a test set) on every task; the integration ablation (h alone,
     s + h, s concat h, s/|s| + h/|h|) on STS.
3. Each retrofitted row is set against text only on the same test items (per seed and pooled over the
   seeds, paired bootstrap), the paper's cells beside (amr_paper.py); s/|s| concat h/|h| also against the
   control and the other integrations. Writes `<out>/results.json` (every row per seed, the summary, the
   paper's cells beside ours under extra.paper_beside_ours), each row's sentkit results file under
   `<out>/evals/`, and `<out>/table.md`. A seed already complete in results.json is skipped.

    python examples/amr_retrofit.py --quick      # one seed, tiny training, 100-row samples: minutes
    python examples/amr_retrofit.py              # seeds 42,43,44; transfer test sets sampled

Time on 2 CPU cores: the full run (3 seeds) took 30 min: the text-only and control rows about 3.5 min once,
then 8-10 min a seed (AMR encoder training and scoring). Each seed trains its own AMR encoder; the text-only
and control rows are scored in the first session only.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from pathlib import Path

import numpy as np
from amr_paper import PAPER_MODELS, paper_record, paper_value, retrofit_claim_text, retrofit_effect
from seeds import (
    Claim,
    Row,
    SeedRuns,
    add_seed_args,
    drop_checkpoints,
    model_label,
    parse_seeds,
    seeds_of,
    settings_of,
)

from sentkit.encoders.retrofit import DEV_WEIGHTS

TEXT_MODELS = ("muse-m", "e5-small-m")
# (task, languages the parser covers); STS17 has no Japanese pair, so en-en is the only covered one
STS_TASKS = (("stsb", None), ("sts17", ["en-en"]))
TRANSFER_TASKS = (("xnli", ["en"]), ("pawsx", ["en", "ja"]), ("qam", ["en"]), ("marc", ["en", "ja"]))
QUICK_STS = (("sts17", ["en-en"]),)
QUICK_TRANSFER = (("xnli", ["en"]), ("pawsx", ["ja"]))
ABLATION = ("sum", "concat", "sum_norm")  # scored on STS; h alone is one row shared by the text models
# row kind -> label (no "|": the labels go into markdown tables); text only and the control are scored once
KINDS = {
    "s": "text only (s)",
    "concat_norm": "s/‖s‖ ⊕ h/‖h‖ (the paper's)",
    "weighted": "s/‖s‖ ⊕ w·h/‖h‖ (w on dev)",
    "sum": "s + h",
    "concat": "s ⊕ h",
    "sum_norm": "s/‖s‖ + h/‖h‖",
    "control": "control: s/‖s‖ ⊕ {control}(text)/‖.‖",
}
INTEGRATION = "sec. 4 'Integration': s/‖s‖ ⊕ h/‖h‖ 'generally works best' of the four; no cells printed"
CHANGES = (
    "A neural AMR parser (`parser='amrlib'` with a user's model; the paper's multilingual parser is of that "
    "kind) instead of the 53-Smatch rule parser, the paper's training scale (parsed NLI training sets, "
    "batch 512, lr 5e-5, BERT-base from [CLS]) instead of 947 triplets on MiniLM, and parsers for the other "
    "languages of the paper's tables. Choose anything on STS-B dev, never on these test sets."
)


class CachedEncoder:
    """Encodes each distinct sentence once across all tasks, rows and seeds (s and h are reused)."""

    def __init__(self, encoder) -> None:
        self.encoder = encoder
        self.name = encoder.name
        self.cache: dict[str, np.ndarray] = {}
        self.seconds = 0.0

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        todo = list(dict.fromkeys(s for s in sentences if s not in self.cache))
        if todo:
            start = time.perf_counter()
            vectors = self.encoder.encode(todo, batch_size=batch_size)
            self.seconds += time.perf_counter() - start
            self.cache.update(zip(todo, np.asarray(vectors, dtype=np.float32)))
        return np.stack([self.cache[s] for s in sentences])  # (n, dim)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="one seed, tiny training and 100-row samples (minutes)"
    )
    ap.add_argument("--out", default="results/amr_retrofit")
    ap.add_argument("--amr-model", default="", help="a trained AMR encoder folder (skips training; one seed)")
    ap.add_argument("--text-models", default=",".join(TEXT_MODELS))
    add_seed_args(ap)
    ap.add_argument("--max-steps", type=int, default=-1, help="AMR encoder steps (-1 = one epoch)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument(
        "--pooling",
        default="auto",
        choices=("auto", "cls", "mean"),
        help="AMR encoder pooling: auto = the base model's own (mean for MiniLM)",
    )
    ap.add_argument(
        "--mlp-head",
        action="store_true",
        help="train through SimCSE's MLP head over [CLS], dropped afterwards (needs --pooling cls; not the paper's)",
    )
    ap.add_argument(
        "--text-langs",
        default="en",
        help="languages whose slots may keep their text (Algorithm 1: en; 'all' = every language)",
    )
    ap.add_argument(
        "--weight-dev",
        default="stsb-dev",
        help="dev task that picks w of the weighted concatenation (a dev split, never a test set)",
    )
    ap.add_argument(
        "--weights",
        default=",".join(f"{w:g}" for w in DEV_WEIGHTS),
        help="comma list of weights w tried on --weight-dev",
    )
    ap.add_argument("--max-per-lang", type=int, default=500, help="seeded sample of each transfer test set")
    ap.add_argument("--max-train", type=int, default=1000, help="seeded sample of each English training set")
    ap.add_argument(
        "--control-model",
        default="minilm-en",
        help="text encoder concatenated with s as a control for the AMR side (empty = none)",
    )
    ap.add_argument("--tasks", default="", help="comma list restricting the tasks (stsb,sts17,xnli,...)")
    ap.add_argument("--data-root", default="")
    args = ap.parse_args(argv)
    if args.quick:
        args.max_per_lang, args.max_train = 100, 300
    if args.amr_model and args.seeds and len(args.seeds) > 1:
        ap.error("--amr-model fixes the AMR encoder, so the seeds would score it again: give one seed")
    if args.amr_model and not args.seeds:
        args.seeds = parse_seeds("42")
    return run(args)


def task_lists(args) -> tuple[tuple, tuple]:
    """(STS tasks, transfer tasks) for this run: --quick's short lists, or those --tasks keeps."""
    sts, transfer = (QUICK_STS, QUICK_TRANSFER) if args.quick else (STS_TASKS, TRANSFER_TASKS)
    if args.tasks:
        keep = set(args.tasks.split(","))
        sts = tuple(t for t in STS_TASKS if t[0] in keep)
        transfer = tuple(t for t in TRANSFER_TASKS if t[0] in keep)
    return sts, transfer


def make_tasks(args, specs) -> list:
    """Fresh task objects (one evaluation each) for (name, languages) pairs."""
    from sentkit.tasks import get_task

    tasks = []
    for name, langs in specs:
        options = {}
        if name in dict(TRANSFER_TASKS):
            options = {"max_per_lang": args.max_per_lang, "max_train": args.max_train}
        tasks.append(get_task(name, langs=langs, data_root=args.data_root or None, **options))
    return tasks


def declare(models: list[str], control: str) -> tuple[list[Row], list[Claim]]:
    """The rows (per text model, plus h alone) and the claims: each retrofitted row against text only,
    then the paper's integration choice against the control and the other integrations."""
    rows, claims = [Row("h", "h alone (AMR encoder)")], []
    control = model_label(control) if control else ""
    for model in models:
        label = model_label(model)
        kinds = ["s", "concat_norm", "weighted", *ABLATION] + (["control"] if control else [])
        rows += [
            Row(
                f"{label}/{k}",
                f"{label}: {KINDS[k].format(control=control)}",
                seeded=k not in ("s", "control"),
            )
            for k in kinds
        ]
        main = f"{label}/concat_norm"
        paper = {task: retrofit_claim_text(task, label) for task, _ in (*STS_TASKS, *TRANSFER_TASKS)}
        effects = {task: retrofit_effect(task, label) for task, _ in (*STS_TASKS, *TRANSFER_TASKS)}
        says = "retrofitting with AMR improves the text encoder (main claim)"
        effect = {task: e for task, e in effects.items() if e is not None}
        claims.append(Claim(main, f"{label}/s", says, paper, effect=effect))
        claims.append(
            Claim(
                f"{label}/weighted",
                f"{label}/s",
                "the weighted concatenation (w on STS-B dev; ours) improves the text encoder",
                {"*": "not in the paper (its combination is w = 1)"},
            )
        )
        for kind in ABLATION:
            claims.append(
                Claim(
                    f"{label}/{kind}",
                    f"{label}/s",
                    f"{KINDS[kind]} improves the text encoder",
                    {"*": f"not in the paper ({INTEGRATION})"},
                )
            )
        if control:
            claims.append(
                Claim(
                    f"{label}/control",
                    f"{label}/s",
                    f"a second text encoder ({control}) improves the text encoder (our control)",
                    {"*": "not in the paper: it has no such control"},
                )
            )
            claims.append(
                Claim(
                    main,
                    f"{label}/control",
                    f"the graphs add more than {control} on the text does (our control)",
                    {"*": "not in the paper: it has no such control"},
                )
            )
        claims.append(
            Claim(main, "h", "s/‖s‖ ⊕ h/‖h‖ beats h alone", {"*": "not in the paper (no h-alone row)"})
        )
        for kind in ABLATION:
            claims.append(
                Claim(
                    main, f"{label}/{kind}", "s/‖s‖ ⊕ h/‖h‖ beats the other integrations", {"*": INTEGRATION}
                )
            )
    return rows, claims


def run(args) -> dict:
    from sentkit.corpus.engine_local import place_encoder
    from sentkit.encoders import load_encoder
    from sentkit.encoders.retrofit import RetrofitEncoder, choose_concat_weight
    from sentkit.tasks import get_task

    out = Path(args.out)
    seeds = seeds_of(args, args.quick)
    models = [m for m in args.text_models.split(",") if m]
    sts, transfer = task_lists(args)
    rows, claims = declare(models, args.control_model)
    runs = SeedRuns(
        out,
        example="amr_retrofit",
        question="Does concatenating a sentence's AMR-graph vector h with its text vector s (Cai et al. 2022) "
        "raise the text encoder's scores, and more than a second text encoder would?",
        settings=settings_of(args, ignore=("text_models",)),
        rows=rows,
        claims=claims,
        notes=[
            "The AMR encoder is trained once per seed (the seed drives Algorithm 1's mixing and the "
            "training); text only and the control do not depend on it and are scored once.",
            f"w of the weighted row is chosen per seed and text model on {args.weight_dev}; the test sets "
            "never steer a choice. Transfer tasks: logistic regression on frozen vectors, "
            f"{args.max_train} English dev rows to train, {args.max_per_lang} test rows per language.",
            "The paper's cells: amr_paper.py and extra.paper in results.json (table, row, column).",
        ],
        changes=CHANGES,
    )
    runs.note("paper", paper_record())
    t0 = time.perf_counter()
    sts_only = partial(make_tasks, args, sts)
    every = partial(make_tasks, args, (*sts, *transfer))
    weights = [float(w) for w in args.weights.split(",") if w]
    text: dict[str, CachedEncoder] = {}
    amr_seconds: dict[str, float] = {}  # seed -> time spent encoding with its AMR encoder (parsing included)
    root = args.data_root or None

    def text_encoder(model: str) -> CachedEncoder:
        if model not in text:
            text[model] = CachedEncoder(place_encoder(load_encoder(model), "auto")[0])
        return text[model]

    for model in models:  # rows that do not depend on the AMR encoder: once
        label = model_label(model)
        if not runs.done(f"{label}/s"):
            runs.score(f"{label}/s", None, text_encoder(model), every, data_root=root)
        if args.control_model and not runs.done(f"{label}/control"):
            control = text_encoder(args.control_model)
            name = f"{label}+{args.control_model}-text"
            encoder = RetrofitEncoder(text_encoder(model), control, "concat_norm", name=name)
            runs.score(f"{label}/control", None, encoder, sts_only, data_root=root)

    skipped = runs.data["extra"].get("skipped", {})
    seeded = [r.key for r in rows if r.seeded and r.key not in skipped]
    for seed in runs.pending(seeds, seeded):
        amr, training = train_or_load_amr(args, out, seed)
        amr.transformer = place_encoder(amr.transformer, "auto")[0]
        h = CachedEncoder(amr)
        if not runs.done("h", seed):
            runs.score("h", seed, h, sts_only, train=training, data_root=root)
        for model in models:
            label, s = model_label(model), text_encoder(model)
            if not runs.done(f"{label}/concat_norm", seed):
                runs.score(
                    f"{label}/concat_norm", seed, RetrofitEncoder(s, h, "concat_norm"), every, data_root=root
                )
            if not runs.done(f"{label}/weighted", seed):
                dev = get_task(args.weight_dev, data_root=root)
                choice = choose_concat_weight(s, h, dev, weights)
                dev_weight = {
                    "task": choice.task,
                    "weight": choice.weight,
                    "combine": choice.combine,
                    "curve": {f"{w:g}": score for w, score in choice.curve.items()},
                }
                print(f"{label}, seed {seed}: w = {choice.weight:g} on {choice.task}", flush=True)
                encoder = RetrofitEncoder(s, h, choice.combine)
                runs.score(
                    f"{label}/weighted",
                    seed,
                    encoder,
                    every,
                    train={"dev_weight": dev_weight},
                    data_root=root,
                )
            for kind in ABLATION:
                key = f"{label}/{kind}"
                if key in skipped or runs.done(key, seed):
                    continue
                if kind.startswith("sum") and amr.dim != s.encode(["x"]).shape[1]:
                    skipped[key] = (
                        f"text dim {s.encode(['x']).shape[1]} != AMR dim {amr.dim}: s + h undefined"
                    )
                    runs.note("skipped", skipped)
                    continue
                runs.score(key, seed, RetrofitEncoder(s, h, kind), sts_only, data_root=root)
        amr_seconds[str(seed)] = round(h.seconds, 1)
        if training.get("trained") and not args.keep_checkpoints:
            drop_checkpoints(Path(training["amr_model"]).parent)
    runs.note(
        "last_session",
        {
            "total_s": round(time.perf_counter() - t0, 1),
            "text_encode_s": {m: round(e.seconds, 1) for m, e in text.items()},
            "amr_encode_s": amr_seconds,
        },
    )
    data = runs.finish(more=partial(beside_markdown, models=models, rows=runs.rows))
    runs.note("paper_beside_ours", beside_ours(data, models))
    return runs.data


def train_or_load_amr(args, out: Path, seed: int):
    """The AMR encoder of `seed`: --amr-model, or one trained into <out>/amr_encoder/seed<seed> (reused if a
    finished training is there)."""
    from sentkit.amr.encoder import AmrEncoder
    from sentkit.amr.training import AmrTrainConfig, train_amr_encoder

    if args.amr_model:
        return AmrEncoder.from_pretrained(args.amr_model), {"amr_model": args.amr_model, "trained": False}
    folder = out / "amr_encoder" / f"seed{seed}"
    record, best = folder / "amr_training.json", folder / "run" / "best"
    if record.is_file() and best.is_dir():
        info = json.loads(record.read_text(encoding="utf-8"))
        info.update(amr_model=str(best), trained=True, reused=True)
        return AmrEncoder.from_pretrained(best), info
    text_langs = None if args.text_langs == "all" else tuple(x for x in args.text_langs.split(",") if x)
    config = AmrTrainConfig(
        seed=seed,
        batch_size=args.batch_size,
        max_steps=args.max_steps,
        pooling=args.pooling,
        mlp_head=args.mlp_head,
        text_langs=text_langs,
    )
    if args.quick:
        config.max_examples, config.max_steps, config.batch_size = 64, 4, 16
    start = time.perf_counter()
    best = train_amr_encoder(config, folder)
    info = json.loads(record.read_text(encoding="utf-8"))
    info.update(amr_model=str(best), trained=True, train_s=round(time.perf_counter() - start, 1))
    return AmrEncoder.from_pretrained(best), info


# ---- the paper's cells beside ours -----------------------------------------------------------------------
def _mean_score(data: dict, row: str, task: str, key: str) -> tuple[float | None, int]:
    """Our score `key` of `task` (a language, or main_score) for `row`: the mean over its seeds, and n."""
    seeds = data["summary"]["rows"].get(row, {}).get(task, {}).get("seeds", {})
    values = [s["main_score"] if key == "main_score" else s["all"].get(key) for s in seeds.values()]
    values = [v for v in values if v is not None]
    return (float(np.mean(values)) if values else None), len(values)


def beside_ours(data: dict, models: list[str]) -> list[dict]:
    """Per text model, task and language we score: ours (text only, retrofitted, weighted; the mean over
    seeds) and the paper's cells for that model, if it has the model."""
    lines = []
    for model in models:
        label = model_label(model)
        per_task = data["summary"]["rows"].get(f"{label}/s", {})
        for task, entry in per_task.items():
            first = next(iter(entry["seeds"].values()))
            langs = dict((*STS_TASKS, *TRANSFER_TASKS)).get(task) or ()
            # per language (MARC's Japanese is `ja(dev)`); a task without languages by its main score
            keys = [k for k in first["all"] if k.split("(")[0] in langs] or ["main_score"]
            for key in keys:
                line = {"model": model, "task": task, "key": key}
                for kind in ("s", "concat_norm", "weighted"):
                    line[kind], line[f"{kind}_n"] = _mean_score(data, f"{label}/{kind}", task, key)
                for retrofitted, name in ((False, "paper_text_only"), (True, "paper_retrofitted")):
                    cell = paper_value(model, retrofitted, task, key)
                    line[name] = (
                        None
                        if cell is None
                        else {
                            "table": cell.table,
                            "row": cell.row,
                            "column": cell.column,
                            "value": cell.value,
                        }
                    )
                lines.append(line)
    return lines


def beside_markdown(data: dict, models: list[str], rows: dict) -> str:
    """table.md's own part: ours beside the paper's cells per language, then the integration ablation."""
    lines = ["", "## Beside the paper", ""]
    lines.append(
        "Mean over the seeds (text only: scored once). Paper: mUSE / mUSE++ #5 (the paper's standard AMR "
        "encoder, mean of five seeds), table cited; '-' where the paper prints no such cell."
    )
    for model in models:
        label = model_label(model)
        lines += [
            "",
            f"### {label}" + ("" if model in PAPER_MODELS else " (not in the paper)"),
            "",
            f"| task | lang | s | paper: text only | {KINDS['concat_norm']} | delta | paper: ++ #5 | "
            "weighted (w on dev) | delta |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for line in beside_ours(data, [model]):
            cells = [line["task"], line["key"], _num(line["s"]), _paper(line["paper_text_only"])]
            cells += [_num(line["concat_norm"]), _delta(line["concat_norm"], line["s"])]
            cells += [
                _paper(line["paper_retrofitted"]),
                _num(line["weighted"]),
                _delta(line["weighted"], line["s"]),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        weights = [
            f"{seed}: {entries[f'{label}/weighted']['train']['dev_weight']['weight']:g}"
            for seed, entries in data["scored"].items()
            if f"{label}/weighted" in entries and seed != "once"
        ]
        lines += ["", f"w per seed: {', '.join(weights) or '-'}.", ""]
        sts = [t for t in data["summary"]["rows"].get(f"{label}/s", {}) if t in dict(STS_TASKS)]
        lines += [
            f"Integration ablation ({label}, main score, mean over seeds; the paper prints no cells for it):",
            "",
            "| combination | " + " | ".join(sts) + " |",
            "|---|" + "---:|" * len(sts),
        ]
        kinds = ("sum", "concat", "sum_norm", "concat_norm", "weighted", "control")
        for key in (f"{label}/s", "h", *(f"{label}/{k}" for k in kinds)):
            if key not in data["summary"]["rows"]:
                skipped = data["extra"].get("skipped", {}).get(key)
                if skipped:
                    lines.append(f"| {rows[key].label} | {skipped} |")
                continue
            values = [_num(_mean_score(data, key, t, "main_score")[0]) for t in sts]
            lines.append(f"| {rows[key].label} | " + " | ".join(values) + " |")
    lines += ["", "Notes on the paper's cells:", ""]
    lines += [f"- {note}" for note in data["extra"]["paper"]["notes"]]
    return "\n".join(lines) + "\n"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _delta(value: float | None, base: float | None) -> str:
    return "-" if value is None or base is None else f"{value - base:+.2f}"


def _paper(cell: dict | None) -> str:
    return "-" if cell is None else f"{cell['value']:.2f} ({cell['table']})"


if __name__ == "__main__":
    main()
