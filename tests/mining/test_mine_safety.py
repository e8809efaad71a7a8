"""`sentkit mine` keeps its inputs and refuses before any work: outputs over inputs or into shard folders,
empty sides, non-finite thresholds, mismatched models; blank and zero-vector rows are never paired."""

from __future__ import annotations

import json
import math
import os
import re
import warnings

import numpy as np
import pytest

from conftest import make_tiny_encoder
from ngram_encoder import NgramEncoder
from sentkit.cli import main
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.manifest import ManifestMismatch
from sentkit.corpus.shards import ShardSettings
from sentkit.errors import DataWarning, InvalidArgument, OutputPathError
from sentkit.mining.mine import MineConfig, MineRequest, mine, mine_files
from sentkit.mining.native_stderr import captured_stderr, pass_through, too_few_training_points
from sentkit.mining.search import IndexConfig
from sentkit.mining.vectors import ArrayVectors

DE = ["Der Hund schläft.", "Berlin ist groß.", "Zahlen: 12, 34.", "Ich trinke Kaffee."]
EN = ["Numbers: 12, 34.", "The dog sleeps.", "I drink coffee.", "Berlin is big.", "Something else."]


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _encode(text, folder, encoder=None, shard_size=2):
    settings = ShardSettings(shard_size=shard_size)
    request = EncodeRequest(str(text), str(folder), "ngram", settings, engine="local")
    encode_corpus(request, load_model=lambda name: encoder or NgramEncoder(), log=lambda line: None)
    return folder


def _never(name):
    raise AssertionError(f"the model {name} was loaded: the request should have been refused first")


def _rows(tsv):
    header, *rows = tsv.read_text(encoding="utf-8").splitlines()
    return [row.split("\t") for row in rows]


# ---- outputs: never over an input, a file an input names, or into a shard folder -----------------------------
@pytest.fixture
def corpus(tmp_path):
    """data/de.txt, data/en.txt, a folder input data/fold/{a,b}.txt and shard folders v/de, v/en of the texts."""
    data = tmp_path / "data"
    de, en = _write(data / "de.txt", DE), _write(data / "en.txt", EN)
    _write(data / "fold" / "a.txt", DE[:2])
    _write(data / "fold" / "b.txt", DE[2:])
    _encode(de, tmp_path / "v" / "de")
    _encode(en, tmp_path / "v" / "en")
    return tmp_path


def _snapshot(root):
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("src", "tgt", "out", "says"),
    [
        # the corpus a shard folder was encoded from (the report: the corpus replaced by a TSV)
        ("v/de", "v/en", "data/de.txt", "is {root}/data/de.txt, an input v/de was encoded from"),
        ("v/de", "v/en", "data/../data/./en.txt", "an input v/en was encoded from"),
        # an input file as given, its sidecar an input
        ("data/de.txt", "v/en", "./data/de.txt", "is the input data/de.txt"),
        ("data/de.txt", "data/en.txt.json", "data/en.txt", "its sidecar data/en.txt.json is the input"),
        # a file of a folder input, and a new file in it (read as corpus on the next run)
        ("data/fold", "v/en", "data/fold/a.txt", "is data/fold/a.txt, a file of the input folder data/fold"),
        ("data/fold", "v/en", "data/fold/pairs.tsv", "lies in the input folder"),
        # inside a shard folder: its manifest as the sidecar or the TSV, any file, another shard folder
        ("v/de", "v/en", "v/en/manifest", "lies inside the shard folder {root}/v/en"),
        ("v/de", "v/en", "v/en/new/pairs.tsv", "lies inside the shard folder {root}/v/en"),
        ("v/de", "v/en", "v/en/manifest.json", "lies inside the shard folder {root}/v/en"),
        ("data/de.txt", "v/en", "v/de/pairs.tsv", "lies inside the shard folder {root}/v/de"),
    ],
)
def test_mine_refuses_outputs_that_would_overwrite_its_inputs(
    corpus, monkeypatch, capsys, src, tgt, out, says
):
    monkeypatch.chdir(corpus)
    if tgt == "data/en.txt.json":
        _write(corpus / tgt, EN)
    before = _snapshot(corpus)
    model = [] if src.startswith("v/") and tgt.startswith("v/") else ["--model", "ngram"]
    assert main(["mine", "--src", src, "--tgt", tgt, "--out", out, *model]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"sentkit: error: --out {out}")
    assert says.format(root=corpus.resolve()) in err
    assert _snapshot(corpus) == before  # nothing written, nothing replaced


def test_mine_refuses_symlinks_and_hard_links_to_inputs_before_loading_a_model(corpus):
    (corpus / "link.tsv").symlink_to(corpus / "data" / "de.txt")
    os.link(corpus / "data" / "en.txt", corpus / "hard.tsv")
    (corpus / "side.tsv.json").symlink_to(corpus / "v" / "en" / "manifest.json")
    before = _snapshot(corpus)
    cases = [
        ("v/de", "hard.tsv", "data/en.txt, an input .*v/en was encoded from"),  # same inode, another name
        # a link as an output is refused as every output link is, naming what it points to
        ("v/de", "link.tsv", r"link.tsv: is a symbolic link \(to .*data/de.txt\)"),
        ("data/de.txt", "side.tsv", r"side.tsv.json: is a symbolic link \(to .*v/en/manifest.json\)"),
    ]
    for src, out, says in cases:
        model = None if src.startswith("v/") else "ngram"
        request = MineRequest(str(corpus / src), str(corpus / "v" / "en"), str(corpus / out), model=model)
        with pytest.raises(OutputPathError, match=says):
            mine_files(request, load_model=_never)
    assert _snapshot(corpus) == before


def test_mine_writes_beside_its_inputs(corpus):
    out = corpus / "data" / "pairs.tsv"  # beside de.txt, not inside a folder input
    mine_files(MineRequest(str(corpus / "v/de"), str(corpus / "v/en"), str(out)), log=lambda line: None)
    assert len(_rows(out)) >= 3


# ---- sides with nothing to mine, non-finite thresholds: refused before any model is loaded --------------------
@pytest.mark.parametrize(
    ("lines", "says"), [([], "no rows to mine"), (["", "  ", "\t"], "no rows to mine (3 rows: 3 blank)")]
)
def test_mine_refuses_a_side_with_no_rows_naming_it(tmp_path, capsys, lines, says):
    src, tgt = _write(tmp_path / "de.txt", DE), tmp_path / "en.txt"
    tgt.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    with pytest.raises(InvalidArgument) as refused:
        mine_files(MineRequest(str(src), str(tgt), str(tmp_path / "p.tsv"), model="ngram"), load_model=_never)
    assert str(refused.value) == f"{tgt}: {says}"
    # the command line: one line, exit 2 (the report: "cannot reshape array of size 0", exit 1)
    out = tmp_path / "p.tsv"
    assert (
        main(["mine", "--src", str(src), "--tgt", str(tgt), "--model", "minilm-en", "--out", str(out)]) == 2
    )
    assert capsys.readouterr().err == f"sentkit: error: {tgt}: {says}\n"
    assert not out.exists()


# ---- a model mismatch is refused before the text side is encoded -------------------------------------------
class SpyEncoder(NgramEncoder):
    """NgramEncoder that records every sentence it encodes."""

    def __init__(self, dim: int = 256) -> None:
        super().__init__(dim=dim)
        self.seen: list[str] = []

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False):
        self.seen.extend(sentences)
        return super().encode(sentences, batch_size, show_progress)


def test_mine_refuses_a_model_mismatch_before_encoding_the_text_side(tmp_path):
    de, en = _write(tmp_path / "de.txt", DE), _write(tmp_path / "en.txt", EN)
    folder = _encode(de, tmp_path / "v" / "de")  # NgramEncoder(dim=256)
    other = SpyEncoder(dim=128)
    request = MineRequest(str(folder), str(en), str(tmp_path / "p.tsv"), model="other")
    says = f"--model other is not the model {folder} was encoded by \\('ngram'\\)"
    with pytest.raises(ManifestMismatch, match=says):
        mine_files(request, load_model=lambda name: other, log=lambda line: None)
    assert other.seen and not set(EN) & set(other.seen)  # only the fingerprint's probes were encoded
    assert not (tmp_path / "p.tsv").exists()


# ---- blank rows and zero vectors: never paired, no NaN --------------------------------------------------------
def test_blank_rows_with_an_avg_model_are_not_mined_and_no_score_is_nan(tmp_path, capsys):
    model = make_tiny_encoder(pooling="mean").save(tmp_path / "tiny")
    de = _write(tmp_path / "de.txt", ["", DE[0], "   ", DE[1], DE[2], "", DE[3]])
    en = _write(tmp_path / "en.txt", ["", "", EN[0], EN[1], "\t", EN[2], EN[3], EN[4]])
    out = tmp_path / "pairs.tsv"
    args = ["mine", "--src", str(de), "--tgt", str(en), "--model", f"avg:{model}", "--out", str(out)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the report: "invalid value encountered in divide"
        assert main(args) == 0
    stdout = capsys.readouterr().out
    assert f"{de}: 3 blank rows not mined" in stdout and f"{en}: 3 blank rows not mined" in stdout
    rows = _rows(out)
    assert rows and all(math.isfinite(float(r[0])) for r in rows)
    assert all(r[3].strip() and r[4].strip() for r in rows)
    src_lines = {f"{de}:{n}" for n in (2, 4, 5, 7)}  # ids count the blank lines, as sentkit encode does
    assert {r[1] for r in rows} <= src_lines
    sidecar = json.loads((tmp_path / "pairs.tsv.json").read_text())
    assert sidecar["src"]["rows"] == 7
    assert (sidecar["src"]["blank_rows"], sidecar["src"]["mined_rows"]) == (3, 4)
    assert (sidecar["tgt"]["blank_rows"], sidecar["tgt"]["mined_rows"]) == (3, 5)

    # the same pairs from shard folders of the same files (their blank rows hold zero vectors)
    for name, path in (("de", de), ("en", en)):
        request = EncodeRequest(
            str(path), str(tmp_path / name), f"avg:{model}", ShardSettings(shard_size=3), engine="local"
        )
        encode_corpus(request, log=lambda line: None)
    again = tmp_path / "again.tsv"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert (
            main(["mine", "--src", str(tmp_path / "de"), "--tgt", str(tmp_path / "en"), "--out", str(again)])
            == 0
        )
    assert _rows(again) == rows
    assert json.loads((tmp_path / "again.tsv.json").read_text())["tgt"]["blank_rows"] == 3


class ZeroForUnknown(NgramEncoder):
    """Zero vectors for texts containing 'ZZZ' (an `avg:` model's text with no known word)."""

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False):
        out = super().encode(sentences, batch_size, show_progress)
        out[["ZZZ" in s for s in sentences]] = 0.0
        return out


def test_rows_with_zero_vectors_are_not_mined(tmp_path):
    de = _write(tmp_path / "de.txt", [DE[0], "ZZZ eins", DE[1], DE[2], "ZZZ zwei", DE[3]])
    en = _write(tmp_path / "en.txt", ["ZZZ one", *EN])
    for kind in ("text", "shards"):
        src, tgt = (
            (de, en)
            if kind == "text"
            else (
                _encode(de, tmp_path / "v" / "de", ZeroForUnknown()),
                _encode(en, tmp_path / "v" / "en", ZeroForUnknown()),
            )
        )
        out = tmp_path / f"{kind}.tsv"
        lines = []
        model = "zero" if kind == "text" else None
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            sidecar = mine_files(
                MineRequest(str(src), str(tgt), str(out), model=model),
                load_model=lambda name: ZeroForUnknown(),
                log=lines.append,
            )
        rows = _rows(out)
        assert rows and all(math.isfinite(float(r[0])) and "ZZZ" not in r[3] + r[4] for r in rows)
        assert (sidecar["src"]["zero_vector_rows"], sidecar["src"]["mined_rows"]) == (2, 4)
        assert f"{src}: 2 rows with a zero vector (no known word) not mined" in lines


def test_a_side_of_zero_vectors_only_is_refused(tmp_path):
    de, en = _write(tmp_path / "de.txt", ["ZZZ a", "", "ZZZ b"]), _write(tmp_path / "en.txt", EN)
    with pytest.raises(
        InvalidArgument, match=rf"{de}: no rows to mine \(3 rows: 1 blank, 2 with a zero vector"
    ):
        mine_files(
            MineRequest(str(de), str(en), str(tmp_path / "p.tsv"), model="z"),
            load_model=lambda n: ZeroForUnknown(),
        )


# ---- the sidecar's k, FAISS's training warnings --------------------------------------------------------------
def test_sidecar_records_the_k_the_searches_used(tmp_path):
    # sides smaller than the papers' k = 4 (a larger k is refused: test_mine_limits.py)
    de, en = _write(tmp_path / "de3.txt", DE[:3]), _write(tmp_path / "en2.txt", EN[:2])
    sidecar = mine_files(
        MineRequest(str(de), str(en), str(tmp_path / "p.tsv"), model="ngram", config=MineConfig(k=4)),
        load_model=lambda name: NgramEncoder(),
        log=lambda line: None,
    )
    assert (sidecar["config"]["k"], sidecar["config"]["k_requested"]) == (3, 4)
    assert (sidecar["index"]["forward"]["k"], sidecar["index"]["backward"]["k"]) == (2, 3)
    de, en = _write(tmp_path / "de.txt", DE), _write(tmp_path / "en.txt", EN)
    sidecar = mine_files(
        MineRequest(str(de), str(en), str(tmp_path / "q.tsv"), model="ngram", config=MineConfig(k=3)),
        load_model=lambda name: NgramEncoder(),
        log=lambda line: None,
    )
    assert sidecar["config"]["k"] == 3 and "k_requested" not in sidecar["config"]


def _random_side(n, dim, seed):
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return ArrayVectors(vectors, [f"r:{i}" for i in range(n)], ["t"] * n)


def test_faiss_training_chatter_becomes_one_warning_and_a_sidecar_record(capfd):
    x, y = _random_side(1200, 16, 0), _random_side(1100, 16, 1)
    config = MineConfig(index=IndexConfig(kind="ivfpq"))
    with pytest.warns(DataWarning) as caught:
        mined = mine(x, y, config)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert (
        "256 centroids from 1100 points (FAISS asks for 9984)" in message
        and "forward OPQ8,IVF28,PQ8" in message
    )
    assert "256 centroids from 1200 points" in message and re.search(r"backward OPQ8,IVF\d+,PQ8", message)
    assert "WARNING clustering" not in capfd.readouterr().err
    forward = mined.info["index"]["forward"]["training_warnings"]
    assert [(w["points"], w["centroids"], w["wanted"]) for w in forward] == [(1100, 256, 9984)]


def test_mine_command_prints_one_sentkit_line_for_faiss_training_warnings(tmp_path, capfd):
    lines = [f"sentence {i} about {w}" for i in range(1100) for w in ("cats",)]
    de, en = _write(tmp_path / "de.txt", lines), _write(tmp_path / "en.txt", lines[::-1])
    folders = [str(_encode(p, tmp_path / "v" / p.stem, NgramEncoder(dim=32), 500)) for p in (de, en)]
    out = tmp_path / "pairs.tsv"
    assert (
        main(["mine", "--src", folders[0], "--tgt", folders[1], "--out", str(out), "--index", "ivfpq"]) == 0
    )
    err = capfd.readouterr().err
    assert "WARNING clustering" not in err
    assert (
        err.count("sentkit: warning: the index's k-means trained on too few rows") == 1
        and err.count("\n") == 1
    )
    sidecar = json.loads((tmp_path / "pairs.tsv.json").read_text())
    assert sidecar["index"]["backward"]["training_warnings"][0]["points"] == 1100


def test_captured_stderr_restores_fd2_and_passes_unknown_lines_through(capfd):
    warning = b"WARNING clustering 10 points to 4 centroids: please provide at least 156 training points\n"
    with captured_stderr() as chatter:
        os.write(2, warning + b"something else\n" + warning)  # a PQ warns once per sub-quantizer
    found, other = too_few_training_points(chatter.lines)
    assert found == [{"points": 10, "centroids": 4, "wanted": 156, "times": 2}] and other == [
        "something else"
    ]
    assert capfd.readouterr().err == ""
    pass_through(other)
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "something else\nafter\n"
