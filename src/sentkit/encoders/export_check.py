"""The check every cached export passes before it is kept: its vectors against the fp32 torch encoder's.

Both encode the same held-out real sentences (calibration.check_set); the export is refused when the mean
cosine falls below MIN_MEAN_COSINE. The mean is the bar because single sentences vary more: the dynamic
int8 MiniLM, which loses nothing on STS-B, has a mean of 0.992 on its check sentences and a minimum of
0.969 (AVX2 host). The minimum and the 1st percentile are recorded beside the mean, in the export's metadata.
"""

from __future__ import annotations

import numpy as np

from sentkit.encoders.calibration import SentenceSet
from sentkit.errors import ExportCheckFailed

MIN_MEAN_COSINE = 0.99


def agreement(reference: np.ndarray, candidate: np.ndarray) -> dict[str, float]:
    """Mean, 1st percentile and minimum of the row-wise cosines between two (n, dim) arrays."""
    norms = np.linalg.norm(reference, axis=1) * np.linalg.norm(candidate, axis=1)  # (n,)
    cos = (reference * candidate).sum(1) / np.maximum(norms, 1e-12)  # (n,)
    return {
        "mean": round(float(cos.mean()), 5),
        "p01": round(float(np.percentile(cos, 1)), 5),
        "min": round(float(cos.min()), 5),
    }


def check_export(reference, exported, sentences: SentenceSet, what: str, batch_size: int = 32) -> dict:
    """{"cosine": agreement, "sentences": where they came from, "min_mean_cosine": bar}; raises
    ExportCheckFailed naming `what` when the mean cosine is under the bar."""
    texts = list(sentences.sentences)
    found = agreement(
        reference.encode(texts, batch_size=batch_size), exported.encode(texts, batch_size=batch_size)
    )
    record = {"cosine": found, "min_mean_cosine": MIN_MEAN_COSINE, "sentences": sentences.record()}
    if not np.isfinite(found["mean"]) or found["mean"] < MIN_MEAN_COSINE:
        raise ExportCheckFailed(
            f"{what}: mean cosine to the fp32 encoder {found['mean']:.4f} (min {found['min']:.4f}) on "
            f"{len(texts)} held-out sentences is below {MIN_MEAN_COSINE}; the export is refused"
        )
    return record


def export_check_record(check: SentenceSet | str | None, encoder, open_exported, what: str) -> dict | None:
    """What an export's metadata records under "check": `check_export` on the sentences, {"skipped": why}
    when `check` is a reason instead, None when no check was asked for. `open_exported()` loads the export
    being written (called only when there is something to check)."""
    if check is None:
        return None
    if isinstance(check, str):
        return {"skipped": check}
    return check_export(encoder, open_exported(), check, what)
