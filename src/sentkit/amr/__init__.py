"""AMR graphs for retrofitting sentence embeddings (Cai et al., EMNLP 2022): I/O, linearisation, parsing.

Needs the `amr` extra (`pip install 'sentkit[amr]'`): penman for graphs, smatch for scoring, spaCy
pipelines for the offline rule-based parser. Submodules import them lazily and say what is missing.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, package: str | None = None) -> ModuleType:
    """Import an optional dependency of the `amr` extra or fail with a one-line install hint."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        pip_name = package or module
        raise ImportError(
            f"sentkit.amr needs {pip_name!r} (install the extra: pip install 'sentkit[amr]')"
        ) from err


__all__ = ["require"]
