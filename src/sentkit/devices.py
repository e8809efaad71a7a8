"""Where torch work runs: a CUDA GPU when torch sees one and the user allows it, else the CPU."""

from __future__ import annotations

from sentkit.errors import InvalidArgument


def torch_device(device: str, flag: str = "--device") -> str:
    """ "cuda" or "cpu" for `device` (auto, cpu or cuda): auto takes a GPU when torch sees one; cuda without
    one is refused in one line naming `flag`."""
    if device == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise InvalidArgument(f"{flag} cuda: torch sees no GPU")
    return "cpu"
