"""The sentence-transformers modules sentkit reproduces after the transformer: Pooling and Dense in torch.

Pooling formulas follow sentence-transformers 6 (`Pooling._forward_padded`), so vectors match its `encode`
for right and left padding alike; the same code runs in `TransformerEncoder.forward` and inside the
exported ONNX graph. Normalize is a flag on the encoder (L2 over the last dimension).
"""

from __future__ import annotations

import torch
from torch import nn

# sentence-transformers' single pooling modes; a Pooling that concatenates several is refused (st_layout.py)
POOLING_MODES = ("cls", "mean", "max", "weightedmean", "lasttoken", "mean_sqrt_len_tokens")

# Dense activations sentkit reproduces: what sentence-transformers instantiates with no arguments
ACTIVATIONS: dict[str, type[nn.Module]] = {
    cls.__name__: cls for cls in (nn.Identity, nn.Tanh, nn.ReLU, nn.GELU, nn.Sigmoid, nn.SiLU)
}


def activation_class(name: str) -> type[nn.Module] | None:
    """The activation a Dense config names (`torch.nn.modules.activation.Tanh` or `torch.nn.Tanh`), or None."""
    short = name.rsplit(".", 1)[-1]
    cls = ACTIVATIONS.get(short)
    if cls is None or name not in (f"{cls.__module__}.{short}", f"torch.nn.{short}"):
        return None
    return cls


class Dense(nn.Module):
    """sentence-transformers' Dense: `activation(linear(x))` on the sentence vector."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, activation: str = "Tanh"):
        super().__init__()
        cls = ACTIVATIONS.get(activation) or activation_class(activation)
        if cls is None:
            raise ValueError(f"Dense activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.activation = cls()

    @property
    def in_features(self) -> int:
        return self.linear.in_features

    @property
    def out_features(self) -> int:
        return self.linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.linear(x))  # (batch, out_features)

    def config(self) -> dict:
        """The Dense `config.json` sentence-transformers writes and reads."""
        cls = type(self.activation)
        return {
            "in_features": self.in_features,
            "out_features": self.out_features,
            "bias": self.linear.bias is not None,
            "activation_function": f"{cls.__module__}.{cls.__name__}",
        }


def prompt_token_count(tokenizer, prompt: str) -> int:
    """Leading tokens a prompt occupies (special tokens before it included), as sentence-transformers counts
    them for `include_prompt=False`: the prompt tokenized alone, minus a trailing special token."""
    ids = tokenizer([prompt])["input_ids"][0]
    if ids and ids[-1] in set(tokenizer.all_special_ids):
        return len(ids) - 1
    return len(ids)


def pool(hidden: torch.Tensor, mask: torch.Tensor, mode: str, prompt_tokens: int = 0) -> torch.Tensor:
    """Token states (batch, seq, hidden) and attention mask (batch, seq) -> sentence vectors (batch, hidden).

    `prompt_tokens` > 0 leaves that many tokens after any left padding out of the pooling (a Pooling module
    with `include_prompt: false`). Rows are padded on either side; the first real token is found per row.
    """
    mask = mask.to(torch.int32)  # int64 ArgMax is slow or missing in some onnxruntime builds
    positions = torch.arange(hidden.shape[1], device=hidden.device, dtype=torch.int32)  # (seq,)
    first = mask.argmax(dim=1)  # (batch,): first real token (left padding ends there)
    kept = mask
    if prompt_tokens:
        kept = mask * (positions.unsqueeze(0) >= (first + prompt_tokens).unsqueeze(1)).to(torch.int32)
    weights = kept.unsqueeze(-1).to(hidden.dtype)  # (batch, seq, 1)
    if mode == "cls":
        return _gather_rows(hidden, kept.argmax(dim=1))
    if mode == "lasttoken":  # the last kept token; a row with none gives zeros, as sentence-transformers
        return _gather_rows(hidden * weights, (kept * positions.unsqueeze(0)).argmax(dim=1))
    if mode == "max":
        return hidden.masked_fill(weights == 0, float("-inf")).max(dim=1).values  # (batch, hidden)
    if mode == "weightedmean":  # token i of a row weighs i (1-based, counted from its first real token)
        rank = (
            (positions.unsqueeze(0) - first.unsqueeze(1) + 1).unsqueeze(-1).to(hidden.dtype)
        )  # (batch, seq, 1)
        weights = weights * rank
    elif mode not in ("mean", "mean_sqrt_len_tokens"):
        raise ValueError(f"pooling mode must be one of {POOLING_MODES}, got {mode!r}")
    total = (hidden * weights).sum(dim=1)  # (batch, hidden)
    count = weights.sum(dim=1).clamp(min=1e-9)  # (batch, 1)
    return total / (count.sqrt() if mode == "mean_sqrt_len_tokens" else count)


def _gather_rows(hidden: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """hidden[b, index[b]] for each row b: (batch, seq, hidden), (batch,) -> (batch, hidden)."""
    index = index.to(torch.int64).view(-1, 1, 1).expand(-1, 1, hidden.shape[-1])  # (batch, 1, hidden)
    return torch.gather(hidden, 1, index).squeeze(1)
