"""Every distinct text of the shared benchmark data, one a line, with the real translation pairs among them.

The mining benchmark (bench/research/mine_real.py) needs vectors with the structure of real sentence vectors: this
script gathers the texts sentkit's tasks read (Tatoeba, XNLI, PAWS-X, QAM, MARC titles and bodies,
MewsC-16, the monolingual clustering sets, STS-B, STS17, the Japanese STS sets, JSICK, QAbot and the
Japanese corpora), keeps the first occurrence of each distinct text (tabs and newlines folded to spaces),
and lists the pairs that are real translations of each other: Tatoeba's line-aligned xxx/eng files and
XNLI's 15 line-aligned languages (premises and hypotheses, every language paired with English).

Writes into --out (default $SENTKIT_BENCH_CACHE/real_vectors, else ~/.cache/sentkit-bench/real_vectors):
    sentences.txt    one distinct text a line
    pairs.tsv        row_a<TAB>row_b<TAB>source (0-based rows of sentences.txt; a real translation pair)
    sentences.json   counts per source, total, sha256 of sentences.txt

    python -m bench.real_sentences [--data ../shared/data] [--out DIR]

With --encode MODEL[,MODEL] it then encodes sentences.txt into <out>/<model>/, a shard folder written
by `sentkit encode --shard-size`'s code (resumable; a finished folder is left as it is), every text cut at
--max-length tokens (default 128: mining pairs sentences, and the MARC bodies and QAM passages would
otherwise set the cost; the cut is recorded in the folder's model fingerprint):

    python -m bench.real_sentences --encode minilm-en@int8,e5-small-m@int8
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

csv.field_size_limit(sys.maxsize)

XNLI_LANGS = ("ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh")


def default_cache() -> Path:
    root = os.environ.get("SENTKIT_BENCH_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "sentkit-bench") / "real_vectors"


def clean(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


class Collector:
    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.texts: list[str] = []
        self.by_source: Counter = Counter()
        self.new_by_source: Counter = Counter()
        self.pairs: list[tuple[int, int, str]] = []

    def add(self, text: str, source: str) -> int | None:
        text = clean(text)
        if not text:
            return None
        self.by_source[source] += 1
        row = self.rows.get(text)
        if row is None:
            row = self.rows[text] = len(self.texts)
            self.texts.append(text)
            self.new_by_source[source] += 1
        return row

    def pair(self, a: int | None, b: int | None, source: str) -> None:
        if a is not None and b is not None and a != b:
            self.pairs.append((a, b, source))


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8-sig").splitlines()


def tsv_columns(path: Path, columns: tuple[int, ...], skip_header: bool = False) -> list[list[str]]:
    out = []
    for i, line in enumerate(lines(path)):
        if skip_header and i == 0:
            continue
        cells = line.split("\t")
        out.append([cells[c] if c < len(cells) else "" for c in columns])
    return out


def collect(data: Path) -> Collector:
    c = Collector()
    # Tatoeba: 112 languages, line i of .xxx translates line i of .eng
    for xxx in sorted((data / "bitext" / "tatoeba").glob("tatoeba.*-eng.*")):
        lang = xxx.name.split(".")[1].split("-")[0]
        if xxx.suffix == ".eng" or lang == "eng":
            continue
        eng = xxx.with_suffix(".eng")
        src = f"tatoeba:{lang}-eng"
        for a, b in zip(lines(xxx), lines(eng)):
            c.pair(c.add(a, "tatoeba"), c.add(b, "tatoeba"), src)
    # XNLI: 15 languages, line-aligned translations of the same dev/test items
    for split in ("dev", "test"):
        tables = {
            lang: tsv_columns(data / "transfer" / "XNLI" / f"{split}-{lang}.tsv", (0, 1))
            for lang in XNLI_LANGS
        }
        en = [[c.add(t, "xnli") for t in row] for row in tables["en"]]
        for lang in XNLI_LANGS:
            if lang == "en":
                continue
            for en_rows, row in zip(en, tables[lang]):
                for en_row, text in zip(en_rows, row):
                    c.pair(en_row, c.add(text, "xnli"), f"xnli:{lang}-en")
    for path in sorted((data / "transfer" / "PAWSX").glob("*.tsv")):
        for row in tsv_columns(path, (0, 1)):
            for t in row:
                c.add(t, "pawsx")
    for path in sorted((data / "transfer" / "QAM").glob("*.*")):
        for row in tsv_columns(path, (0, 1)):
            for t in row:
                c.add(t, "qam")
    for path in sorted((data / "transfer" / "MARC").glob("*.json")):
        for line in lines(path):
            review = json.loads(line)
            c.add(review.get("review_title", ""), "marc")
            c.add(review.get("review_body", ""), "marc")
    for path in sorted((data / "clustering" / "mewsc16").glob("*_sentences.txt")):
        for t in lines(path):
            c.add(t, "mewsc16")
    mono = data / "clustering" / "monolingual_benchmark"
    for t in lines(mono / "agnews.txt"):
        c.add(t.split("\t", 1)[-1], "monolingual-clustering")
    for name in ("biomedical.txt", "searchsnippets.txt", "stackoverflow.txt"):
        for t in lines(mono / name):
            c.add(t, "monolingual-clustering")
    for t in lines(mono / "tweet.txt"):
        c.add(json.loads(t)["text"], "monolingual-clustering")
    for path in sorted((data / "sts" / "STSBenchmark").glob("sts-*.csv")):
        for row in tsv_columns(path, (5, 6)):
            for t in row:
                c.add(t, "sts-b")
    for path in sorted((data / "sts" / "STS17-test").glob("STS.input.*.txt")):
        for row in tsv_columns(path, (0, 1)):
            for t in row:
                c.add(t, "sts17")
    sts_ja = data / "sts-ja"
    for path in sorted(sts_ja.glob("STS1*-ja-test/STS.input.*.txt")):
        for row in tsv_columns(path, (0, 1)):
            for t in row:
                c.add(t, "sts-ja")
    for path in sorted((sts_ja / "JSTS").glob("*.csv")) + sorted((sts_ja / "JAC-STS").glob("*.csv")):
        for row in tsv_columns(path, (1, 2)):
            for t in row:
                c.add(t, "sts-ja")
    for path in sorted((sts_ja / "JSICK").glob("*.txt")):
        for row in tsv_columns(path, (1, 2), skip_header=True):
            for t in row:
                c.add(t, "jsick")
    for folder in sorted((data / "retrieval" / "qabot").iterdir(), key=lambda p: p.name):
        if not folder.is_dir():
            continue
        for t in lines(folder / "question.txt"):
            c.add(t, "qabot")
        with open(folder / "data.csv", encoding="utf-8-sig", newline="") as f:
            for row in csv.DictReader(f):
                c.add(row.get("question", ""), "qabot")
                c.add(row.get("answer", ""), "qabot")
    for path in sorted((data / "corpora").glob("*/*.txt")):
        for t in lines(path):
            c.add(t, "ja-corpora")
    return c


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("SENTKIT_DATA", "../shared/data")))
    ap.add_argument("--out", type=Path, default=default_cache())
    ap.add_argument("--encode", default="", help="models to encode sentences.txt with, comma-separated")
    ap.add_argument("--max-length", type=int, default=128, help="tokens per text at most (128)")
    ap.add_argument("--shard-size", type=int, default=50_000)
    args = ap.parse_args(argv)
    if not (args.data / "bitext" / "tatoeba").is_dir():
        print(f"real_sentences: {args.data}: not the shared data folder (no bitext/tatoeba)", file=sys.stderr)
        return 2
    c = collect(args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    body = "".join(t + "\n" for t in c.texts).encode("utf-8")
    tmp = args.out / "sentences.txt.tmp"
    tmp.write_bytes(body)
    tmp.replace(args.out / "sentences.txt")
    tmp = args.out / "pairs.tsv.tmp"
    tmp.write_text("".join(f"{a}\t{b}\t{s}\n" for a, b, s in c.pairs), encoding="utf-8")
    tmp.replace(args.out / "pairs.tsv")
    info = {
        "sentences": len(c.texts),
        "sha256": hashlib.sha256(body).hexdigest(),
        "texts_read_by_source": dict(c.by_source),
        "distinct_first_seen_by_source": dict(c.new_by_source),
        "translation_pairs": len(c.pairs),
        "translation_pairs_by_source": dict(Counter(s.split(":")[0] for _, _, s in c.pairs)),
        "data": str(args.data),
    }
    tmp = args.out / "sentences.json.tmp"
    tmp.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    tmp.replace(args.out / "sentences.json")
    print(json.dumps(info, indent=1))
    for model in filter(None, args.encode.split(",")):
        encode(args.out, model, args.max_length, args.shard_size)
    return 0


def encode(out: Path, model: str, max_length: int, shard_size: int) -> None:
    from sentkit.corpus.encode_run import EncodeRequest, _load_encoder, encode_corpus
    from sentkit.corpus.shards import ShardSettings

    def load(name: str):
        encoder = _load_encoder(name)
        encoder.max_length = min(int(encoder.max_length), max_length)
        return encoder

    folder = out / model.replace("/", "_")
    settings = ShardSettings(shard_size=shard_size)
    request = EncodeRequest(str(out / "sentences.txt"), str(folder), model, settings, engine="local")
    started = time.perf_counter()
    encode_corpus(request, load_model=load, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"{model}: {folder} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
