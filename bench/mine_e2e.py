"""`sentkit mine` end to end on a realistic N x N set: shard folders in, pairs.tsv out, wall time and peak memory.

bench/research/mine_real.py measures each index's search on sets held in memory; this script measures what a user
runs. It builds one realistic set from the real-vector cache exactly as mine_real.py does (same half, seed
and construction: bench/mine_real_sets.py), writes its two sides as shard folders with sentkit's encode path
(texts "x <row>" and "y <row>"), then runs the `sentkit mine` command in a child process under
/usr/bin/time: the wall seconds and the child's peak resident memory are the command's own, start-up,
shard reading, both k-NN directions, margins, retrieval, the recall check and the TSV included. From the
TSV it computes precision, recall and F1 against the planted pairs at the best threshold (and at
`--threshold` when given), and it reads the recall@k that `mine` measured from the sidecar. Just before and
after the command it records bench/host_speed.py's probe (a float32 product, an exact and a fast-scan PQ
search on fixed seeded vectors), so a run can be compared with one made on another day by what the host did.

    python -m bench.mine_e2e --model e5-small-m@int8 --half B --n 1000000 [--index auto] [--mine-arg=--nprobe=64]
    python -m bench.mine_e2e --small      # a tiny synthetic cache: the script runs

Writes bench/out/mine_e2e.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import provenance, write_result
from bench.host_speed import host_speed
from bench.mine_real_sets import (
    CONSTRUCTIONS,
    cache_folder,
    halves,
    inverse_gold,
    model_vectors,
    real_rows,
    real_statistics,
    realistic_set,
)
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.shards import ShardSettings
from sentkit.provenance import cpu_flags
from sentkit.tasks.bitext import best_threshold, prf_at_threshold

OUT = Path(__file__).resolve().parent / "out" / "mine_e2e.json"


def build(args) -> tuple:
    """(x, y, gold, info) of the realistic set of args.n rows a side."""
    cache = None if args.small else cache_folder(args.cache)
    vectors, other, english, used = model_vectors(cache, args.model, args.seed)
    from bench.mine_real_sets import VectorSet

    mask = halves(len(vectors), other, english, args.seed) == "AB".index(args.half)
    rows = real_rows(mask, other, english, args.seed)
    real = VectorSet(vectors[rows["src"]], vectors[rows["tgt"]], rows["gold"], {"counts": rows["counts"]})
    del vectors
    stats = real_statistics(real, 1000, args.seed)
    vs = realistic_set(real, args.n, stats, args.paired, 2, 1000, args.seed, args.construction)
    return vs.x, vs.y, vs.gold, {"rows_used": used, "real_counts": rows["counts"], **vs.info}


class BothSides:
    """An "encoder" for the shard writer: text "x i" is row i of x, "y j" row j of y. Both folders get one
    model fingerprint (from `embeddings`, the set's name), as two folders encoded by one model do."""

    name = "realistic-set"

    def __init__(self, x: np.ndarray, y: np.ndarray, name: str) -> None:
        self.sides = {"x": x, "y": y}
        self.embeddings = np.frombuffer(name.encode(), dtype=np.uint8)

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        side = self.sides[sentences[0].split(" ", 1)[0]]
        return side[[int(s.split(" ", 1)[1]) for s in sentences]]


def add_sample_args(ap: argparse.ArgumentParser, half: str, queries: int, direction: str) -> None:
    """The set options (`add_set_args`) and those `sampled_directed` reads: k, queries, direction, --small."""
    add_set_args(ap, half=half)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--queries", type=int, default=queries)
    ap.add_argument("--direction", choices=("forward", "backward"), default=direction)
    ap.add_argument("--small", action="store_true", help="a tiny synthetic cache, 3,000 rows a side")


def sampled_directed(args) -> dict:
    """The set of `build`, oriented by `args.direction` and sampled for the index benches: `x` (query side),
    `y` (key side), `partner` (each query row's planted key row, -1 none), and, from a seeded draw,
    `q` (args.queries query rows) with their exact top args.k (`exact_sims`, `exact_rows`), `pq` (as many
    rows that have a partner) with `p_key` their partners and `in_exact` whether exact search finds the
    partner among its top k; `info` and `built_s` describe the set."""
    from sentkit.mining.exact import UnitRows, exact_search

    if args.small:
        args.n = 3000
    began = time.perf_counter()
    x, y, gold, info = build(args)
    built_s = time.perf_counter() - began
    if args.direction == "backward":  # target queries over the source side; a target's partner is its source
        partner = inverse_gold(gold, len(y))
        x, y = y, x
    else:
        partner = gold
    rng = np.random.default_rng([args.seed, 7])
    q = x[np.sort(rng.choice(len(x), size=min(args.queries, len(x)), replace=False))]
    exact_sims, exact_rows, _ = exact_search(UnitRows(q), UnitRows(y), args.k, "float32")
    planted = np.flatnonzero(partner >= 0)
    p_rows = np.sort(rng.choice(planted, size=min(args.queries, len(planted)), replace=False))
    pq, p_key = x[p_rows], partner[p_rows]
    _, p_exact, _ = exact_search(UnitRows(pq), UnitRows(y), args.k, "float32")
    in_exact = (p_exact == p_key[:, None]).any(axis=1)
    return {
        "x": x, "y": y, "partner": partner, "q": q, "exact_sims": exact_sims, "exact_rows": exact_rows,
        "pq": pq, "p_key": p_key, "in_exact": in_exact, "info": info, "built_s": built_s,
    }  # fmt: skip


def write_sides(work: Path, encoder: BothSides, shard_size: int) -> None:
    """work/x and work/y: shard folders written by `sentkit encode --shard-size`'s code."""
    for side, table in encoder.sides.items():
        corpus = work / f"{side}.txt"
        with corpus.open("w") as fh:
            for start in range(0, len(table), 100_000):
                fh.write("".join(f"{side} {i}\n" for i in range(start, min(start + 100_000, len(table)))))
        settings = ShardSettings(shard_size=shard_size, batch_size=shard_size)
        request = EncodeRequest(str(corpus), str(work / side), encoder.name, settings, engine="local")
        encode_corpus(request, load_model=lambda name: encoder, log=lambda line: None)


def read_mined(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(score, src row, tgt row) of every pair in a mine TSV whose texts are "x <row>" / "y <row>"."""
    scores, src, tgt = [], [], []
    with open(path, encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            cells = line.rstrip("\n").split("\t")
            scores.append(float(cells[0]))
            src.append(int(cells[3].split(" ")[1]))
            tgt.append(int(cells[4].split(" ")[1]))
    return np.array(scores), np.array(src, dtype=np.int64), np.array(tgt, dtype=np.int64)


def scored(score, src, tgt, gold, threshold: float | None) -> dict:
    """P / R / F1 (percent) of the mined pairs against the planted ones: at the best threshold, and at
    `threshold` when given."""
    correct = gold[src] == tgt
    n_gold = int((gold >= 0).sum())
    out = {"pairs": len(score), "planted": n_gold}
    for name, cut in (("best", best_threshold(score, correct, n_gold)), ("at_threshold", threshold)):
        if cut is not None:
            p, r, f = prf_at_threshold(score, correct, n_gold, cut)
            out[name] = {"threshold": round(float(cut), 6), "precision": p, "recall": r, "f1": round(f, 2)}
    return out


def add_set_args(ap: argparse.ArgumentParser, half: str) -> None:
    """The options `build` reads: which cache, model, half, size, planted share, seed and construction."""
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--model", default="e5-small-m@int8")
    ap.add_argument("--half", default=half, choices=["A", "B"])
    ap.add_argument("--n", type=int, default=1_000_000, help="rows a side")
    ap.add_argument("--paired", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--construction", default="mixtures", choices=CONSTRUCTIONS, help="realistic set rows")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_set_args(ap, half="B")
    ap.add_argument("--index", default="auto", help="sentkit mine --index")
    ap.add_argument("--threshold", type=float, default=None, help="also score at this margin")
    ap.add_argument("--mine-arg", action="append", default=[], help="more `sentkit mine` options (--x=y)")
    ap.add_argument("--shard-size", type=int, default=100_000)
    ap.add_argument("--work", type=Path, default=None, help="folder for the shards (default: a temp dir)")
    ap.add_argument("--small", action="store_true", help="a tiny synthetic cache, 3,000 rows a side")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.small:
        args.n, args.shard_size = 3000, 1000
    started = time.perf_counter()
    x, y, gold, info = build(args)
    built_s = time.perf_counter() - started
    work = args.work or Path(tempfile.mkdtemp(prefix="mine_e2e-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        write_sides(
            work,
            BothSides(x, y, f"{args.model} half {args.half} n {args.n} seed {args.seed}"),
            args.shard_size,
        )
        del x, y
        # the host's speed on mining's kernels just before and after, to compare runs made on other days
        probe = (lambda: host_speed(rows=5_000, queries=100, repeats=1)) if args.small else host_speed
        speed_before = probe()
        pairs = work / "pairs.tsv"
        command = [
            str(Path(sys.executable).parent / "sentkit"), "mine", "--src", str(work / "x"), "--tgt", str(work / "y"),
            "--out", str(pairs), "--index", args.index, *args.mine_arg,
        ]  # fmt: skip
        timing = work / "time.txt"
        print("running: " + " ".join(command), flush=True)
        run = subprocess.run(
            ["/usr/bin/time", "-f", "%e %M", "-o", str(timing), *command], env=os.environ.copy(), check=False
        )
        if run.returncode:
            raise SystemExit(f"sentkit mine exited with {run.returncode}")
        wall, peak_kb = timing.read_text().split()[-2:]
        speed_after = probe()
        sidecar = json.loads(Path(f"{pairs}.json").read_text(encoding="utf-8"))
        score, src, tgt = read_mined(pairs)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    result = {
        "what": "sentkit mine end to end (shard folders in, TSV out) on a realistic set built from real vectors",
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "set": info,
        "mine": {
            "wall_s": float(wall),
            "peak_rss_mib": round(int(peak_kb) / 1024, 1),
            "command": command[1:],
            "sidecar": {
                key: sidecar.get(key)
                for key in ("index", "config", "timings", "candidates", "pairs", "peak_rss_mib")
            },
        },
        "planted_pairs": scored(score, src, tgt, gold, args.threshold),
        "build_set_s": round(built_s, 1),
        "host_speed": {"before": speed_before, "after": speed_after},
        "cpu_flags": cpu_flags(),
        "load_average": os.getloadavg(),
        **provenance(),
    }
    best = result["planted_pairs"]["best"]
    print(
        f"{args.n:,} x {args.n:,} ({args.model}, half {args.half}): sentkit mine {float(wall):.0f} s, "
        f"peak {int(peak_kb) / 1024:,.0f} MiB; planted-pair F1 {best.get('f1')} at margin "
        f"{best.get('threshold')}",
        flush=True,
    )
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
