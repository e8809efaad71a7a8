"""Training speed and memory: `sentkit.training.train` vs a minimal plain-PyTorch loop, same work per step.

Both run unsupervised SimCSE (each sentence encoded twice in one forward pass under dropout, InfoNCE
over cosine / 0.05, SimCSE eq. 1) on the same model, batch size, max length and sentences, with AdamW
(lr 3e-5, no weight decay), a linear schedule and gradient clipping at 1.0 (what the Trainer does by
default). Sentences are kept only if they fill `max_length` tokens, so every batch is (batch, max_length)
in both loops whatever the order. Each variant runs in its own subprocess (fresh peak RSS from
`getrusage`; `torch.cuda.max_memory_allocated` on GPU); steps/s is timed over N steps after W warm-up
steps, rounds alternate the variants so load from other processes hits both alike. Writes
bench/out/train_speed.json.

    python -m bench.train_speed [--model DIR] [--batch-size 64] [--steps 20] [--warmup 3] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import child_pythonpath

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

OUT = Path(__file__).resolve().parent / "out" / "train_speed.json"
VARIANTS = ("plain", "sentkit")
TEMPERATURE = 0.05  # SimCSE sec. 3


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def full_length_sentences(spec: str, model_dir: str, max_length: int, needed: int, seed: int) -> list[str]:
    """Texts from a training data spec that fill `max_length` tokens, so no batch is shorter than another."""
    from transformers import AutoTokenizer

    from sentkit.training_data.specs import load_training_data

    texts = list(load_training_data(spec, seed=seed)["anchor"])
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]]
    kept = [t for t, n in zip(texts, lengths, strict=True) if n == max_length]
    if len(kept) < needed:
        raise ValueError(f"{spec}: only {len(kept)} texts fill {max_length} tokens, {needed} needed")
    return kept[:needed]


# ---- the two loops (each runs in its own subprocess) ----------------------------------------------------
def run_plain(args: argparse.Namespace, sentences: list[str]) -> dict:
    """The reference: AutoModel + mean pooling + InfoNCE + AdamW, nothing else."""
    import torch
    import torch.nn.functional as F
    from transformers import AutoModel, AutoTokenizer, get_linear_schedule_with_warmup

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    rss_before = peak_rss_mib()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModel.from_pretrained(args.model, add_pooling_layer=False).to(device).train()
    total = args.warmup + args.steps
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.0)
    schedule = get_linear_schedule_with_warmup(optimizer, 0, total)
    loader = torch.utils.data.DataLoader(sentences, batch_size=args.batch_size, shuffle=True, drop_last=True)
    clock, losses = [], []
    batches = iter(loader)
    for _ in range(total):
        texts = next(batches)
        tokens = tokenizer(
            list(texts) * 2, padding=True, truncation=True, max_length=args.max_length, return_tensors="pt"
        ).to(device)
        hidden = model(**tokens).last_hidden_state  # (2 * batch, seq, hidden)
        mask = tokens["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # (2 * batch, seq, 1)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # (2 * batch, hidden)
        first, second = F.normalize(pooled, dim=-1).chunk(2)  # 2 x (batch, hidden)
        logits = first @ second.T / TEMPERATURE  # (batch, batch)
        loss = F.cross_entropy(logits, torch.arange(len(texts), device=device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        clock.append(time.perf_counter())
    return _summary(args, clock, rss_before, losses)


def run_sentkit(args: argparse.Namespace, sentences: list[str]) -> dict:
    """sentkit's one training path (`train(TrainConfig)`), timed by a callback at each optimizer step."""
    from transformers import TrainerCallback

    from datasets import Dataset
    from sentkit.training import TrainConfig, train

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.clock: list[float] = []

        def on_step_end(self, *_, **__) -> None:
            self.clock.append(time.perf_counter())

    data = Dataset.from_dict({"anchor": sentences})
    rss_before = peak_rss_mib()
    step_clock = StepClock()
    with tempfile.TemporaryDirectory() as run_dir:
        config = TrainConfig(
            model=args.model,
            objective="simcse-unsup",
            output_dir=run_dir,
            max_length=args.max_length,
            batch_size=args.batch_size,
            lr=3e-5,
            max_steps=args.warmup + args.steps,
            eval_task="",
            eval_on_start=False,
            save_steps=10**9,  # no checkpoint inside the timed steps
            seed=args.seed,
            progress=False,
        )
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            train(config, data=data, callbacks=[step_clock])
            profiler.disable()
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
        else:
            train(config, data=data, callbacks=[step_clock])
        results = json.loads((Path(run_dir) / "results.json").read_text())
    summary = _summary(args, step_clock.clock, rss_before, [])
    summary["train_loss"] = results["train"].get("train_loss")
    return summary


def _summary(args: argparse.Namespace, clock: list[float], rss_before: float, losses: list[float]) -> dict:
    import torch

    timed = clock[args.warmup - 1 :] if args.warmup else clock
    seconds = timed[-1] - timed[0]
    out = {
        "steps_timed": len(timed) - 1,
        "seconds": round(seconds, 3),
        "steps_per_s": round((len(timed) - 1) / seconds, 4),
        "sentences_per_s": round((len(timed) - 1) * args.batch_size / seconds, 1),
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "rss_growth_mib": round(peak_rss_mib() - rss_before, 1),
    }
    if torch.cuda.is_available():
        out["cuda_max_allocated_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    if losses:
        out["first_loss"], out["last_loss"] = round(losses[0], 4), round(losses[-1], 4)
    return out


def child(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(args.threads)
    sentences = json.loads(Path(args.sentences).read_text(encoding="utf-8"))
    result = (run_plain if args.child == "plain" else run_sentkit)(args, sentences)
    Path(args.result).write_text(json.dumps(result), encoding="utf-8")


# ---- harness ----------------------------------------------------------------------------------------------
def run_variant(variant: str, args: argparse.Namespace, sentences_file: Path, workdir: Path) -> dict:
    result_file = workdir / f"{variant}.json"
    result_file.unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "bench.train_speed",
        "--child",
        variant,
        "--sentences",
        str(sentences_file),
    ]
    command += ["--result", str(result_file), "--model", args.model, "--batch-size", str(args.batch_size)]
    command += [
        "--max-length",
        str(args.max_length),
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
    ]
    command += ["--threads", str(args.threads), "--seed", str(args.seed)]
    if args.profile and variant == "sentkit":
        command.append("--profile")
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **child_pythonpath()})
    if done.returncode != 0:
        raise RuntimeError(f"{variant} run failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    if args.profile and variant == "sentkit":
        print(done.stderr[-12000:], file=sys.stderr)
    result = json.loads(result_file.read_text(encoding="utf-8"))
    result["process_s"] = round(time.perf_counter() - started, 1)
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: packaged all-MiniLM-L6-v2)")
    parser.add_argument("--data", default="ja-clinic", help="training data spec (load_training_data)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of each variant")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--profile", action="store_true", help="cProfile sentkit's run (to stderr)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--sentences", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.model is None:
        from sentkit.encoders.packaged import minilm_en_dir

        args.model = str(minilm_en_dir())
    if args.child:
        child(args)
        return {}

    from sentkit.atomic import atomic_write_json
    from sentkit.provenance import machine_info, package_versions

    needed = args.batch_size * (args.warmup + args.steps)
    sentences = full_length_sentences(args.data, args.model, args.max_length, needed, args.seed)
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        sentences_file = workdir / "sentences.json"
        sentences_file.write_text(json.dumps(sentences, ensure_ascii=False), encoding="utf-8")
        for round_ in range(args.rounds):
            for variant in VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]:
                runs[variant].append(run_variant(variant, args, sentences_file, workdir))
                print(f"round {round_ + 1} {variant}: {runs[variant][-1]}", file=sys.stderr)

    summary = {
        v: {
            "steps_per_s_median": statistics.median(r["steps_per_s"] for r in runs[v]),
            "steps_per_s_best": max(r["steps_per_s"] for r in runs[v]),
            "peak_rss_mib": max(r["peak_rss_mib"] for r in runs[v]),
            "rss_growth_mib": max(r["rss_growth_mib"] for r in runs[v]),
        }
        for v in VARIANTS
    }
    ratio = summary["plain"]["steps_per_s_median"] / summary["sentkit"]["steps_per_s_median"]
    report = {
        "benchmark": "train_speed",
        "model": args.model,
        "data": args.data,
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "steps": args.steps,
        "warmup": args.warmup,
        "rounds": args.rounds,
        "threads": args.threads,
        "summary": summary,
        "time_ratio_sentkit_over_plain": round(ratio, 3),
        "runs": runs,
        "versions": package_versions(),
        "machine": machine_info(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    print(f"\nunsup SimCSE, batch {args.batch_size} x max_length {args.max_length}, {args.steps} timed steps")
    print(f"{'loop':<8} {'steps/s (median)':>17} {'best':>8} {'peak RSS MiB':>13} {'RSS growth MiB':>15}")
    for v in VARIANTS:
        s = summary[v]
        print(
            f"{v:<8} {s['steps_per_s_median']:>17.3f} {s['steps_per_s_best']:>8.3f} "
            f"{s['peak_rss_mib']:>13.0f} {s['rss_growth_mib']:>15.0f}"
        )
    print(f"sentkit time per step / plain: {ratio:.3f}x (target <= 1.2x)")
    atomic_write_json(args.out, report)
    return report


if __name__ == "__main__":
    main()
