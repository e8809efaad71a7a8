"""Cross-process gathering of embeddings with gradient, so in-batch negatives span every process."""

from __future__ import annotations

import torch
import torch.distributed as dist


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def gather_with_grad(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Every process's rows concatenated in rank order, and the offset of this process's first row.

    Gradients flow back to the process that owns each row (`torch.distributed.nn.functional.all_gather`),
    so a loss over gathered candidates trains every replica. Processes may hold different row counts
    (an uneven last batch): rows are padded for the collective and the padding is dropped after it.
    In a single process this is the identity with offset 0.
    """
    if not is_distributed():
        return x, 0
    from torch.distributed.nn.functional import all_gather

    sizes, x = _padded_to_largest(x)
    parts = all_gather(x)  # world x (biggest, ...)
    gathered = torch.cat([part[:size] for part, size in zip(parts, sizes)])  # (sum(sizes), ...)
    return gathered, sum(sizes[: dist.get_rank()])


def gather_ids(x: torch.Tensor) -> torch.Tensor:
    """Every process's integer ids concatenated in rank order (no gradient): the labels of gathered rows."""
    if not is_distributed():
        return x
    sizes, x = _padded_to_largest(x)
    parts = [torch.empty_like(x) for _ in sizes]
    dist.all_gather(parts, x.contiguous())
    return torch.cat([part[:size] for part, size in zip(parts, sizes)])  # (sum(sizes), ...)


def _padded_to_largest(x: torch.Tensor) -> tuple[list[int], torch.Tensor]:
    """Each process's row count, and `x` zero-padded to the largest of them (collectives need equal shapes)."""
    count = torch.tensor([x.shape[0]], dtype=torch.long, device=x.device)
    counts = [torch.zeros_like(count) for _ in range(dist.get_world_size())]
    dist.all_gather(counts, count)
    sizes = [int(c.item()) for c in counts]
    biggest = max(sizes)
    if x.shape[0] < biggest:
        pad = x.new_zeros((biggest - x.shape[0], *x.shape[1:]))
        x = torch.cat([x, pad])  # (biggest, ...)
    return sizes, x
