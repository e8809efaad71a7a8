"""Where `sentkit mine` writes: never into the folder a shard folder was encoded from, NUL escaped in the
TSV like tab and newline, and one run per `--out` at a time (the lock `sentkit encode` takes)."""

from __future__ import annotations

import json

import pytest

from ngram_encoder import NgramEncoder
from sentkit.cli import main
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.shards import ShardSettings
from sentkit.errors import OutputPathError
from sentkit.mining.mine import MineRequest, lock_path, mine_files, output_lock
from sentkit.output_lock import exclusive_lock

DE = ["Der Hund schläft.", "Berlin ist groß.", "Zahlen: 12, 34.", "Ich trinke Kaffee."]
EN = ["Numbers: 12, 34.", "The dog sleeps.", "I drink coffee.", "Berlin is big."]


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _encode(source, folder):
    request = EncodeRequest(str(source), str(folder), "ngram", ShardSettings(shard_size=2), engine="local")
    encode_corpus(request, load_model=lambda name: NgramEncoder(), log=lambda line: None)
    return folder


def _never(name):
    raise AssertionError(f"the model {name} was loaded: the request should have been refused first")


def _quiet(line):
    pass


@pytest.fixture
def encoded(tmp_path, monkeypatch):
    """infold/{a,b}.txt encoded from the folder into v/fold, en.txt into v/en; the working folder is tmp_path."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "infold" / "a.txt", DE[:2])
    _write(tmp_path / "infold" / "b.txt", DE[2:])
    _encode("infold", tmp_path / "v" / "fold")
    _encode(_write(tmp_path / "en.txt", EN), tmp_path / "v" / "en")
    return tmp_path


# ---- the folder a shard folder was encoded from ---------------------------------------------------------------
def test_mine_never_writes_into_the_folder_a_shard_folder_was_encoded_from(encoded, capsys):
    argv = ["mine", "--src", "v/fold", "--tgt", "v/en"]
    for out in ("infold/new.tsv", "./infold/../infold/new.tsv"):
        assert main([*argv, "--out", out]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"sentkit: error: --out {out} lies in the folder {encoded / 'infold'} v/fold was encoded from "
            "(every file there is read as corpus); write the pairs outside it\n"
        )
    assert sorted(p.name for p in (encoded / "infold").iterdir()) == ["a.txt", "b.txt"]
    # and the folder still encodes: nothing new appeared in it
    summary = encode_corpus(
        EncodeRequest("infold", "v/fold", "ngram", ShardSettings(shard_size=2), engine="local"),
        load_model=lambda name: NgramEncoder(),
        log=_quiet,
    )
    assert summary["status"] == "nothing to do"


def test_the_manifest_records_a_folder_input_and_not_a_file_input(encoded):
    assert json.loads((encoded / "v/fold/manifest.json").read_text())["input_folder"] == str(
        encoded / "infold"
    )
    assert json.loads((encoded / "v/en/manifest.json").read_text())["input_folder"] is None


def test_a_manifest_without_the_record_protects_the_folder_its_inputs_fill(encoded):
    manifest = encoded / "v" / "fold" / "manifest.json"
    data = json.loads(manifest.read_text())
    del data["input_folder"]  # as written before the folder was recorded
    manifest.write_text(json.dumps(data))
    request = MineRequest("v/fold", "v/en", "infold/new.tsv")
    with pytest.raises(OutputPathError, match=r"lies in the folder .*infold v/fold was encoded from"):
        mine_files(request, load_model=_never, log=_quiet)


def test_pairs_may_go_beside_a_file_input_of_a_shard_folder(encoded):
    # en.txt was encoded on its own: the folder holding it is not read as corpus
    sidecar = mine_files(MineRequest("v/fold", "v/en", "pairs.tsv"), load_model=_never, log=_quiet)
    assert sidecar["pairs"] == 4 and (encoded / "pairs.tsv").is_file()


# ---- NUL in the TSV -------------------------------------------------------------------------------------------
def test_nul_is_escaped_in_the_pairs_tsv_like_tab_and_newline(tmp_path):
    de = tmp_path / "de.txt"
    de.write_bytes("Der Hund\x00schläft.\nBerlin\tist groß.\n".encode())
    en = _write(tmp_path / "en.txt", ["The dog\x00sleeps.", "Berlin is big."])
    out = tmp_path / "pairs.tsv"
    mine_files(MineRequest(str(de), str(en), str(out), model="ngram"), load_model=lambda n: NgramEncoder())
    data = out.read_bytes()
    assert b"\x00" not in data
    rows = [line.split("\t") for line in data.decode().splitlines()[1:]]
    assert sorted(r[3:] for r in rows) == [
        ["Berlin\\tist groß.", "Berlin is big."],
        ["Der Hund\\0schläft.", "The dog\\0sleeps."],
    ]


# ---- one run per --out ----------------------------------------------------------------------------------------
def test_a_second_mine_into_the_same_out_is_refused_in_one_line(encoded, capsys):
    out = encoded / "runs" / "pairs.tsv"
    with output_lock(out):
        assert lock_path(out).is_file()
        assert main(["mine", "--src", "v/fold", "--tgt", "v/en", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"sentkit: error: --out {out}: another sentkit mine is writing it (it holds {lock_path(out)}); "
            "wait for it to end or choose another --out\n"
        )
        assert not out.exists() and not out.with_name("pairs.tsv.json").exists()
    # released: the lock file and the folder made for it are gone
    assert not (encoded / "runs").exists()
    assert main(["mine", "--src", "v/fold", "--tgt", "v/en", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["pairs.tsv", "pairs.tsv.json"]


def test_a_refused_mine_leaves_no_lock_and_no_folder(encoded):
    request = MineRequest("v/fold", "en.txt", "new/deeper/pairs.tsv")  # text side without --model
    with pytest.raises(Exception, match="--model is needed"):
        mine_files(request, load_model=_never, log=_quiet)
    assert not (encoded / "new").exists()


def test_a_link_planted_as_the_lock_file_is_refused_and_not_followed(encoded):
    target = encoded / "elsewhere.txt"
    lock_path(encoded / "pairs.tsv").symlink_to(target)
    with pytest.raises(OutputPathError, match=r"\.pairs\.tsv\.lock: is a symbolic link"):
        mine_files(MineRequest("v/fold", "v/en", "pairs.tsv"), load_model=_never, log=_quiet)
    assert not target.exists() and not (encoded / "pairs.tsv").exists()


def test_encode_takes_the_same_lock_on_its_folder(encoded):
    folder = encoded / "v" / "en"
    with exclusive_lock(folder / ".lock", "held by the test"):
        with pytest.raises(
            OutputPathError, match=f"{folder}: another sentkit encode is writing into this folder"
        ):
            _encode(encoded / "en.txt", folder)
    (folder / ".lock").unlink()
    (folder / ".lock").symlink_to(encoded / "planted")
    with pytest.raises(OutputPathError, match=r"\.lock: is a symbolic link"):
        _encode(encoded / "en.txt", folder)
    assert not (encoded / "planted").exists()


def test_an_input_in_a_link_loop_is_one_line_not_a_crash(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop").symlink_to("loop")
    _write(tmp_path / "en.txt", EN)
    for src in ("loop", "loop/de.txt"):
        assert main(["mine", "--src", src, "--tgt", "en.txt", "--model", "ngram", "--out", "pairs.tsv"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"sentkit: error: {src}: "), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["en.txt", "loop"]
