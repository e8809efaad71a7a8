"""sentkit: train, specialize and evaluate multilingual sentence embeddings, offline-first."""

from __future__ import annotations

__version__ = "0.1.0"


def load_encoder(name_or_path, **kwargs):
    """Load an encoder by short name, local directory or hub name (see `sentkit.encoders`), or
    `retrofit:<text model>+<AMR encoder folder>[@combine]` (Cai et al. 2022; `sentkit.encoders.retrofit`).

    The package root puts the two sides of a retrofit name together, so that `sentkit.encoders` never
    imports the AMR package (which trains through `sentkit.training`).
    """
    name = str(name_or_path)
    if name.startswith("retrofit:"):
        from sentkit.amr.encoder import AmrEncoder
        from sentkit.encoders.retrofit import load_retrofit

        return load_retrofit(name.removeprefix("retrofit:"), AmrEncoder.from_pretrained, **kwargs)
    from sentkit.encoders import load_encoder as _load

    return _load(name_or_path, **kwargs)


def evaluate(encoder, tasks="default", **kwargs):
    """Run evaluation tasks on an encoder and return the results dict (see `sentkit.evaluate`)."""
    from sentkit.evaluate import evaluate as _evaluate

    return _evaluate(encoder, tasks, **kwargs)


__all__ = ["__version__", "evaluate", "load_encoder"]
