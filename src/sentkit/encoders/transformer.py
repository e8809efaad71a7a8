"""Hugging Face transformer encoder plus the sentence-transformers modules after it (pooling, Dense layers,
normalisation); loads and saves the sentence-transformers layout (st_layout.py)."""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from sentkit.atomic import atomic_directory
from sentkit.encoders.attention import short_batch_attention
from sentkit.encoders.protocol import (
    check_batch_size,
    length_sorted_batches,
    lowercase_inputs,
    padded_batch,
)
from sentkit.encoders.st_layout import ModelFiles, NotInCache, read_layout, write_layout
from sentkit.encoders.st_modules import POOLING_MODES, Dense, pool, prompt_token_count
from sentkit.errors import DataFormatError, DataWarning, UnsupportedModel

POOLINGS = ("cls", "cls_mlp", *POOLING_MODES[1:])
LANGUAGES_FILE = "sentkit_languages.json"  # the training languages an encoder declares, saved beside it
PLAIN_MAX_LENGTH = 128  # a plain transformers model (no sentence-transformers files) cuts inputs here


class TransformerEncoder(nn.Module):
    """A `transformers` model, pooling (sentence-transformers' modes), optional Dense layers, normalisation.

    `cls_mlp` is [CLS] pooling plus SimCSE's dense+tanh head, used in training only: `encode` (and the saved
    model) leave it out, as SimCSE and EASE evaluate. `dense` (the model's own Dense layers) always apply.
    `include_prompt=False` leaves the prefix's tokens out of the pooling; `lowercase` lowercases inputs
    (`do_lower_case`). `languages` are the training languages (ISO 639-1) when known, else None;
    `truncated_texts` holds every input `encode` cut at `max_length` tokens (`truncated` counts them per
    call, summed).
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
        dense: Sequence[Dense] = (),
        include_prompt: bool = True,
        lowercase: bool = False,
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
        self.include_prompt = include_prompt
        self.lowercase = lowercase
        if lowercase:
            lowercase_inputs(tokenizer)
        self.truncated = 0
        self.truncated_texts: set[str] = set()
        width = int(model.config.hidden_size)
        for layer in dense:
            if layer.in_features != width:
                raise ValueError(f"Dense layer takes {layer.in_features}-d vectors, gets {width}-d")
            width = layer.out_features
        self.dense = nn.ModuleList(dense)
        # SimCSE's head sits on top of what `encode` returns (after any Dense), so dropping it at test time
        # leaves every kept layer seeing the inputs it was trained on
        self.mlp = nn.Sequential(nn.Linear(width, width), nn.Tanh()) if pooling == "cls_mlp" else None
        self._prompt_tokens: tuple[str, int] = ("", 0)

    @property
    def dim(self) -> int:
        return self.dense[-1].out_features if len(self.dense) else int(self.model.config.hidden_size)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def pooling_mode(self) -> str:
        """The sentence-transformers pooling mode (`cls_mlp` pools [CLS])."""
        return "cls" if self.pooling == "cls_mlp" else self.pooling

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
        """Load a local directory or a hub name, with exactly its sentence-transformers modules when it has
        a modules.json (else as a plain transformers model: [CLS] pooling, 128 tokens).

        A module sentkit cannot reproduce raises UnsupportedModel. `pooling`, `max_length` and `prefix`
        override the model's own; `languages` (training languages) defaults to what a sentkit-saved
        directory declares, else None.
        """
        from transformers import AutoModel, AutoTokenizer

        from sentkit.encoders.torch_files import check_model_weights

        files = ModelFiles(path_or_name)
        layout = read_layout(files)
        source, sub = files.source, (layout.transformer_path if layout else "")
        check_model_weights(Path(source) / sub)  # tensors only, refused in one line naming the file
        with _quiet_transformers():  # its raw load report: what concerns the vectors is warned below
            extra = {"add_pooling_layer": False} if _is_bert_like(source, sub) else {}
            model, info = AutoModel.from_pretrained(source, subfolder=sub, output_loading_info=True, **extra)
        _warn_unloaded_weights(files.source, info.get("missing_keys", ()))
        tokenizer = AutoTokenizer.from_pretrained(source, subfolder=sub)
        if layout is None:
            return cls(
                model,
                tokenizer,
                pooling=pooling or "cls",
                max_length=max_length or PLAIN_MAX_LENGTH,
                prefix=prefix,
                name=name or Path(source).name,
                languages=languages,
            )
        if layout.do_lower_case and not getattr(tokenizer, "is_fast", False):
            raise UnsupportedModel(f"{files.source}: do_lower_case needs a fast tokenizer")
        hidden = int(model.config.hidden_size)
        if layout.dense and layout.dense[0].in_features != hidden:
            raise DataFormatError(
                files.where(layout.dense_configs[0]),
                None,
                f"in_features {hidden} (the model's pooled vectors), got {layout.dense[0].in_features}",
            )
        if languages is None:
            languages = _declared_languages(files)
        return cls(
            model,
            tokenizer,
            pooling=pooling or layout.pooling,
            max_length=max_length or layout.max_length or _model_limit(tokenizer, model.config),
            prefix=prefix or layout.prefix,
            normalize=layout.normalize,
            name=name or Path(source).name,
            languages=languages,
            dense=layout.dense,
            include_prompt=layout.include_prompt,
            lowercase=layout.do_lower_case,
        )

    # ---- forward / encode -----------------------------------------------------------------
    def tokenize(self, sentences: Sequence[str]) -> dict[str, torch.Tensor]:
        texts = [self.prefix + s for s in sentences] if self.prefix else list(sentences)
        return self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Sentence vectors (batch, dim) through every module; the MLP head applies only in training mode."""
        inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        hidden = self.model(**inputs).last_hidden_state  # (batch, seq, hidden)
        return self.sentence_vectors(hidden, inputs["attention_mask"])

    def sentence_vectors(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Token states (batch, seq, hidden) -> sentence vectors (batch, dim): pooling, Dense layers, the
        training-only MLP, normalisation. The exported ONNX graph runs this same code."""
        vectors = pool(hidden, attention_mask, self.pooling_mode, self.prompt_tokens())  # (batch, hidden)
        for layer in self.dense:
            vectors = layer(vectors)  # (batch, out_features)
        if self.mlp is not None and self.training:
            vectors = self.mlp(vectors)
        if self.normalize:
            vectors = nn.functional.normalize(vectors, dim=-1)
        return vectors

    def prompt_tokens(self) -> int:
        """How many leading tokens the pooling skips: the prefix's, when the model excludes its prompt."""
        if self.include_prompt or not self.prefix:
            return 0
        if self._prompt_tokens[0] != self.prefix:  # the prefix may be changed after loading
            self._prompt_tokens = (self.prefix, prompt_token_count(self.tokenizer, self.prefix))
        return self._prompt_tokens[1]

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
        """Write a directory that sentkit and sentence-transformers both load as this encoder encodes, atomically
        (the training-only MLP head is left out)."""
        path = Path(path)
        with atomic_directory(path) as tmp:
            self.model.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            write_layout(
                tmp,
                int(self.model.config.hidden_size),
                self.pooling_mode,
                list(self.dense),
                self.normalize,
                self.max_length,
                self.prefix,
                self.include_prompt,
                self.lowercase,
            )
            if self.languages is not None:
                (tmp / LANGUAGES_FILE).write_text(json.dumps({"languages": list(self.languages)}))
        return path


def _is_bert_like(source: str, subfolder: str = "") -> bool:
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(source, subfolder=subfolder)
    return cfg.model_type in ("bert", "roberta", "xlm-roberta")


def _model_limit(tokenizer, config) -> int:
    """sentence-transformers' input limit when the model sets none: the tokenizer's, capped at the model's
    position embeddings."""
    limits = [int(tokenizer.model_max_length)] if tokenizer.model_max_length < 10**9 else []
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        limits.append(positions)
    return min(limits) if limits else PLAIN_MAX_LENGTH


def _declared_languages(files: ModelFiles) -> tuple[str, ...] | None:
    """The training languages a sentkit-saved model declares (sentkit_languages.json), else None."""
    try:
        path = files.find(LANGUAGES_FILE)
    except NotInCache:
        return None
    if path is None:
        return None
    return tuple(json.loads(path.read_text())["languages"])


def _warn_unloaded_weights(source: str, missing: Iterable[str]) -> None:
    """One DataWarning naming the weights the model needs but the checkpoint lacks (transformers initialises
    them at random). The pooler is left out: sentkit pools the token states itself and never uses it."""
    needed = sorted(k for k in missing if k.split(".", 1)[0] != "pooler")
    if not needed:
        return
    shown = ", ".join(needed[:3]) + (f" and {len(needed) - 3} more" if len(needed) > 3 else "")
    warnings.warn(
        f"{source}: {len(needed)} weight(s) the model needs are not in its checkpoint and were initialised "
        f"at random ({shown}); its vectors are not those of a trained model",
        DataWarning,
        stacklevel=3,
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
