"""`sentkit mine` in process and on Ray workers, on one synthetic planted N x N set: time, memory, recall, F1.

The set is a **synthetic planted set** (bench/bitext_mining.py's `planted_bitext`): rows shaped like sentence
vectors (a shared mean and a decaying spectrum), a fraction `--paired` of source rows with a noisy translation
hidden at a random target row, every other row on both sides an unpaired distractor. It is not built from real
vectors (this benchmark needs no real-vector cache; bench/mine_e2e.py measures the realistic sets). Its two
sides are written as shard folders with sentkit's encode path (bench/mine_e2e.py's `write_sides`, texts
"x <row>" and "y <row>"), then for each configuration the `sentkit mine` command runs in a child process under
/usr/bin/time:

- `local`: no engine flag, the in-process path;
- `wN`: `--workers N` (a local Ray started by the command on this machine's CPUs);
- `nodesN`: a simulated cluster started here (`ray.cluster_utils.Cluster`, N nodes of one CPU each, all on
  this machine) and `--address ADDR --workers N`. More nodes than cores oversubscribe them: the run then
  measures the distributed path's overheads, not a speed-up (the table says so).

Each run records the command's wall seconds, the largest resident set of its process tree (/usr/bin/time),
the driver's own peak and each worker's (sidecar), its stage timings, recall@k per direction (what `mine`
measured on sampled queries), the F1 of the mined pairs against the planted ones at the best threshold, and
whether its TSV equals the in-process run's byte for byte (SHA-256). Times are also given as ratios to the
in-process run's, end to end and per stage (this run's seconds / the in-process run's: below 1 is faster).
bench/mine_cost_model.py fits per-unit costs to the file this writes.

    python -m bench.mine_distributed [--n 1000000] [--dim 384] [--configs local,w1,w2,nodes4] [--index auto]
    python -m bench.mine_distributed --small      # 3,000 x 3,000 at 32 dims, ivf-fastscan: the script runs

Writes bench/out/mine_distributed.json (or --out).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from bench.bitext_mining import planted_bitext
from bench.common import provenance, write_result
from bench.mine_e2e import BothSides, read_mined, scored, write_sides
from sentkit.provenance import cpu_flags

OUT = Path(__file__).resolve().parent / "out" / "mine_distributed.json"
CONFIG_NAME = re.compile(r"^(local|w(\d+)|nodes(\d+))$")
# the timings compared with the in-process run's, in this order (sidecar keys; a run lacking one shows none)
STAGE_KEYS = (
    "skip_scan_src_s",
    "skip_scan_tgt_s",
    "index_build_forward_s",
    "index_build_backward_s",
    "knn_forward_s",
    "knn_backward_s",
    "transfer_s",
    "merge_s",
    "exchange_s",
    "recall_s",
    "score_s",
    "select_s",
    "write_s",
)


def parse_configs(text: str) -> list[str]:
    """The configuration names of `--configs` (local, wN, nodesN), in order, each once."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        match = CONFIG_NAME.match(name)
        if not match or (match.group(1) != "local" and int(match.group(2) or match.group(3)) < 1):
            raise SystemExit(f"--configs: {name!r} is not local, wN or nodesN (N >= 1)")
    if len(set(names)) != len(names) or not names:
        raise SystemExit(f"--configs: expected distinct names, got {text!r}")
    return names


def engine_flags(name: str, address: str | None = None) -> list[str]:
    """The `sentkit mine` flags of a configuration (`address`: the simulated cluster's, for nodesN)."""
    match = CONFIG_NAME.match(name)
    if name == "local":
        return []
    if match.group(2):
        return ["--workers", match.group(2)]
    return ["--address", str(address), "--workers", match.group(3)]


def simulated_nodes(name: str) -> int:
    """How many one-CPU nodes configuration `name` starts (0: none)."""
    match = CONFIG_NAME.match(name)
    return int(match.group(3)) if match and match.group(3) else 0


@contextmanager
def simulated_cluster(nodes: int, object_store_mib: int | None = None):
    """The address of a Ray cluster of `nodes` nodes of one CPU each on this machine, torn down afterwards."""
    from ray.cluster_utils import Cluster

    store = {"object_store_memory": object_store_mib * 2**20} if object_store_mib else {}
    cluster = Cluster()
    try:
        cluster.add_node(num_cpus=1, include_dashboard=False, **store)  # the head
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1, **store)
        cluster.wait_for_nodes()
        yield cluster.address
    finally:
        cluster.shutdown()


def build_set(n: int, dim: int, paired: float, noise: float, seed: int) -> tuple:
    """(x, y, gold, info) of the synthetic planted set: n rows a side, `paired` of them planted."""
    x, y, gold = planted_bitext(n, dim, paired, noise, seed)
    planted = int((gold >= 0).sum())
    info = {
        "kind": "synthetic planted set (bench/bitext_mining.py planted_bitext; no real vectors)",
        "rows_a_side": n,
        "dim": dim,
        "paired": paired,
        "noise": noise,
        "seed": seed,
        "planted_pairs": planted,
        "distractor_rows_a_side": n - planted,
    }
    return x, y, gold, info


def prepared_sides(work: Path, args) -> tuple[np.ndarray, dict, float]:
    """(gold, set info, seconds): the set's shard folders work/x and work/y, written now or reused when
    work/set.json records the same set."""
    key = {name: getattr(args, name) for name in ("n", "dim", "paired", "noise", "seed", "shard_size")}
    record = work / "set.json"
    if record.is_file() and (work / "gold.npy").is_file():
        saved = json.loads(record.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            print(f"reusing the shard folders in {work}", flush=True)
            return np.load(work / "gold.npy"), saved["info"], 0.0
    for stale in ("x", "y"):
        shutil.rmtree(work / stale, ignore_errors=True)
    began = time.perf_counter()
    x, y, gold, info = build_set(args.n, args.dim, args.paired, args.noise, args.seed)
    name = f"planted n {args.n} dim {args.dim} paired {args.paired} noise {args.noise} seed {args.seed}"
    write_sides(work, BothSides(x, y, name), args.shard_size)
    del x, y
    np.save(work / "gold.npy", gold)
    record.write_text(json.dumps({"key": key, "info": info}), encoding="utf-8")
    return gold, info, time.perf_counter() - began


def folder_bytes(folder: Path) -> int:
    """Bytes of a shard folder's vector files (what the command reads of that side)."""
    return sum(path.stat().st_size for path in folder.glob("*.npy"))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_mine(work: Path, name: str, flags: list[str], args) -> tuple[dict, dict | None, Path]:
    """(measured, sidecar, tsv): `sentkit mine` on work/x and work/y with `flags`, in a child under
    /usr/bin/time (wall seconds, the largest resident set of its process tree); sidecar None when the command
    failed (`measured` then holds its exit status)."""
    pairs = work / f"pairs-{name}.tsv"
    timing = work / f"time-{name}.txt"
    if name in args.reuse:  # measured by an earlier invocation on this set: read back, not run again
        wall, peak_kb = timing.read_text().split()[-2:]
        sidecar = json.loads(Path(f"{pairs}.json").read_text(encoding="utf-8"))
        measured = {
            "command": None,
            "wall_s": float(wall),
            "tree_peak_rss_mib": round(int(peak_kb) / 1024, 1),
        }
        print(
            f"[{name}] reused from {pairs} (measured earlier, at commit {sidecar.get('git_commit')})",
            flush=True,
        )
        return measured | {"reused": True}, sidecar, pairs
    for stale in (pairs, Path(f"{pairs}.json")):
        stale.unlink(missing_ok=True)
    # a work folder left by an interrupted run would be resumed, and its blocks not timed: start afresh
    shutil.rmtree(Path(f"{pairs}.work"), ignore_errors=True)
    command = [
        sys.executable, "-m", "sentkit.cli", "mine", "--src", str(work / "x"), "--tgt", str(work / "y"),
        "--out", str(pairs), "--index", args.index, *flags, *args.mine_arg,
    ]  # fmt: skip
    print(f"[{name}] running: {' '.join(command[1:])}", flush=True)
    run = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", "-o", str(timing), *command], env=os.environ.copy(), check=False
    )
    if run.returncode:
        print(
            f"[{name}] sentkit mine exited with {run.returncode}; the other configurations still run",
            flush=True,
        )
        return {"command": command[2:], "exit_status": run.returncode}, None, pairs
    wall, peak_kb = timing.read_text().split()[-2:]
    sidecar = json.loads(Path(f"{pairs}.json").read_text(encoding="utf-8"))
    measured = {
        "command": command[2:],
        "wall_s": float(wall),
        "tree_peak_rss_mib": round(int(peak_kb) / 1024, 1),
    }
    return measured, sidecar, pairs


def recall_at_k(sidecar: dict) -> dict:
    """{direction: recall@k mining measured on sampled queries} (None where it measured none: exact search
    finds every neighbour, and an older sidecar may lack the record)."""
    out = {}
    for direction in ("forward", "backward"):
        info = (sidecar.get("index") or {}).get(direction) or {}
        out[direction] = (info.get("recall") or {}).get("recall_at_k")
    return out


def run_record(name: str, measured: dict, sidecar: dict, score, src, tgt, gold, tsv_hash: str, args) -> dict:
    """One configuration's row of the results: what was measured and what the sidecar says (every sidecar
    field read with .get: the distributed fields are new and may be absent)."""
    engine = sidecar.get("engine") or {"kind": "local"}
    workers_rss = engine.get("worker_peak_rss_mib") or []
    nodes = simulated_nodes(name)
    record = {
        "config": name,
        **measured,
        "driver_peak_rss_mib": sidecar.get("peak_rss_mib"),
        "engine": engine,
        "worker_peak_rss_mib": workers_rss,
        "worker_peak_rss_mib_max": max(workers_rss) if workers_rss else None,
        "resumed_blocks": sidecar.get("resumed_blocks"),
        "timings": sidecar.get("timings") or {},
        "index": {
            direction: {
                key: value
                for key, value in ((sidecar.get("index") or {}).get(direction) or {}).items()
                if key != "nprobe_tuning"
            }
            for direction in ("forward", "backward")
        },
        "recall_at_k": recall_at_k(sidecar),
        "k": (sidecar.get("config") or {}).get("k"),
        "planted_pairs": scored(score, src, tgt, gold, args.threshold),
        "tsv_sha256": tsv_hash,
    }
    if nodes:
        cores = os.cpu_count() or 1
        record["simulated_cluster"] = {
            "nodes": nodes,
            "cpus_per_node": 1,
            "real_cores": cores,
            "oversubscribed": nodes > cores,
            "note": (
                f"{nodes} one-CPU Ray nodes on {cores} real cores: oversubscribed, so this run measures the "
                "distributed path's overheads, not a speed-up"
                if nodes > cores
                else f"{nodes} one-CPU Ray nodes on {cores} real cores, all on this machine"
            ),
        }
    return record


def ratios_to(run: dict, reference: dict) -> dict:
    """This run's seconds over the reference run's: end to end and per stage (stages both runs timed)."""
    stages = {}
    for key in STAGE_KEYS:
        mine, theirs = run["timings"].get(key), reference["timings"].get(key)
        if mine is not None and theirs:
            stages[key] = round(mine / theirs, 3)
    knn = [
        sum(r["timings"].get(f"knn_{d}_s") or 0 for d in ("forward", "backward")) for r in (run, reference)
    ]
    return {
        "end_to_end": round(run["wall_s"] / reference["wall_s"], 3) if reference["wall_s"] else None,
        "knn_both": round(knn[0] / knn[1], 3) if knn[1] else None,
        "stages": stages,
    }


def _setting(value):
    """An option's value as JSON writes it: paths as text, sets as sorted lists."""
    if isinstance(value, Path):
        return str(value)
    return sorted(value) if isinstance(value, set) else value


def _cell(value, fmt: str = "{}") -> str:
    return "-" if value is None else fmt.format(value)


def table(runs: list[dict]) -> str:
    """The runs as a fixed-width table, one line each, then the per-stage ratios."""
    head = (
        f"{'config':<8} {'engine':<6} {'W':>3} {'nodes':>5} {'wall s':>9} {'x local':>7} {'tree MiB':>9} "
        f"{'driver MiB':>10} {'worker MiB':>10} {'recall fwd/bwd':>15} {'F1':>6} {'TSV = local':>11}"
    )
    lines = [head, "-" * len(head)]
    for run in runs:
        engine, recall = run["engine"], run["recall_at_k"]
        ratio = (run.get("ratio_to_local") or {}).get("end_to_end")
        same = run.get("tsv_equals_local")
        lines.append(
            f"{run['config']:<8} {_cell(engine.get('kind')):<6} {_cell(engine.get('workers')):>3} "
            f"{_cell(engine.get('nodes')):>5} {run['wall_s']:>9.1f} {_cell(ratio, '{:.2f}'):>7} "
            f"{run['tree_peak_rss_mib']:>9,.0f} {_cell(run['driver_peak_rss_mib'], '{:,.0f}'):>10} "
            f"{_cell(run['worker_peak_rss_mib_max'], '{:,.0f}'):>10} "
            f"{_cell(recall['forward'], '{:.3f}'):>7}/{_cell(recall['backward'], '{:.3f}'):<7} "
            f"{_cell((run['planted_pairs'].get('best') or {}).get('f1'), '{:.2f}'):>6} "
            f"{'-' if same is None else ('yes' if same else 'NO'):>11}"
        )
    for run in runs:
        stages = (run.get("ratio_to_local") or {}).get("stages") or {}
        if run["config"] != "local" and stages:
            parts = ", ".join(f"{key[:-2]} {value:.2f}" for key, value in stages.items())
            lines.append(f"  {run['config']} / local per stage: {parts}")
        if "simulated_cluster" in run:
            lines.append(f"  {run['config']}: {run['simulated_cluster']['note']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="rows a side")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument(
        "--paired", type=float, default=0.1, help="share of source rows with a planted translation"
    )
    ap.add_argument("--noise", type=float, default=1.0, help="a translation's noise, times the rows' scale")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--configs", default="local,w1,w2,nodes4", help="local, wN (--workers N), nodesN")
    ap.add_argument("--index", default="auto", help="sentkit mine --index")
    ap.add_argument("--threshold", type=float, default=None, help="also score the pairs at this margin")
    ap.add_argument("--mine-arg", action="append", default=[], help="more `sentkit mine` options (--x=y)")
    ap.add_argument("--shard-size", type=int, default=100_000)
    ap.add_argument("--object-store-mib", type=int, default=None, help="per simulated node (Ray's default)")
    ap.add_argument(
        "--work", type=Path, default=None, help="folder for shards and TSVs (default: a temp dir)"
    )
    ap.add_argument(
        "--small",
        action="store_true",
        help="3,000 x 3,000 at 32 dims, 1,000-row shards, ivf-fastscan for auto",
    )
    ap.add_argument(
        "--reuse",
        type=lambda text: set(filter(None, text.split(","))),
        default=set(),
        help="configurations whose TSV, sidecar and time file in --work are read back, not run again",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="an earlier result of this script on the same set: its runs of configurations not run now are kept "
        "(marked with the file and commit they come from)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.small:
        args.n, args.dim, args.shard_size = 3000, 32, 1000
        if args.index == "auto":  # auto would search 3,000 rows exactly: the small run takes the IVF path
            args.index = "ivf-fastscan"
    configs = parse_configs(args.configs)
    work = args.work or Path(tempfile.mkdtemp(prefix="mine_distributed-"))
    work.mkdir(parents=True, exist_ok=True)
    runs: list[dict] = []
    failed: list[dict] = []  # configurations whose command exited non-zero (e.g. a sentkit without --workers)
    try:
        gold, info, built_s = prepared_sides(work, args)
        info["side_bytes"] = {side: folder_bytes(work / side) for side in ("x", "y")}
        for name in configs:
            nodes = simulated_nodes(name)
            if nodes:
                with simulated_cluster(nodes, args.object_store_mib) as address:
                    measured, sidecar, tsv = run_mine(work, name, engine_flags(name, address), args)
            else:
                measured, sidecar, tsv = run_mine(work, name, engine_flags(name), args)
            if sidecar is None:
                failed.append({"config": name, **measured})
                continue
            score, src, tgt = read_mined(tsv)
            runs.append(run_record(name, measured, sidecar, score, src, tgt, gold, sha256(tsv), args))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.baseline is not None:
        prior = json.loads(args.baseline.read_text(encoding="utf-8"))
        if {k: v for k, v in prior["set"].items() if k != "side_bytes"} != {
            k: v for k, v in info.items() if k != "side_bytes"
        }:
            raise SystemExit(f"--baseline {args.baseline}: another set ({prior['set']}, now {info})")
        kept = [
            run | {"measured_in": str(args.baseline), "measured_at_commit": prior.get("git_commit")}
            for run in prior["runs"]
            if run["config"] not in configs
        ]
        runs = kept + runs
    local = next((run for run in runs if run["config"] == "local"), None)
    for run in runs:
        if local is not None:
            run["tsv_equals_local"] = run["tsv_sha256"] == local["tsv_sha256"]
            run["ratio_to_local"] = ratios_to(run, local)
    import faiss

    extra = {"faiss": faiss.__version__}
    try:
        import ray

        extra["ray"] = ray.__version__
    except ImportError:
        pass
    result = {
        "what": "sentkit mine in process and on Ray workers (--workers, --address) on one synthetic planted set",
        "settings": {k: _setting(v) for k, v in vars(args).items()},
        "set": info,
        "build_set_s": round(built_s, 1),
        "runs": runs,
        "failed": failed,
        "cpu_flags": list(cpu_flags()),
        "load_average": os.getloadavg(),
        **provenance(**extra),
    }
    print(table(runs), flush=True)
    for run in failed:
        print(f"{run['config']}: sentkit mine exited with {run['exit_status']}", flush=True)
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
