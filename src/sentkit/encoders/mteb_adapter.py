"""Any sentkit encoder as an MTEB model: the `EncoderProtocol` that `mteb.evaluate` calls (mteb 2.x).

`mteb` is an optional extra (`pip install "sentkit[mteb]"`); it is imported only here, when an adapter is
built. MTEB hands batches of inputs in a DataLoader; the adapter gathers their texts and calls the
encoder's own `encode`, so prefixes (e5's "query: "), pooling and normalisation stay the encoder's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sentkit.encoders.protocol import Encoder


def _mteb():
    try:
        import mteb
    except ImportError as err:
        raise ImportError('MTEB support needs the mteb extra: pip install "sentkit[mteb]"') from err
    return mteb


def mteb_model(encoder: Encoder, name: str | None = None, revision: str = "local", batch_size: int = 64):
    """Wrap `encoder` for `mteb.evaluate(mteb_model(encoder), tasks)`; cosine is the similarity function."""
    _mteb()
    from mteb.models.abs_encoder import AbsEncoder
    from mteb.models.model_meta import ModelMeta, ScoringFunction

    class SentkitMTEBEncoder(AbsEncoder):
        """Gathers the texts of MTEB's batches and encodes them with the wrapped sentkit encoder."""

        def __init__(self) -> None:
            self.model = encoder
            self.batch_size = batch_size
            self.mteb_model_meta = ModelMeta(
                loader=None,
                name=name or f"sentkit/{encoder.name}",
                revision=revision,
                release_date=None,
                languages=None,
                n_parameters=None,
                memory_usage_mb=None,
                max_tokens=None,
                embed_dim=getattr(encoder, "dim", None),
                license=None,
                open_weights=None,
                public_training_code=None,
                public_training_data=None,
                framework=["PyTorch"],
                similarity_fn_name=ScoringFunction.COSINE,
                use_instructions=False,
                training_datasets=None,
            )

        def encode(
            self, inputs, *, task_metadata, hf_split: str, hf_subset: str, prompt_type=None, **kwargs: Any
        ) -> np.ndarray:
            texts = [text for batch in inputs for text in batch["text"]]
            size = int(kwargs.get("batch_size") or self.batch_size)
            return np.asarray(self.model.encode(texts, batch_size=size), dtype=np.float32)  # (n, dim)

    return SentkitMTEBEncoder()
