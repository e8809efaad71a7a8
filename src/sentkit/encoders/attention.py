"""Which attention kernel a transformers model runs: switched for a block of code, or per batch by width.

On CPU, PyTorch's fused SDPA kernel works in fixed-size blocks, so on short inputs it does more work
than plain matmul + softmax ("eager"): measured on 2 cores for a (64, 12 heads, L, 32) batch, eager takes
0.5-4 ms per layer against SDPA's 3-10 ms for L <= 64, while SDPA wins from L ~ 96 on (48 vs 172 ms at
256), where eager also holds the full (batch, heads, L, L) score tensor. Encoding STS-B test sentences
(18.5 tokens on average) with e5-small-m, SDPA's kernel was 13% of the time and eager's attention 4%.

The implementation is a setting of the shared model config, and transformers builds a different mask
for each (a float additive mask for eager, a boolean one for SDPA), so a forward that saw the setting
change half-way would mix them. `short_batch_attention` therefore runs every CPU batch of a switchable
model under one lock per model: threads encoding with the same model take turns (on CPU they compete
for the same cores anyway) and never see another's setting.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# Widest batch (tokens) that runs eager attention on CPU; the kernels cross between 64 and 96 (see above).
EAGER_MAX_TOKENS = 64


@contextlib.contextmanager
def attention_implementation(model, name: str | None) -> Iterator[None]:
    """Run the block with `model` (a transformers PreTrainedModel) on attention `name`, then restore.

    A no-op when `name` is None, when the model already uses it, or when the model cannot switch
    (no `set_attn_implementation`, or no implementation recorded in its config)."""
    setter = getattr(model, "set_attn_implementation", None)
    config = getattr(model, "config", None)
    before = getattr(config, "_attn_implementation", None)
    if name is None or setter is None or before in (None, name):
        yield
        return
    setter(name)
    try:
        yield
    finally:
        setter(before)


def inference_attention(model, width: int, device: torch.device) -> str | None:
    """The attention to run a batch `width` tokens wide for inference: eager for short CPU batches of a
    model configured with SDPA, else None (keep the model's own choice, e.g. flash attention on a GPU)."""
    before = getattr(getattr(model, "config", None), "_attn_implementation", None)
    if device.type == "cpu" and before == "sdpa" and width <= EAGER_MAX_TOKENS and _switchable(type(model)):
        return "eager"
    return None


@contextlib.contextmanager
def short_batch_attention(model, width: int, device: torch.device) -> Iterator[None]:
    """Run one inference batch `width` tokens wide with the attention `inference_attention` picks,
    holding the model's lock on CPU (see the module docstring); elsewhere a no-op."""
    if device.type != "cpu" or not _switchable(type(model)):
        yield
        return
    with _lock_of(model), attention_implementation(model, inference_attention(model, width, device)):
        yield


_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its lock, gone with the model
_LOCKS_GUARD = threading.Lock()


def _lock_of(model) -> threading.Lock:
    with _LOCKS_GUARD:
        lock = _LOCKS.get(model)
        if lock is None:
            lock = _LOCKS[model] = threading.Lock()
        return lock


@functools.cache
def _switchable(model_class: type) -> bool:
    """Whether transformers can switch this model class's attention at run time (models written before its
    attention interface cannot, and would log a warning per batch); asked once per class."""
    check = getattr(model_class, "_can_set_attn_implementation", None)
    return bool(check()) if callable(check) else hasattr(model_class, "set_attn_implementation")
