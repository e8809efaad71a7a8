"""An OpenVINO export folder (export.py) as an encoder, on the CPU.

Tokenization, length-sorted batching and truncation accounting are OnnxEncoder's; only the runtime differs.
The model is compiled for dynamic batch and length on `threads` inference threads, one stream by default,
in the inference precision the export records (f32: OpenVINO would otherwise run the fp32 parts in bf16 on
CPUs that have it). `encode` keeps one batch in flight per infer request, so the next batch is tokenized
while the current one runs.

OpenVINO's CPU plugin fuses each layer's attention (two matmuls, softmax, head transposes) into one
generated kernel ("snippets"). On AMX hosts that kernel was slower than the separate ops for batches up to
`NARROW_MAX_WIDTH` tokens wide and faster for wider ones (measured on 2 idle cores; the figures are in
docs/performance.md#choosing-the-int8-path), so
there batches that narrow run on a copy compiled without it and wider ones on a copy compiled with it (made
on the first wide batch: a compiled copy of e5-small-m holds about 0.5 GB). On other host kinds every batch
runs with the plugin's default until a measurement there says otherwise.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sentkit.encoders import int8_choice
from sentkit.encoders.onnx.contract import INPUTS
from sentkit.encoders.onnx.encoder import OnnxEncoder
from sentkit.encoders.protocol import length_sorted_batches, padded_batch
from sentkit.provenance import cpu_flags


def require_openvino(int8: bool = False, export: bool = False) -> None:
    """One line naming the extra when openvino is missing (or nncf, for int8; or onnx and onnxruntime,
    which trace the graph, for an export)."""
    needed = ["openvino"] + (["nncf"] if int8 else []) + (["onnx", "onnxruntime"] if export else [])
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"OpenVINO export needs {' and '.join(missing)}: pip install 'sentkit[openvino]'")


# host kind -> whether the CPU plugin's fused attention kernels ("snippets") run for narrow batches there
SNIPPETS: dict[str, bool] = {"amx": False}
# widest batch (tokens) that counts as narrow: the fused kernel won above it on both models measured
# (docs/performance.md#choosing-the-int8-path)
NARROW_MAX_WIDTH = 64


def snippets_on(flags: Sequence[str] | None = None) -> bool:
    """Whether OpenVINO's fused attention kernels run for narrow batches on a CPU with `flags` (this CPU's
    by default)."""
    return SNIPPETS.get(int8_choice.host_kind(cpu_flags(flags)), True)


class OpenVinoEncoder(OnnxEncoder):
    """Sentence vectors from an OpenVINO folder: `encode(sentences, batch_size) -> (n, dim) float32`.

    `streams`: OpenVINO streams sharing the threads (default 1; more, each with threads / streams threads,
    suit many cores and many batches). `snippets`: whether the fused attention kernels run for every batch
    (default: by host kind for batches up to NARROW_MAX_WIDTH tokens, on for wider ones)."""

    runtime = "openvino"

    def __init__(
        self,
        folder: str | Path,
        threads: int | None = None,
        name: str | None = None,
        streams: int = 1,
        snippets: bool | None = None,
    ) -> None:
        if streams < 1:
            raise ValueError(f"streams must be >= 1, got {streams}")
        self.streams = streams
        narrow = snippets_on() if snippets is None else bool(snippets)
        self.snippets = {"narrow": narrow, "wide": True if snippets is None else bool(snippets)}
        self.compiled: dict[bool, tuple] = {}  # snippets setting -> (compiled model, its infer requests)
        super().__init__(folder, threads=threads, name=name)
        compiled, requests = self.compiled[self.snippets["narrow"]]
        self.runtime_info["openvino"] = {
            "streams": compiled.get_property("NUM_STREAMS"),
            "infer_requests": len(requests),
            "snippets": self.snippets["narrow"],
            "snippets_wide": self.snippets["wide"],
            "narrow_max_width": NARROW_MAX_WIDTH,
            "inference_precision": self.meta.get("inference_precision", "f32"),
        }

    def require(self) -> None:
        require_openvino()

    def compile_config(self, snippets: bool = True) -> dict:
        """The CPU plugin settings a copy with (or without) the fused attention kernels compiles with."""
        config = {
            "INFERENCE_NUM_THREADS": self.threads,
            "NUM_STREAMS": min(self.streams, self.threads),
            "PERFORMANCE_HINT": "LATENCY" if self.streams == 1 else "THROUGHPUT",
            "INFERENCE_PRECISION_HINT": self.meta.get("inference_precision", "f32"),
        }
        if not snippets:
            config["SNIPPETS_MODE"] = "DISABLE"  # a CPU plugin setting outside its public property list
        return config

    def snippets_for(self, width: int) -> bool:
        """Whether a batch `width` tokens wide runs with the fused attention kernels."""
        return self.snippets["narrow" if width <= NARROW_MAX_WIDTH else "wide"]

    def compiled_for(self, width: int) -> tuple:
        """(compiled model, infer requests) for a batch `width` tokens wide, compiled on first use."""
        snippets = self.snippets_for(width)
        if snippets not in self.compiled:
            import openvino as ov

            path = str(self.folder / self.meta["model_file"])
            try:
                compiled = ov.Core().compile_model(path, "CPU", self.compile_config(snippets))
            except RuntimeError as err:
                if snippets or "Unsupported property SNIPPETS_MODE" not in str(err):
                    raise
                # an OpenVINO other than the extra's pin may not take the setting: its default runs instead
                self.snippets = {"narrow": True, "wide": True}
                return self.compiled_for(width)
            count = max(1, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
            self.compiled[snippets] = (compiled, [compiled.create_infer_request() for _ in range(count)])
        return self.compiled[snippets]

    def open(self, path: Path) -> None:
        """Compile the narrow copy (most sentences); `encode` below runs the requests itself, so there is no
        per-batch function for OnnxEncoder.encode."""
        self.compiled_for(0)

    def encode(
        self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """Vectors in input order, one batch in flight per infer request; inputs longer than `max_length`
        tokens are cut and recorded."""
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        pad = self.meta["pad_token_id"]
        in_flight: list[tuple] = []  # (request, positions), oldest first, all of one compiled copy
        requests: list = []

        def collect(request=None) -> None:
            """Store the batches in flight, oldest first, until `request` is free (all of them without one)."""
            while in_flight and (request is None or any(r is request for r, _ in in_flight)):
                done, positions = in_flight.pop(0)
                done.wait()
                out[positions] = done.get_output_tensor(0).data

        try:
            batches = length_sorted_batches(self, sentences, batch_size, show_progress)
            for i, (positions, features, rows, width) in enumerate(batches):
                _, wanted = self.compiled_for(width)
                if wanted is not requests:  # another compiled copy: finish the batches of this one first
                    collect()
                    requests = wanted
                request = requests[i % len(requests)]
                collect(request)
                feed = padded_batch(features, rows, width, {"input_ids": pad}, keys=INPUTS)
                request.start_async(feed)
                in_flight.append((request, positions))
            collect()
        finally:
            for request, _ in in_flight:  # nothing left running on an error
                request.wait()
        return out
