"""k-means for the clustering protocol: plain scikit-learn vs sentkit's path vs FAISS, on real sets.

For each set and seed (42, 43, 44; n_init 10), three runs on the same float32 vectors:
  sklearn   `KMeans(k, n_init=10, random_state=seed).fit_predict(X)`: the protocol as first written
  sentkit   `sklearn_kmeans_labels`: the same KMeans with the exact, faster k-means++ seeding
  faiss     `faiss_kmeans_labels`: FAISS k-means, 10 redos x 25 iterations (not the protocol)
Reports wall and process CPU seconds (CPU is the steadier number on a shared machine), Hungarian
accuracy, and whether sentkit's labels are identical to scikit-learn's. Vectors come from `--model`
(encoded once, kept in `--cache` as <set>.npy + <set>.labels.npy). Writes bench/out/kmeans_speed.json.

    python -m bench.kmeans_speed [--model minilm-en] [--sets tweet,searchsnippets,mewsc16-ja] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from bench.common import provenance, write_result
from sentkit.tasks.clustering import (
    FAISS_NITER,
    N_INIT,
    SEEDS,
    faiss_kmeans_labels,
    hungarian_accuracy,
    sklearn_kmeans_labels,
)

OUT = Path(__file__).resolve().parent / "out" / "kmeans_speed.json"
DEFAULT_SETS = "tweet,mewsc16-ja,searchsnippets,stackoverflow"


def plain_sklearn_labels(vectors: np.ndarray, k: int, seed: int, n_init: int = N_INIT) -> np.ndarray:
    """The reference: scikit-learn KMeans exactly as the protocol was first written."""
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(vectors)


RUNNERS = {"sklearn": plain_sklearn_labels, "sentkit": sklearn_kmeans_labels, "faiss": faiss_kmeans_labels}


def load_set(name: str, data_root: str | None) -> tuple[list[str], np.ndarray]:
    """Texts and integer labels of a clustering set: an EASE English set or `mewsc16-<lang>`."""
    from sentkit.datasets.mewsc16 import load_mewsc16
    from sentkit.datasets.short_text_clustering import load_short_text

    texts, labels = (
        load_mewsc16(name[8:], data_root) if name.startswith("mewsc16-") else load_short_text(name, data_root)
    )
    return texts, np.unique(np.asarray(labels), return_inverse=True)[1].ravel()


def set_vectors(name: str, model: str, cache: Path | None, data_root: str | None, encoder_box: list):
    """(vectors (n, dim) float32, labels (n,)), from the cache or encoded now (and cached)."""
    if cache is not None and (cache / f"{name}.npy").is_file():
        return np.load(cache / f"{name}.npy"), np.load(cache / f"{name}.labels.npy")
    from sentkit.encoders import load_encoder
    from sentkit.tasks.encoding import encode_unique

    if not encoder_box:
        encoder_box.append(load_encoder(model))
    texts, labels = load_set(name, data_root)
    vectors = encode_unique(encoder_box[0], texts, 64).rows(texts)  # (n, dim), as ClusteringTask does
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(cache / f"{name}.npy", vectors)
        np.save(cache / f"{name}.labels.npy", labels)
    return vectors, labels


def all_identical(row: dict) -> bool | str:
    """True when sentkit's labels equalled scikit-learn's for every seed; "-" when not compared."""
    same = [e.get("identical_to_sklearn") for e in row["runs"].get("sentkit", {}).get("seeds", [])]
    return all(same) if same and None not in same else "-"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-en")
    parser.add_argument("--sets", default=DEFAULT_SETS, help="comma list: EASE set names or mewsc16-<lang>")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    parser.add_argument("--runners", default=",".join(RUNNERS), help="any of sklearn, sentkit, faiss")
    parser.add_argument("--cache", type=Path, default=None, help="folder for the encoded vectors")
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    runners = args.runners.split(",")
    load_before = os.getloadavg()[0]

    results: dict[str, dict] = {}
    encoder_box: list = []
    for name in args.sets.split(","):
        vectors, labels = set_vectors(name, args.model, args.cache, args.data_root, encoder_box)
        k = len(np.unique(labels))
        row: dict = {"n": len(vectors), "dim": vectors.shape[1], "k": k, "runs": {}}
        predictions: dict[tuple[str, int], np.ndarray] = {}
        for runner in runners:
            per_seed = []
            for seed in seeds:
                wall, cpu = time.perf_counter(), time.process_time()
                pred = RUNNERS[runner](vectors, k, seed)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                entry = {
                    "seed": seed,
                    "accuracy": hungarian_accuracy(labels, pred),
                    "wall_s": wall,
                    "cpu_s": cpu,
                }
                predictions[runner, seed] = pred
                per_seed.append(entry)
                print(
                    f"{name:<15} {runner:<8} seed {seed}: acc {entry['accuracy']:6.2f}  wall {wall:7.2f} s  "
                    f"cpu {cpu:7.2f} s",
                    flush=True,
                )
            row["runs"][runner] = {
                "accuracy": float(np.mean([e["accuracy"] for e in per_seed])),
                "wall_s": float(sum(e["wall_s"] for e in per_seed)),
                "cpu_s": float(sum(e["cpu_s"] for e in per_seed)),
                "seeds": per_seed,
            }
        if "sklearn" in runners and "sentkit" in runners:
            for entry in row["runs"]["sentkit"]["seeds"]:
                same = np.array_equal(
                    predictions["sentkit", entry["seed"]], predictions["sklearn", entry["seed"]]
                )
                entry["identical_to_sklearn"] = bool(same)
            print(f"{name}: sentkit labels identical to scikit-learn's for every seed: {all_identical(row)}")
        results[name] = row

    print(f"\nmean accuracy over seeds {args.seeds}; seconds summed over seeds (n_init {N_INIT})")
    header = f"{'set':<15} {'n':>6} {'k':>3}"
    for runner in runners:
        header += f" | {runner + ' acc':>11} {'wall s':>7} {'cpu s':>7}"
    print(header + " | identical")
    for name, row in results.items():
        line = f"{name:<15} {row['n']:>6} {row['k']:>3}"
        for runner in runners:
            r = row["runs"][runner]
            line += f" | {r['accuracy']:11.2f} {r['wall_s']:7.1f} {r['cpu_s']:7.1f}"
        print(line + f" | {all_identical(row)}")
    result = {
        "model": args.model,
        "seeds": seeds,
        "n_init": N_INIT,
        "faiss_niter": FAISS_NITER,
        "sets": results,
        "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
        **provenance(),
    }
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
