"""Hugging Face transformer encoder with cls / cls_mlp / mean pooling; saves in sentence-transformers layout."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from sentkit.atomic import atomic_directory
from sentkit.encoders.attention import short_batch_attention
from sentkit.encoders.protocol import check_batch_size, length_sorted_batches, padded_batch

POOLINGS = ("cls", "cls_mlp", "mean")
LANGUAGES_FILE = "sentkit_languages.json"  # the training languages an encoder declares, saved beside it


class TransformerEncoder(nn.Module):
    """A `transformers` model plus pooling.

    `cls_mlp` adds SimCSE's dense+tanh head over [CLS] that is used in training only:
    `encode` (and the saved model) use plain [CLS], as SimCSE and EASE evaluate.
    `languages` are the training languages (ISO 639-1) when known, else None; `truncated_texts` holds
    every input `encode` cut at `max_length` tokens (`truncated` counts them per call, summed).
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer,
        pooling: str = "cls",
        max_length: int = 128,
        prefix: str = "",
        normalize: bool = False,
        name: str = "transformer",
        languages: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.max_length = max_length
        self.prefix = prefix
        self.normalize = normalize
        self.name = name
        self.languages = tuple(languages) if languages is not None else None
        self.truncated = 0
        self.truncated_texts: set[str] = set()
        hidden = model.config.hidden_size
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()) if pooling == "cls_mlp" else None

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def from_pretrained(
        cls,
        path_or_name: str | Path,
        pooling: str | None = None,
        max_length: int | None = None,
        prefix: str = "",
        name: str | None = None,
        languages: Sequence[str] | None = None,
    ) -> TransformerEncoder:
        """Load a local directory (Hugging Face or sentence-transformers layout) or a hub name.

        `languages` (training languages) defaults to what a sentkit-saved directory declares, else None.
        """
        from transformers import AutoModel, AutoTokenizer

        st = _read_sentence_transformers_layout(Path(path_or_name))
        with _quiet_transformers():  # the dropped pooler is expected, not worth a load report per model
            model = (
                AutoModel.from_pretrained(str(path_or_name), add_pooling_layer=False)
                if _is_bert_like(path_or_name)
                else AutoModel.from_pretrained(str(path_or_name))
            )
        tokenizer = AutoTokenizer.from_pretrained(str(path_or_name))
        enc = cls(
            model,
            tokenizer,
            pooling=pooling or st.get("pooling", "cls"),
            max_length=max_length or st.get("max_length", 128),
            prefix=prefix or st.get("prefix", ""),
            normalize=st.get("normalize", False),
            name=name or Path(str(path_or_name)).name,
            languages=languages if languages is not None else st.get("languages"),
        )
        return enc

    # ---- forward / encode -----------------------------------------------------------------
    def tokenize(self, sentences: Sequence[str]) -> dict[str, torch.Tensor]:
        texts = [self.prefix + s for s in sentences] if self.prefix else list(sentences)
        return self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Pooled sentence vectors (batch, hidden); the MLP head applies only in training mode."""
        inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        hidden = self.model(**inputs).last_hidden_state  # (batch, seq, hidden)
        if self.pooling == "mean":
            mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # (batch, seq, 1)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # (batch, hidden)
        else:
            pooled = hidden[:, 0]  # (batch, hidden)
            if self.mlp is not None and self.training:
                pooled = self.mlp(pooled)
        if self.normalize:
            pooled = nn.functional.normalize(pooled, dim=-1)
        return pooled

    @torch.inference_mode()
    def encode(
        self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """Vectors in input order; batches hold sentences of similar token length, so little padding,
        and short CPU batches run eager attention (faster there than SDPA, see encoders/attention.py).

        Inputs longer than `max_length` tokens are cut there and recorded in `truncated_texts`.
        """
        batch_size = check_batch_size(batch_size)
        was_training = self.training
        self.eval()
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        device = self.device
        for positions, features, rows, width in length_sorted_batches(
            self, sentences, batch_size, show_progress
        ):
            batch = self._pad(features, rows, width)
            if device.type != "cpu":
                batch = {k: v.to(device) for k, v in batch.items()}
            with short_batch_attention(self.model, width, device):
                out[positions] = self.forward(batch).float().cpu().numpy()
        if was_training:
            self.train()
        return out

    def _pad(self, features, idx: np.ndarray, length: int) -> dict[str, torch.Tensor]:
        """Rows `idx` of unpadded tokenizer output as (len(idx), length) tensors, padded as the tokenizer would."""
        fill = {
            "input_ids": self.tokenizer.pad_token_id or 0,
            "token_type_ids": getattr(self.tokenizer, "pad_token_type_id", 0),
        }
        left = self.tokenizer.padding_side == "left"
        return {k: torch.from_numpy(v) for k, v in padded_batch(features, idx, length, fill, left).items()}

    # ---- saving ---------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write a directory that both sentkit and sentence-transformers load, atomically."""
        path = Path(path)
        with atomic_directory(path) as tmp:
            self.model.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            write_sentence_transformers_layout(
                tmp, self.dim, self.pooling, self.max_length, self.prefix, self.normalize
            )
            if self.languages is not None:
                (tmp / LANGUAGES_FILE).write_text(json.dumps({"languages": list(self.languages)}))
        return path


def _is_bert_like(path_or_name: str | Path) -> bool:
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(str(path_or_name))
    return cfg.model_type in ("bert", "roberta", "xlm-roberta")


def write_sentence_transformers_layout(
    folder: Path, dim: int, pooling: str, max_length: int, prefix: str, normalize: bool
) -> None:
    """modules.json + 1_Pooling (+ 2_Normalize): the files sentence-transformers reads to rebuild us."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append(
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
        )
        (folder / "2_Normalize").mkdir(exist_ok=True)
    (folder / "modules.json").write_text(json.dumps(modules, indent=2))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    mode = "mean" if pooling == "mean" else "cls"
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps(
            {
                "word_embedding_dimension": dim,
                "pooling_mode_cls_token": mode == "cls",
                "pooling_mode_mean_tokens": mode == "mean",
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
            },
            indent=2,
        )
    )
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": max_length, "do_lower_case": False}, indent=2)
    )
    prompts = {"query": prefix} if prefix else {}
    (folder / "config_sentence_transformers.json").write_text(
        json.dumps(
            {
                "prompts": prompts,
                "default_prompt_name": "query" if prefix else None,
                "similarity_fn_name": "cosine",
            },
            indent=2,
        )
    )


@contextlib.contextmanager
def _quiet_transformers():
    """Silence transformers' weight-loading report and progress bar while loading; errors still raise."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def _read_sentence_transformers_layout(folder: Path) -> dict:
    """Pooling, max length, prompt and normalisation from a sentence-transformers directory, if it is one."""
    info: dict = {}
    if not (folder / "modules.json").is_file():
        return info
    modules = json.loads((folder / "modules.json").read_text())
    for mod in modules:
        kind = mod.get("type", "")
        if kind.endswith("Pooling"):
            cfg = json.loads((folder / mod["path"] / "config.json").read_text())
            info["pooling"] = "mean" if cfg.get("pooling_mode_mean_tokens") else "cls"
        elif kind.endswith("Normalize"):
            info["normalize"] = True
    sbert = folder / "sentence_bert_config.json"
    if sbert.is_file():
        info["max_length"] = int(json.loads(sbert.read_text()).get("max_seq_length", 128))
    declared = folder / LANGUAGES_FILE
    if declared.is_file():
        info["languages"] = tuple(json.loads(declared.read_text())["languages"])
    cst = folder / "config_sentence_transformers.json"
    if cst.is_file():
        cfg = json.loads(cst.read_text())
        name = cfg.get("default_prompt_name")
        if name and name in (cfg.get("prompts") or {}):
            info["prefix"] = cfg["prompts"][name]
    return info
