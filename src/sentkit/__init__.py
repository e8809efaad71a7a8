"""sentkit: train, specialize and evaluate multilingual sentence embeddings, offline-first."""

from __future__ import annotations

__version__ = "0.1.0"


def load_encoder(name_or_path, **kwargs):
    """Load an encoder by short name, local directory or hub name (see `sentkit.encoders`)."""
    from sentkit.encoders import load_encoder as _load

    return _load(name_or_path, **kwargs)


def evaluate(encoder, tasks="default", **kwargs):
    """Run evaluation tasks on an encoder and return the results dict (see `sentkit.evaluate`)."""
    from sentkit.evaluate import evaluate as _evaluate

    return _evaluate(encoder, tasks, **kwargs)


__all__ = ["__version__", "evaluate", "load_encoder"]
