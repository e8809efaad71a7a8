"""The driver's memory per row after the k-NN searches of `sentkit mine`: exchanging the two directions' lists,
scoring and retrieval, measured with tracemalloc on synthetic lists held as memory maps (as a run's work
folder holds them).

The lists stay on disk; the stages read them in chunks, so their memory is a fixed amount per chunk plus what
grows with the rows: the (n,) proposals, the 2n concatenated proposals and their sort order. Two sizes are
measured with small chunks, and the growth per row is the slope between them (the fixed part cancels).

    python -m bench.mine_driver_memory [--rows 200000 800000] [--k 4]

Writes bench/out/mine_driver_memory.json (or --out). Seconds on 2 cores.
"""

from __future__ import annotations

import argparse
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np

from bench.common import provenance, write_result
from sentkit.mining import exchange, margin, retrieval

OUT = Path(__file__).resolve().parent / "out" / "mine_driver_memory.json"
CHUNK = 1 << 15  # small chunks, so the fixed part is small next to what grows with the rows


def lists(folder: Path, name: str, n: int, k: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(sims, rows) memory maps of n synthetic k-NN lists: best first, k distinct keys a row."""
    sims = np.lib.format.open_memmap(folder / f"{name}.sims.npy", mode="w+", dtype=np.float32, shape=(n, k))
    rows = np.lib.format.open_memmap(folder / f"{name}.rows.npy", mode="w+", dtype=np.int64, shape=(n, k))
    sims[:] = -np.sort(-rng.random((n, k), dtype=np.float32), axis=1)
    rows[:] = (rng.integers(0, n, (n, 1)) + np.arange(k) * 1009) % n
    sims.flush()
    rows.flush()
    return sims, rows


def peaks(n: int, k: int, seed: int = 0) -> dict:
    """Peak traced bytes of each stage (the arrays alive before it included) for n rows a side."""
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        x, y = lists(folder, "x", n, k, rng), lists(folder, "y", n, k, rng)
        outputs = [
            np.lib.format.open_memmap(folder / f"out{i}.npy", mode="w+", dtype=a.dtype, shape=a.shape)
            for i, a in enumerate((*x, *y))
        ]
        tracemalloc.start()
        (xs, xn), (ys, yn), _ = exchange.both_exchanged(*x, *y, outputs)
        exchanged = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        proposals = margin.best_proposals((xs, xn, ys, yn), "margin")
        scored = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        retrieval.select_proposals(proposals, "max")
        selected = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return {"exchange": exchanged, "score": scored, "retrieval": selected}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs=2, default=[200_000, 800_000], help="two sizes (rows a side)")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    exchange.CHUNK = margin.SCORE_ROWS = retrieval.CHUNK = CHUNK
    small, large = args.rows
    measured = {n: peaks(n, args.k) for n in (small, large)}
    slope = {
        stage: (measured[large][stage] - measured[small][stage]) / (large - small)
        for stage in measured[small]
    }
    for stage, value in slope.items():
        print(f"{stage:<10} {measured[small][stage] / 2**20:8.1f} MiB at {small:,} rows, "
              f"{measured[large][stage] / 2**20:8.1f} MiB at {large:,}: {value:6.1f} bytes a row")  # fmt: skip
    result = {
        "what": "the driver's peak traced memory after the searches (exchange, scoring, retrieval), per row a side",
        "k": args.k,
        "chunk_rows": CHUNK,
        "peak_bytes": {str(n): v for n, v in measured.items()},
        "bytes_per_row": {stage: round(v, 1) for stage, v in slope.items()},
        "driver_bytes_per_row": round(max(slope.values()), 1),
        **provenance(),
    }
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
