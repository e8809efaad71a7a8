"""Loading torch-pickled files (pytorch_model.bin, optimizer.pt, rng_state.pth, ...) as data only.

Every such file sentkit reads goes through `load_tensors` (tensors, containers and plain numbers: torch's
`weights_only=True`), and a checkpoint's files that `transformers.Trainer` reads itself are checked the same
way first (`check_checkpoint_files`), as are a model folder's weights before transformers loads them
(`check_model_weights`). A file that holds anything else (a class, a function: a pickle that
could run code) is refused in one line naming it; it is never loaded another way.
"""

from __future__ import annotations

import contextlib
import pickle
from pathlib import Path
from typing import Any

from sentkit.errors import DataFormatError

# what a Trainer checkpoint holds in torch's pickle format (model.safetensors is not a pickle)
CHECKPOINT_PICKLES = ("pytorch_model.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth", "rng_state_*.pth")
EXPECTED = "holds Python objects besides tensors (a pickle that could run code), so it is not loaded"


def load_tensors(path: str | Path, *, numpy_state: bool = False, mmap: bool = False) -> Any:
    """The file's tensors (on the CPU); DataFormatError when it holds anything else or is not torch's format.

    `numpy_state` also allows numpy arrays and dtypes (the RNG state a Trainer checkpoint records).
    """
    import torch

    try:
        with _numpy_allowed() if numpy_state else contextlib.nullcontext():
            return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError:
        raise DataFormatError(path, None, EXPECTED) from None
    except RuntimeError as err:
        if mmap and "mmap" in str(err):  # the legacy (non-zip) format cannot be mapped
            return load_tensors(path, numpy_state=numpy_state)
        raise DataFormatError(path, None, _first_line(err, "a file written by torch.save")) from None
    except (EOFError, ValueError) as err:
        raise DataFormatError(path, None, _first_line(err, "a file written by torch.save")) from None


def check_checkpoint_files(checkpoint: str | Path) -> None:
    """Refuse a checkpoint whose torch-pickled files hold more than tensors, before the Trainer loads them
    (memory-mapped: the tensors themselves are not read)."""
    folder = Path(checkpoint)
    for pattern in CHECKPOINT_PICKLES:
        for path in sorted(folder.glob(pattern)):
            if path.is_file():
                load_tensors(path, numpy_state=path.name.startswith("rng_state"), mmap=True)


def check_model_weights(folder: str | Path) -> None:
    """Refuse a local model folder whose torch-pickled weights (pytorch_model*.bin, what transformers loads
    when there is no model.safetensors) hold more than tensors, before transformers reads them."""
    folder = Path(folder)
    if folder.is_dir():
        for path in sorted(folder.glob("pytorch_model*.bin")):
            if path.is_file():
                load_tensors(path, mmap=True)


def _numpy_allowed():
    """torch's allowlist plus the numpy types of an RNG state (what transformers allows for rng_state.pth)."""
    import numpy as np
    import torch

    dtype_classes = {type(np.dtype(t)) for t in ("uint32", "int64", "float64")}
    return torch.serialization.safe_globals(
        [np.core.multiarray._reconstruct, np.ndarray, np.dtype, *dtype_classes]
        if not hasattr(np, "_core")
        else [np._core.multiarray._reconstruct, np.ndarray, np.dtype, *dtype_classes]
    )


def _first_line(err: BaseException, expected: str) -> str:
    """The expected form, and torch's reason when it says nothing about loading the file unsafely."""
    reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
    if "weights_only" in reason or "pickle" in reason.lower():
        return f"expected {expected}"
    return f"expected {expected} ({reason})"
