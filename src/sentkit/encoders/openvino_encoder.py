"""An OpenVINO export folder (openvino_export.py) as an encoder, on the CPU.

Tokenization, length-sorted batching and truncation accounting are OnnxEncoder's; only the runtime differs.
The model is compiled for dynamic batch and length with `threads` inference threads, one stream, the
latency hint, and the inference precision the export records (f32: OpenVINO would otherwise run the fp32
parts in bf16 on CPUs that have it).
"""

from __future__ import annotations

from pathlib import Path

from sentkit.encoders.onnx_encoder import OnnxEncoder
from sentkit.encoders.openvino_export import require_openvino


class OpenVinoEncoder(OnnxEncoder):
    """Sentence vectors from an OpenVINO folder: `encode(sentences, batch_size) -> (n, dim) float32`."""

    runtime = "openvino"

    def require(self) -> None:
        require_openvino()

    def open(self, path: Path):
        import openvino as ov

        config = {
            "INFERENCE_NUM_THREADS": self.threads,
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": self.meta.get("inference_precision", "f32"),
        }
        self.compiled = ov.Core().compile_model(str(path), "CPU", config)
        request = self.compiled.create_infer_request()

        def run(feed):
            request.infer(feed)
            return request.get_output_tensor(0).data.copy()  # (batch, dim); the buffer is reused per call

        return run
