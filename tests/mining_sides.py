"""Two small corpora encoded into shard folders by `sentkit encode` (a tiny model), for mining tests."""

from __future__ import annotations

from pathlib import Path

from conftest import make_tiny_encoder
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.shards import ShardSettings

COLOURS = ["red", "green", "blue", "black", "white", "grey", "pink"]


def encoded_sides(root: Path, rows: int = 300, shard_size: int = 70) -> tuple[Path, Path, Path]:
    """(model folder, src shard folder, tgt shard folder) of `rows` sentences each, under `root`."""
    model = make_tiny_encoder(pooling="mean").save(root / "tiny")
    texts = {
        "src": [f"item {i} is {COLOURS[i % 7]} and {i % 13} long" for i in range(rows)],
        "tgt": [f"thing {i} looks {COLOURS[i % 5]} near {i % 11}" for i in range(rows)],
    }
    folders = []
    for name, lines in texts.items():
        corpus = root / f"{name}.txt"
        corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
        request = EncodeRequest(
            str(corpus), str(root / name), str(model), ShardSettings(shard_size=shard_size), engine="local"
        )
        encode_corpus(request, log=lambda line: None)
        folders.append(root / name)
    return model, folders[0], folders[1]
