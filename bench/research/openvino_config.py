"""How sentkit compiles an OpenVINO int8 export: streams and fused attention kernels, timed side by side.

For each model, the cached `NAME@openvino-int8` folder is opened four ways: the CPU plugin's defaults (1
stream, fused attention kernels, "snippets", on), snippets off, 2 streams with snippets off, and sentkit's
default on this host (sentkit/encoders/openvino/encoder.py). The encoders are timed in turns (warm-up first, order
alternating per round, tokenization included as a user sees it) on the STS-B test sentences (1379 pairs ->
2758 sentences) and on passages cut from the same text: the sentences joined in file order and cut every W
words (`--passage-words`), so batch width grows while the words stay real. Reported per text set and
configuration: best and median texts/s, the median's ratio to the plugin's defaults, the smallest cosine to
the defaults' vectors, and (sentences only) STS-B test Spearman. Records the CPU flags and the load average;
one heavy job at a time.

    python -m bench.research.openvino_config [--models e5-small-m,minilm-en] [--passage-words 50,100,200]
                                    [--repeats 5] [--threads 2] [--out F]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from bench.common import provenance, write_result
from bench.encode_speed import load_average, stsb_spearman, stsb_test_gold, stsb_test_sentences
from bench.int8_speed import interleaved, sentkit_runner

OUT = Path(__file__).resolve().parents[1] / "out" / "openvino_config.json"
# label -> (streams, snippets: None = sentkit's default); the first is the plugin's own default, the
# reference of every ratio
CONFIGS: dict[str, tuple[int, bool | None]] = {
    "plugin default (1 stream, snippets on)": (1, True),
    "1 stream, snippets off": (1, False),
    "2 streams, snippets off": (2, False),
    "sentkit default": (1, None),
}


def passages(sentences: list[str], words: int) -> list[str]:
    """The sentences joined in order and cut every `words` words (the last, shorter piece kept)."""
    flat = " ".join(sentences).split()
    return [" ".join(flat[i : i + words]) for i in range(0, len(flat), words)]


def bench_model(
    name: str,
    sets: dict[str, list[str]],
    gold: np.ndarray | None,
    args,
    folder: Path | None = None,
) -> dict:
    """The configurations timed on `folder` (default: `name`'s cached `@openvino-int8` export) over each
    text set; STS-B is scored on the set named "sentences" when `gold` is given."""
    from sentkit.encoders.export_cache import cached_export
    from sentkit.encoders.openvino.encoder import OpenVinoEncoder

    if folder is None:
        folder = cached_export(name, "openvino-int8", threads=args.threads).folder
    encoders = {
        label: OpenVinoEncoder(folder, threads=args.threads, streams=streams, snippets=snippets)
        for label, (streams, snippets) in CONFIGS.items()
    }
    reference = next(iter(CONFIGS))
    res: dict = {
        "model": name,
        "folder": str(folder),
        "openvino": {k: enc.runtime_info["openvino"] for k, enc in encoders.items()},
        "sets": {},
    }
    for set_name, texts in sets.items():
        encoder = encoders[reference]
        widths = [len(ids) for ids in encoder.tokenizer([encoder.prefix + t for t in texts])["input_ids"]]
        print(f"{name}, {set_name}: {len(texts)} texts, {np.mean(widths):.1f} tokens on average")
        runners = {label: sentkit_runner(enc, args.batch_size) for label, enc in encoders.items()}
        timings, vectors = interleaved(runners, texts, args.repeats, args.batch_size)
        base = timings[reference]["median_sent_per_s"]
        row = {
            "texts": len(texts),
            "mean_tokens": float(np.mean(widths)),
            "max_tokens": int(max(widths)),
            "timings": timings,
            "median_vs_plugin_default": {k: v["median_sent_per_s"] / base for k, v in timings.items()},
            "min_cosine_to_plugin_default": {
                k: float((v * vectors[reference]).sum(1).min()) for k, v in vectors.items()
            },
        }
        if set_name == "sentences" and gold is not None:
            row["stsb_spearman"] = {k: stsb_spearman(v, gold) for k, v in vectors.items()}
        res["sets"][set_name] = row
    return res


def print_model(res: dict) -> None:
    for set_name, row in res["sets"].items():
        print(
            f"\n{res['model']}, {set_name} ({row['mean_tokens']:.0f} tokens on average, max {row['max_tokens']})"
        )
        print(f"{'configuration':<40} {'best':>8} {'median':>8} {'ratio':>6} {'min cos':>8}")
        for label, t in row["timings"].items():
            print(
                f"{label:<40} {t['best_sent_per_s']:8.1f} {t['median_sent_per_s']:8.1f} "
                f"{row['median_vs_plugin_default'][label]:6.2f} {row['min_cosine_to_plugin_default'][label]:8.5f}"
            )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="e5-small-m,minilm-en")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--passage-words", default="50,100,200", help="passage lengths in words (comma list)")
    parser.add_argument("--limit", type=int, default=None, help="first N sentences only (a pipeline check)")
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    sentences = stsb_test_sentences(args.data_root)[: args.limit]
    gold = stsb_test_gold(args.data_root)
    load = load_average()
    models = {}
    sets = {"sentences": sentences}
    for words in (int(w) for w in args.passage_words.split(",") if w):
        sets[f"passages of {words} words"] = passages(sentences, words)
    for name in args.models.split(","):
        models[name] = bench_model(name, sets, gold, args)
        print_model(models[name])
    result = {
        "data": "STS-B test (sts-test.csv), both sentences of each pair",
        "sentences": len(sentences),
        "batch_size": args.batch_size,
        "threads": args.threads,
        "repeats": args.repeats,
        "configs": {k: {"streams": s, "snippets": on} for k, (s, on) in CONFIGS.items()},
        "passages": "the STS-B test sentences joined in file order, cut every W words",
        "models": models,
        "load_average_1min": load,
        **provenance(),
    }
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
