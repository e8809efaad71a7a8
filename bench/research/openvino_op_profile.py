"""Where an OpenVINO export spends its time: the CPU plugin's per-node counters, summed per kernel and per role.

    python -m bench.research.openvino_op_profile [--models e5-small-m,minilm-en] [--variant openvino-int8]
                                        [--snippets auto|on|off] [--sentences 2758] [--anchor]
                                        [--activations erf,tanh,quick,relu]

Compiles `NAME@variant` (exported into the cache on first use) as `OpenVinoEncoder` does, with the plugin's
performance counters on, and runs the first N STS-B test sentences in the encoder's own batches, one at a
time, each on the compiled copy the encoder would use for its width. Prints the share of the summed kernel
time per (node type, kernel), and per role inside a transformer layer (a node's name with its layer number
taken out: `intermediate/dense/MatMul` sums that product over every layer; nodes the plugin renamed are
summed per type), with the GOP/s of each weight product (from the batches' padded token counts). Writes
bench/out/openvino_op_profile.json.

`--anchor` also profiles sentence-transformers' own OpenVINO export of the model (the fp32 IR that
`bench/int8_speed.py` wrote under bench/out/anchor-openvino/NAME/openvino/), compiled as that bench's
anchor compiles it (the threads, one stream, the plugin's other defaults: on a CPU with AMX or AVX512-BF16 the
plugin then runs it in bfloat16, read back from the compiled model), on the same batches. It then splits both
profiles into weight products (the plugin's FullyConnected nodes) and everything else, and gives the kernel
time ratio sentkit could reach if its int8 weight products ran at twice the anchor's rate (AMX multiplies
int8 at twice its bfloat16 rate) and its other kernels stayed as measured: where that bound is under 2, twice
the anchor needs the other kernels cut too.

`--activations` profiles copies of the export whose feed-forward GELU nodes compute another activation
(ACTIVATIONS), each beside the export's own, with the STS-B Spearman of the copy's vectors: what the
first feed-forward product, which carries the activation fused in, costs with a cheaper one. A copy is a
different model; `relu` is there as the cheapest activation the plugin fuses, a bound, not a usable model.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench.common import provenance, write_result
from bench.encode_speed import stsb_test_gold, stsb_test_sentences

OUT = Path(__file__).resolve().parents[1] / "out" / "openvino_op_profile.json"
LAYER = re.compile(r"^.*?layer\.\d+/")
# --activations: name -> what the copy's GELU nodes compute instead ("erf": the export itself)
ACTIVATIONS = {
    "erf": "GELU with erf (the export's own)",
    "tanh": "GELU, tanh approximation",
    "quick": "x sigmoid(1.702 x) (OpenVINO Swish, beta 1.702)",
    "relu": "ReLU (a bound on any activation's cost; not a usable model)",
}
FIRST_FFN, SECOND_FFN = "intermediate/dense/MatMul", "output/dense/MatMul"


def role_of(node_name: str, node_type: str) -> str:
    """`node_name` without the path up to its layer number; "outside layers/<name>" for an exported node
    outside the layers, and "<type> (made by the plugin)" for a node the plugin's passes named anew
    (`Softmax_67009`: no layer to read). A product the plugin fused with its dequantization keeps the
    product's role (`.../MatMul/DequantizationMultiply` is `.../MatMul`)."""
    stripped = LAYER.sub("", node_name, count=1)
    if stripped != node_name:
        return stripped.removesuffix("/DequantizationMultiply")
    if node_name.startswith("/"):
        return f"outside layers/{node_name.lstrip('/')}"
    return f"{node_type} (made by the plugin)"


def product_shapes(hidden: int, intermediate: int) -> dict[str, tuple[int, int]]:
    """Role -> (K, N) of each weight product of a BERT-style layer, by the names the ONNX export gives."""
    return {
        "attention/self/query/MatMul": (hidden, hidden),
        "attention/self/key/MatMul": (hidden, hidden),
        "attention/self/value/MatMul": (hidden, hidden),
        "attention/output/dense/MatMul": (hidden, hidden),
        "intermediate/dense/MatMul": (hidden, intermediate),
        "output/dense/MatMul": (intermediate, hidden),
    }


def summarize(counters: list[tuple[str, str, str, float]], tokens: int, layers: int, shapes: dict) -> dict:
    """Kernel seconds per (type, kernel) and per role from (node name, node type, kernel, seconds) rows,
    with each weight product's GOP/s over `tokens` padded tokens in each of `layers` layers."""
    by_kernel: collections.Counter = collections.Counter()
    by_role: collections.Counter = collections.Counter()
    for name, node_type, kernel, seconds in counters:
        by_kernel[f"{node_type} [{kernel}]"] += seconds
        by_role[role_of(name, node_type)] += seconds
    total = sum(by_kernel.values())
    products = {
        role: {
            "seconds": by_role[role],
            "gops": 2 * tokens * layers * k * n / by_role[role] / 1e9 if by_role[role] else None,
        }
        for role, (k, n) in shapes.items()
        if role in by_role
    }
    return {
        "total_seconds": total,
        "by_kernel": {k: {"seconds": v, "share": v / total} for k, v in by_kernel.most_common()},
        "by_role": {k: {"seconds": v, "share": v / total} for k, v in by_role.most_common()},
        "weight_products": products,
    }


def counted_run(feeds: list[dict], request_for) -> list[tuple[str, str, str, float]]:
    """(node name, node type, kernel, seconds) of every node that took time, over `feeds` run one at a time
    on `request_for(feed)` (an infer request with counters on), after 3 warm-up batches: kernels are
    generated for each new shape."""
    for feed in feeds[:3]:
        request_for(feed).infer(feed)
    rows = []
    for feed in feeds:
        request = request_for(feed)
        request.infer(feed)
        rows += [
            (p.node_name, p.node_type, p.exec_type, p.real_time.total_seconds())
            for p in request.profiling_info
            if p.real_time.total_seconds() > 0
        ]
    return rows


def profile_model(
    name: str,
    variant: str,
    sentences: list[str],
    args,
    snippets: bool | None = None,
    folder: Path | None = None,
    shapes: dict | None = None,
) -> dict:
    """The counters of `name`'s cached `@variant` export (or of `folder`, a model with `shapes`: layers,
    hidden, intermediate) over `sentences`."""
    import openvino as ov

    from sentkit.encoders.export_cache import cached_export
    from sentkit.encoders.onnx.contract import INPUTS
    from sentkit.encoders.openvino.encoder import OpenVinoEncoder
    from sentkit.encoders.protocol import length_sorted_batches, padded_batch

    threads, batch_size = args.threads, args.batch_size
    if folder is None:
        from bench.int8_speed import model_shapes
        from sentkit.encoders import load_encoder

        folder = cached_export(name, variant, threads=threads).folder
        shapes = model_shapes(load_encoder(name))
    encoder = OpenVinoEncoder(folder, threads=threads, snippets=snippets)
    copies: dict[bool, object] = {}  # snippets setting -> an infer request of a copy with counters on

    def request_for(width: int):
        """The request of the copy the encoder runs a batch `width` tokens wide on, counters on."""
        setting = encoder.snippets_for(width)
        if setting not in copies:
            config = encoder.compile_config(setting) | {"PERF_COUNT": True}
            model = ov.Core().compile_model(str(folder / encoder.meta["model_file"]), "CPU", config)
            copies[setting] = model.create_infer_request()
        return copies[setting]

    pad = encoder.meta["pad_token_id"]
    feeds = [
        padded_batch(features, rows, width, {"input_ids": pad}, keys=INPUTS)
        for _, features, rows, width in length_sorted_batches(encoder, sentences, batch_size)
    ]
    rows = counted_run(feeds, lambda feed: request_for(feed["input_ids"].shape[1]))
    tokens = sum(int(feed["input_ids"].size) for feed in feeds)
    return {
        "model": name,
        "variant": variant,
        "folder": str(folder),
        "sentences": len(sentences),
        "padded_tokens": tokens,
        "openvino": encoder.runtime_info["openvino"],
        "shapes": shapes,
        **summarize(rows, tokens, shapes["layers"], product_shapes(shapes["hidden"], shapes["intermediate"])),
    }


def anchor_ir(name: str) -> Path:
    """sentence-transformers' fp32 OpenVINO export of `name`, as bench/int8_speed.py prepared it."""
    path = (
        Path(__file__).resolve().parents[1]
        / "out"
        / "anchor-openvino"
        / name
        / "openvino"
        / "openvino_model.xml"
    )
    if not path.is_file():
        raise SystemExit(f"{path}: missing; run bench/int8_speed.py (with its OpenVINO anchor venv) first")
    return path


def profile_anchor(name: str, sentences: list[str], args) -> dict:
    """The counters of sentence-transformers' OpenVINO export of `name`, compiled as the int8_speed anchor
    compiles it, over the batches sentkit's encoder cuts from `sentences`."""
    import numpy as np
    import openvino as ov

    from sentkit.encoders.export_cache import cached_export
    from sentkit.encoders.onnx.contract import INPUTS
    from sentkit.encoders.protocol import length_sorted_batches, padded_batch

    tokenizer_side = cached_export(name, "openvino", threads=args.threads)  # the same tokens and batches
    pad = tokenizer_side.meta["pad_token_id"]
    config = {"INFERENCE_NUM_THREADS": args.threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}
    compiled = ov.Core().compile_model(str(anchor_ir(name)), "CPU", config | {"PERF_COUNT": True})
    precision = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    request = compiled.create_infer_request()
    wanted = [port.get_any_name() for port in compiled.inputs]
    feeds = []
    for _, features, rows, width in length_sorted_batches(tokenizer_side, sentences, args.batch_size):
        batch = padded_batch(features, rows, width, {"input_ids": pad}, keys=INPUTS)
        ids = batch["input_ids"]
        extra = {"token_type_ids": np.zeros_like(ids)}
        feeds.append({key: (batch | extra)[key] for key in wanted})
    rows = counted_run(feeds, lambda feed: request)
    tokens = sum(int(feed["input_ids"].size) for feed in feeds)
    return {
        "model": name,
        "variant": "sentence-transformers openvino (fp32 IR)",
        "ir": str(anchor_ir(name).relative_to(Path(__file__).resolve().parents[2])),
        "compile_config": config,
        "inference_precision": precision,
        "sentences": len(sentences),
        "padded_tokens": tokens,
        **summarize(rows, tokens, 1, {}),
    }


def with_activation(folder: Path, activation: str, out: Path) -> Path:
    """`folder` (an OpenVINO export) itself for "erf"; otherwise a copy at `out` whose every Gelu node is
    replaced by `activation` (ACTIVATIONS). Refused where the export has no Gelu node."""
    import shutil

    import numpy as np
    import openvino as ov
    from openvino import opset13 as ops

    if activation not in ACTIVATIONS:
        raise SystemExit(f"--activations: {activation!r} is not one of {', '.join(ACTIVATIONS)}")
    if activation == "erf":
        return folder
    model = ov.Core().read_model(str(folder / "model.xml"))
    gelus = [node for node in model.get_ordered_ops() if node.get_type_name() == "Gelu"]
    if not gelus:
        raise SystemExit(f"{folder / 'model.xml'}: no Gelu node to replace")
    for node in gelus:
        x = node.input_value(0)
        if activation == "tanh":
            replacement = ops.gelu(x, "tanh")
        elif activation == "quick":
            replacement = ops.swish(x, ops.constant(np.float32(1.702)))
        else:
            replacement = ops.relu(x)
        for target in list(node.output(0).get_target_inputs()):
            target.replace_source_output(replacement.output(0))
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(folder, out, ignore=shutil.ignore_patterns("model.xml", "model.bin"))
    ov.save_model(model, str(out / "model.xml"), compress_to_fp16=False)
    return out


def activation_rows(profiled: dict, sentences: list[str], gold, args, snippets: bool | None) -> dict:
    """Per activation of `args.activations`, on copies of the export `profiled` (profile_model's result):
    kernel seconds, the two feed-forward products' seconds and GOP/s, and the STS-B Spearman of the vectors
    (`gold`: the scores of the sentence pairs)."""
    import tempfile

    from bench.encode_speed import stsb_spearman
    from sentkit.encoders.openvino.encoder import OpenVinoEncoder

    name, base, shapes = profiled["model"], Path(profiled["folder"]), profiled["shapes"]
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for activation in args.activations.split(","):
            folder = with_activation(base, activation, Path(tmp) / activation)
            res = profile_model(
                name, f"{args.variant}+{activation}", sentences, args, snippets, folder, shapes
            )
            vectors = OpenVinoEncoder(folder, threads=args.threads).encode(sentences, args.batch_size)
            rows[activation] = {
                "computes": ACTIVATIONS[activation],
                "total_seconds": res["total_seconds"],
                "first_ffn": res["weight_products"][FIRST_FFN],
                "second_ffn": res["weight_products"][SECOND_FFN],
                "stsb_spearman": stsb_spearman(vectors, gold) if len(sentences) % 2 == 0 else None,
            }
            row = rows[activation]
            print(
                f"  {activation:<6} kernels {row['total_seconds']:.3f} s, first FFN product "
                f"{row['first_ffn']['seconds']:.3f} s at {row['first_ffn']['gops']:.0f} GOP/s (second: "
                f"{row['second_ffn']['gops']:.0f}), STS-B {row['stsb_spearman'] or float('nan'):.2f}"
            )
    return rows


def split_products(res: dict) -> dict:
    """Kernel seconds in weight products (FullyConnected nodes) and in everything else."""
    products = sum(
        row["seconds"] for key, row in res["by_kernel"].items() if key.startswith("FullyConnected")
    )
    return {"weight_products": products, "other": res["total_seconds"] - products}


def two_x_bound(sentkit: dict, anchor: dict) -> dict:
    """The kernel-time ratio anchor / sentkit as measured, and the most it could be with sentkit's weight
    products at twice the anchor's rate and its other kernels as measured."""
    ours, theirs = split_products(sentkit), split_products(anchor)
    best = theirs["weight_products"] / 2 + ours["other"]
    return {
        "sentkit": ours,
        "anchor": theirs,
        "measured_kernel_ratio": anchor["total_seconds"] / sentkit["total_seconds"],
        "ratio_if_products_at_twice_the_anchor_rate": anchor["total_seconds"] / best,
        "other_kernels_allowed_for_2x": anchor["total_seconds"] / 2 - theirs["weight_products"] / 2,
    }


def print_profile(res: dict, top: int = 12) -> None:
    setting = res.get("openvino") or {"inference_precision": res.get("inference_precision")}
    print(f"\n{res['model']}@{res['variant']}: {res['total_seconds']:.3f} s of kernels, {setting}")
    for key in ("by_kernel", "by_role"):
        for label, row in list(res[key].items())[:top]:
            print(f"  {100 * row['share']:5.1f}% {row['seconds']:7.3f} s  {label}")
        print()
    for role, row in res["weight_products"].items():
        print(f"  {role:<32} {row['seconds']:7.3f} s  {row['gops']:8.1f} GOP/s")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="e5-small-m,minilm-en")
    parser.add_argument("--variant", default="openvino-int8", choices=["openvino", "openvino-int8"])
    parser.add_argument("--snippets", default="auto", choices=["auto", "on", "off"])
    parser.add_argument("--sentences", type=int, default=2758)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--anchor", action="store_true", help="also profile sentence-transformers' export")
    parser.add_argument(
        "--activations",
        default="",
        help=f"also profile copies with these activations: {', '.join(ACTIVATIONS)}",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    snippets = {"auto": None, "on": True, "off": False}[args.snippets]
    sentences = stsb_test_sentences(args.data_root)[: args.sentences]
    models = {}
    for name in args.models.split(","):
        models[name] = profile_model(name, args.variant, sentences, args, snippets)
        print_profile(models[name])
        if args.anchor:
            anchor = profile_anchor(name, sentences, args)
            print_profile(anchor)
            models[name]["anchor"] = anchor
            bound = models[name]["two_x_bound"] = two_x_bound(models[name], anchor)
            print(
                f"\n  kernel time, anchor / sentkit: {bound['measured_kernel_ratio']:.2f}x; at most "
                f"{bound['ratio_if_products_at_twice_the_anchor_rate']:.2f}x with int8 products at twice the "
                f"anchor's rate; 2x needs the other kernels at {bound['other_kernels_allowed_for_2x']:.3f} s "
                f"(now {bound['sentkit']['other']:.3f} s)"
            )
        if args.activations:
            gold = stsb_test_gold(args.data_root)
            models[name]["activations"] = activation_rows(models[name], sentences, gold, args, snippets)
    result = {
        "data": "STS-B test (sts-test.csv), both sentences of each pair",
        "threads": args.threads,
        "batch_size": args.batch_size,
        "snippets": args.snippets,
        "models": models,
        **provenance(),
    }
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
