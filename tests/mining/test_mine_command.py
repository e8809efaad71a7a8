"""`sentkit mine` end to end (text files and shard folders), and the BUCC task on the same mining code."""

from __future__ import annotations

import io
import json
import tarfile

import numpy as np
import pytest

from conftest import make_tiny_encoder
from ngram_encoder import NgramEncoder
from sentkit.cli import main
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.manifest import ManifestMismatch
from sentkit.corpus.shards import ShardSettings
from sentkit.mining.mine import MineRequest, mine_files
from sentkit.tasks import get_task
from sentkit.tasks.bitext import mine_pairs

SRC = ["Der Hund schläft.", "Ich trinke Kaffee um 7 Uhr.", "Berlin ist groß.", "Zahlen: 12, 34.", "Ein\tTab"]
TGT = [
    "Numbers: 12, 34.",
    "The dog sleeps.",
    "Something else entirely.",
    "Berlin is big.",
    "I drink coffee at 7.",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_tiny_encoder(pooling="mean").save(tmp_path_factory.mktemp("model") / "tiny")


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _rows(tsv):
    header, *rows = tsv.read_text(encoding="utf-8").splitlines()
    return header, [row.split("\t") for row in rows]


def test_mine_text_files_writes_sorted_pairs_with_ids_texts_and_a_sidecar(model_dir, tmp_path, capsys):
    src, tgt, out = _write(tmp_path / "de.txt", SRC), _write(tmp_path / "en.txt", TGT), tmp_path / "pairs.tsv"
    assert (
        main(["mine", "--src", str(src), "--tgt", str(tgt), "--model", str(model_dir), "--out", str(out)])
        == 0
    )
    header, rows = _rows(out)
    n = len(rows)
    assert (
        f"{out}: {n} pairs ({n} before the threshold) from 5 x 5 rows; index Flat / Flat"
        in capsys.readouterr().out
    )
    assert header == "score\tsrc_id\ttgt_id\tsrc_text\ttgt_text"
    scores = [float(r[0]) for r in rows]
    assert scores == sorted(scores, reverse=True) and n >= 3
    assert len({r[1] for r in rows}) == len({r[2] for r in rows}) == n  # max retrieval: one-to-one
    for _, src_id, tgt_id, src_text, tgt_text in rows:
        row = int(src_id.rsplit(":", 1)[1])
        assert src_id == f"{src}:{row}" and src_text == SRC[row - 1].replace("\t", "\\t")
        assert tgt_text == TGT[int(tgt_id.rsplit(":", 1)[1]) - 1]
    sidecar = json.loads((tmp_path / "pairs.tsv.json").read_text())
    assert sidecar["index"]["forward"]["index"] == "flat" and sidecar["pairs"] == n
    assert sidecar["config"]["k"] == 4 and sidecar["config"]["retrieval"] == "max"
    assert {"knn_forward_s", "knn_backward_s", "score_s", "select_s", "write_s", "encode_src_s"} <= set(
        sidecar["timings"]
    )

    # the same pairs from shard folders written by sentkit encode (texts read back from the inputs)
    for name, path in (("de", src), ("en", tgt)):
        request = EncodeRequest(
            str(path), str(tmp_path / name), str(model_dir), ShardSettings(shard_size=2), engine="local"
        )
        encode_corpus(request, log=lambda line: None)
    again = tmp_path / "again.tsv"
    assert (
        main(["mine", "--src", str(tmp_path / "de"), "--tgt", str(tmp_path / "en"), "--out", str(again)]) == 0
    )
    assert _rows(again) == _rows(out)

    # a threshold keeps the pairs scoring at least it
    cut = rows[1][0]  # as printed (rounded to 6 places): the second pair scores at least it
    kept = tmp_path / "kept.tsv"
    args = ["mine", "--src", str(src), "--tgt", str(tgt), "--model", str(model_dir), "--out", str(kept)]
    assert main(args + ["--threshold", cut]) == 0
    assert [r[:3] for r in _rows(kept)[1]] == [r[:3] for r in rows[:2]]


def test_mine_refuses_missing_model_and_mixed_models(model_dir, tmp_path, capsys):
    src, tgt = _write(tmp_path / "de.txt", SRC), _write(tmp_path / "en.txt", TGT)
    assert main(["mine", "--src", str(src), "--tgt", str(tgt), "--out", str(tmp_path / "p.tsv")]) == 2
    assert f"--model is needed to encode {src}" in capsys.readouterr().err
    other = make_tiny_encoder(pooling="mean", seed=3)
    for name, path, encoder in (("de", src, None), ("en", tgt, other)):
        request = EncodeRequest(
            str(path), str(tmp_path / name), str(model_dir), ShardSettings(shard_size=2), engine="local"
        )
        encode_corpus(
            request, load_model=(lambda n, e=encoder: e) if encoder else None, log=lambda line: None
        )
    with pytest.raises(ManifestMismatch, match="were encoded by different models"):
        mine_files(MineRequest(str(tmp_path / "de"), str(tmp_path / "en"), str(tmp_path / "p.tsv")))
    assert not (tmp_path / "p.tsv").exists()


# ---- BUCC: the task's F1 unchanged, and `sentkit mine` finds the task's pairs ---------------------------------
# F1 of the BUCC code before it moved onto sentkit.mining (the character-trigram encoder, 2 FAISS threads)
SUBSET_F1 = {"de-en_margin": 13.190921228304404, "de-en_cosine": 10.32808059932834}
SAMPLE_F1 = {"de-en_margin": 3.6054033485540335, "de-en_cosine": 1.7769706805746495}


def _bucc_subset(data_root, folder, n_gold=300, n_src_extra=900, n_tgt_extra=1200):
    """A smaller BUCC de-en archive cut from the real sample: its first gold pairs plus unpaired sentences."""
    from sentkit.datasets.bucc import load_bucc

    sample = load_bucc("de-en", data_root)
    gold = sample.gold[:n_gold]
    gold_src, gold_tgt = {a for a, _ in gold}, {b for _, b in gold}
    src = list(zip(sample.src_ids, sample.src_sentences))
    tgt = list(zip(sample.trg_ids, sample.trg_sentences))
    src = [r for r in src if r[0] in gold_src] + [r for r in src if r[0] not in gold_src][:n_src_extra]
    tgt = [r for r in tgt if r[0] in gold_tgt] + [r for r in tgt if r[0] not in gold_tgt][:n_tgt_extra]
    keep_src, keep_tgt = {i for i, _ in src}, {i for i, _ in tgt}
    gold = [(a, b) for a, b in sample.gold if a in keep_src and b in keep_tgt]
    folder.mkdir(parents=True)
    with tarfile.open(folder / "bucc2018-de-en.sample-gold.tar.bz2", "w:bz2") as tar:
        for ext, lines in (("de", src), ("en", tgt), ("gold", gold)):
            data = ("\n".join(f"{a}\t{b}" for a, b in lines) + "\n").encode()
            info = tarfile.TarInfo(f"bucc2018/de-en/de-en.sample.{ext}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return src, tgt


def test_bucc_f1_unchanged_on_a_real_subset(data_root, toy_root):
    _bucc_subset(data_root, toy_root / "bitext" / "bucc")
    scores = get_task("bucc", langs=["de-en"], data_root=toy_root).evaluate(NgramEncoder())
    for key, value in SUBSET_F1.items():
        assert scores[key] == pytest.approx(value, rel=1e-9)


def test_mine_command_finds_the_bucc_task_pairs(data_root, tmp_path):
    src, tgt = _bucc_subset(data_root, tmp_path / "bucc")
    src_texts, tgt_texts = list(dict.fromkeys(t for _, t in src)), list(dict.fromkeys(t for _, t in tgt))
    de, en = _write(tmp_path / "de.txt", src_texts), _write(tmp_path / "en.txt", tgt_texts)
    out = tmp_path / "pairs.tsv"
    mine_files(
        MineRequest(str(de), str(en), str(out), model="ngram"),
        load_model=lambda name: NgramEncoder(),
        log=lambda line: None,
    )
    encoder = NgramEncoder()
    task_src, task_tgt, task_score = mine_pairs(
        encoder.encode(src_texts), encoder.encode(tgt_texts), "margin"
    )
    _, rows = _rows(out)
    mined = [(int(r[1].rsplit(":", 1)[1]) - 1, int(r[2].rsplit(":", 1)[1]) - 1) for r in rows]
    assert len(mined) == len(task_src) > 500
    # the same pairs; mine scores with float64 sums of the float32 vectors, the task with FAISS's float32
    # sums, so pairs whose scores agree to 1e-6 may come out in either order
    assert set(mined) == set(zip(task_src.tolist(), task_tgt.tolist()))
    np.testing.assert_allclose([float(r[0]) for r in rows], task_score, atol=1e-5)
    task_pairs = list(zip(task_src.tolist(), task_tgt.tolist()))
    swapped = [i for i, pair in enumerate(task_pairs) if mined[i] != pair]
    # only near-ties swap places (how many depends on the CPU's vector width): the pair mine puts at a
    # position scores, by the task, within 1e-6 of the task's own pair there
    task_score_of = dict(zip(task_pairs, task_score.tolist()))
    assert len(swapped) < 10
    assert all(abs(task_score_of[mined[i]] - task_score[i]) < 1e-6 for i in swapped)


@pytest.mark.slow
def test_bucc_f1_unchanged_on_the_whole_de_en_sample(data_root):
    scores = get_task("bucc", langs=["de-en"], data_root=data_root).evaluate(NgramEncoder())
    for key, value in SAMPLE_F1.items():
        assert scores[key] == pytest.approx(value, rel=1e-9)
