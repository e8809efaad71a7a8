"""The in-process engine: this process reads the inputs and encodes one shard after another."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sentkit.corpus.readers import InputFile
from sentkit.corpus.shards import InputEnd, ShardSettings, ShardWork, encode_and_write, iter_work
from sentkit.devices import torch_device
from sentkit.errors import InvalidArgument


@dataclass
class EncodeJob:
    """What an engine needs: the inputs and settings, the shards already done, how to run the encoder.

    `model` is the name workers load (an absolute path for a local folder); `before_shard` runs where a
    shard is about to be encoded (tests inject faults there).
    """

    inputs: list[InputFile]
    folder: Path
    settings: ShardSettings
    model: str
    done: dict[int, dict[int, dict]] = field(default_factory=dict)
    known_rows: list[int | None] = field(default_factory=list)
    threads: int | None = None
    device: str = "auto"
    precision: str = "fp32"
    workers: int | None = None
    address: str | None = None
    before_shard: Callable[[ShardWork], None] | None = None

    def work(self, index: int) -> Iterator[ShardWork | InputEnd]:
        """Input `index`'s shards still to encode, then its end (finished shards are checked and skipped)."""
        known = self.known_rows[index] if index < len(self.known_rows) else None
        return iter_work(self.inputs[index], index, self.settings, self.done.get(index), known)


def resolve_device(encoder, device: str) -> str:
    """The device `encoder` runs on for `device` ("auto": a GPU when torch sees one and the encoder is a torch
    module); `cuda` where it cannot run is refused (InvalidArgument)."""
    if device == "cpu" or not _is_torch_module(encoder):
        if device == "cuda":
            raise InvalidArgument(f"--device cuda: {type(encoder).__name__} runs on the CPU only")
        return "cpu"
    return torch_device(device)


def place_encoder(encoder, device: str):
    """`encoder` on `device` (see resolve_device); returns (encoder, the device name it runs on)."""
    name = resolve_device(encoder, device)
    return (encoder.to("cuda") if name == "cuda" else encoder), name


def _is_torch_module(encoder) -> bool:
    return callable(getattr(encoder, "to", None)) and hasattr(encoder, "parameters")


PRECISIONS = ("fp32", "fp16", "bf16")
FP16_NEEDS_GPU = "--precision fp16 needs a GPU (--device cuda); bf16 runs on CPUs too"


def check_precision(encoder, precision: str, device: str) -> None:
    """Refuse (InvalidArgument, one line) a precision `encoder` cannot run at on `device`: fp16 needs a GPU,
    and a model that is not a torch module (ONNX, OpenVINO, static) runs at fp32 only."""
    if precision not in PRECISIONS:
        raise InvalidArgument(f"--precision {precision}: expected one of {', '.join(PRECISIONS)}")
    if precision == "fp32":
        return
    if not _is_torch_module(encoder):
        raise InvalidArgument(f"--precision {precision}: {type(encoder).__name__} runs at fp32 only")
    if precision == "fp16" and device != "cuda":
        raise InvalidArgument(FP16_NEEDS_GPU)


def cast_encoder(encoder, precision: str, device: str):
    """`encoder` with its torch weights cast to `precision` (fp32 leaves it as loaded; check_precision's
    refusals first): inputs stay token ids and `encode` still returns float32 vectors. `device` is where
    the encoder was placed."""
    check_precision(encoder, precision, device)
    if precision == "fp32":
        return encoder
    import torch

    return encoder.to(dtype=torch.float16 if precision == "fp16" else torch.bfloat16)


def precision_fingerprint(fingerprint: str, precision: str) -> str:
    """The fingerprint of vectors a model makes at `precision`: fp32's is the model's own, others carry
    "+fp16" / "+bf16", so a shard folder or a mining run never mixes vectors of two precisions."""
    return fingerprint if precision == "fp32" else f"{fingerprint}+{precision}"


def run_local(job: EncodeJob, encoder, info: dict) -> Iterator[dict | InputEnd]:
    """Encode every missing shard in this process, input by input; yields shard records and input ends."""
    encoder, info["device"] = place_encoder(encoder, job.device)
    encoder = cast_encoder(encoder, job.precision, info["device"])
    info["precision"] = job.precision
    info["workers"] = 1
    for index, source in enumerate(job.inputs):
        for item in job.work(index):
            if isinstance(item, InputEnd):
                yield item
                continue
            if job.before_shard is not None:
                job.before_shard(item)
            yield encode_and_write(encoder, item, job.settings, job.folder, source.path)
