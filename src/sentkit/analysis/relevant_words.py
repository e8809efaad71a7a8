"""Relevant content words (JCSE sec. 4.3): in a relevant pair, the word whose removal lowers the pair's cosine most.

For each pair (a, b) and each word w of a (spaCy/GiNZA tokens, punctuation and spaces excluded), a \\ w is
encoded and cos(a \\ w, b) compared with cos(a, b); the word with the largest drop is the pair's relevant
content word. The POS distribution of those words over many pairs shows what an encoder attends to
(JCSE finds domain adaptation shifts it towards nouns).
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentkit.atomic import atomic_write_bytes


@dataclass(frozen=True)
class RelevantWord:
    """Pair `pair`'s most relevant word in its first sentence: text, UD POS, and the cosine drop on removal."""

    pair: int
    word: str
    pos: str
    drop: float


def without_token(doc, i: int) -> str:
    """The sentence with token i removed, keeping every other character (its trailing space goes too)."""
    token = doc[i]
    return doc.text[: token.idx] + doc.text[token.idx + len(token.text_with_ws) :]


def relevant_content_words(
    encoder, pairs: Sequence[tuple[str, str]], nlp, batch_size: int = 64
) -> list[RelevantWord]:
    """One `RelevantWord` per pair with at least one content token (every sentence variant encoded once)."""
    docs = list(nlp.pipe([a for a, _ in pairs]))
    variants: list[str] = []
    owners: list[tuple[int, int]] = []  # (pair, token index) of each variant
    for p, doc in enumerate(docs):
        for i, token in enumerate(doc):
            if not (token.is_punct or token.is_space) and len(doc) > 1:
                variants.append(without_token(doc, i))
                owners.append((p, i))
    firsts = [a for a, _ in pairs]
    seconds = [b for _, b in pairs]
    vectors = _unit(encoder.encode(firsts + seconds + variants, batch_size=batch_size))  # (2n + m, d)
    n = len(pairs)
    a, b, v = vectors[:n], vectors[n : 2 * n], vectors[2 * n :]
    full = np.sum(a * b, axis=1)  # (n,) cos(a, b)
    pair_index = np.asarray([p for p, _ in owners], dtype=int)
    drops = full[pair_index] - np.sum(v * b[pair_index], axis=1) if owners else np.zeros(0)  # (m,)
    best: dict[int, int] = {}
    for k, p in enumerate(pair_index.tolist()):
        if p not in best or drops[k] > drops[best[p]]:
            best[p] = k
    out = []
    for p, k in sorted(best.items()):
        token = docs[p][owners[k][1]]
        out.append(RelevantWord(p, token.text, token.pos_, float(drops[k])))
    return out


def pos_distribution(words: Sequence[RelevantWord]) -> dict[str, float]:
    """Percent of relevant words per POS tag, most frequent first."""
    counts = Counter(w.pos for w in words)
    total = sum(counts.values()) or 1
    return {pos: 100.0 * c / total for pos, c in counts.most_common()}


def distribution_table(distributions: dict[str, dict[str, float]]) -> str:
    """Markdown table: one row per POS (ordered by the first model), one column per model, in percent."""
    order = list(dict.fromkeys(pos for d in distributions.values() for pos in d))
    lines = ["| POS | " + " | ".join(distributions) + " |", "|---|" + "---:|" * len(distributions)]
    for pos in order:
        lines.append(
            f"| {pos} | " + " | ".join(f"{d.get(pos, 0.0):.1f}" for d in distributions.values()) + " |"
        )
    return "\n".join(lines) + "\n"


def plot_distribution(distributions: dict[str, dict[str, float]], path: str | Path, top: int = 8) -> Path:
    """Grouped bar chart (PNG) of the `top` POS tags' shares, one bar colour per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = list(dict.fromkeys(pos for d in distributions.values() for pos in d))[:top]
    width = 0.8 / max(len(distributions), 1)
    fig, ax = plt.subplots(figsize=(1.1 * len(order) + 2, 3.5))
    for m, (name, dist) in enumerate(distributions.items()):
        xs = np.arange(len(order)) + m * width
        ax.bar(xs, [dist.get(pos, 0.0) for pos in order], width=width, label=name)
    ax.set_xticks(np.arange(len(order)) + width * (len(distributions) - 1) / 2, order)
    ax.set_ylabel("% of relevant words")
    ax.set_title("POS of the relevant content word (JCSE sec. 4.3)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    image = io.BytesIO()
    fig.savefig(image, dpi=120, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    atomic_write_bytes(path, image.getvalue())
    return path


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
