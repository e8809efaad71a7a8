"""Which attention kernel a transformers model runs: switched for a block of code, or per batch by width.

On CPU, PyTorch's fused SDPA kernel works in fixed-size blocks, so on short inputs it does more work
than plain matmul + softmax ("eager"): measured on 2 cores for a (64, 12 heads, L, 32) batch, eager takes
0.5-4 ms per layer against SDPA's 3-10 ms for L <= 64, while SDPA wins from L ~ 96 on (48 vs 172 ms at
256), where eager also holds the full (batch, heads, L, L) score tensor. Encoding STS-B test sentences
(18.5 tokens on average) with e5-small-m, SDPA's kernel was 13% of the time and eager's attention 4%.
"""

from __future__ import annotations

import contextlib
import functools
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


@functools.cache
def _switchable(model_class: type) -> bool:
    """Whether transformers can switch this model class's attention at run time (models written before its
    attention interface cannot, and would log a warning per batch); asked once per class."""
    check = getattr(model_class, "_can_set_attn_implementation", None)
    return bool(check()) if callable(check) else hasattr(model_class, "set_attn_implementation")
