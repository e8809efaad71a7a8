"""`sentkit mine` refuses numbers FAISS or the margin cannot use, in one line and before anything loads: the
numbers of a factory string and the index flags when the command line is parsed, k and the index against
the rows searched once they are counted; signed thresholds parse."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.cli import main
from sentkit.errors import InvalidArgument
from sentkit.mining.index_spec import HNSW_M, NSG_R, PQ_NBITS, parse_index
from sentkit.mining.mine import MineConfig, MineRequest, mine, mine_files
from sentkit.mining.size_rules import K_MAX, max_k
from sentkit.mining.vectors import ArrayVectors

DE = ["Der Hund schläft.", "Berlin ist groß.", "Zahlen: 12, 34.", "Ich trinke Kaffee."]
EN = ["Numbers: 12, 34.", "The dog sleeps.", "I drink coffee.", "Berlin is big.", "Something else."]


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _never(name):
    raise AssertionError(f"the model {name} was loaded: the request should have been refused first")


def _mine_cli(tmp_path, *flags):
    src, tgt = _write(tmp_path / "de.txt", DE), _write(tmp_path / "en.txt", EN)
    args = [
        "mine",
        "--src",
        str(src),
        "--tgt",
        str(tgt),
        "--model",
        "ngram",
        "--out",
        str(tmp_path / "p.tsv"),
    ]
    return main([*args, *flags])


# ---- factory strings and index flags: refused when parsed --------------------------------------------------
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e999"])
def test_mine_refuses_a_non_finite_threshold_when_parsing(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exit_:
        _mine_cli(tmp_path, f"--threshold={value}")  # -inf as its own word reads as a flag
    assert exit_.value.code == 2
    assert f"argument --threshold: expected a finite number, got '{value}'" in capsys.readouterr().err
    with pytest.raises(InvalidArgument, match="threshold must be a finite number"):
        MineConfig(threshold=float(value))


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        # the report: HNSW0 aborted (134), HNSW1 crashed (139), IVF0,Flat failed after loading
        (["--index", "HNSW0"], "HNSW0: HNSW M (links per node) must be from 2 to 256, got 0"),
        (["--index", "HNSW1"], "HNSW1: HNSW M (links per node) must be from 2 to 256, got 1"),
        (["--index", "IVF0,Flat"], "IVF0,Flat: IVF lists must be from 1 to 16,777,216, got 0 (IVF0)"),
        (["--index", "IVF4_HNSW1,Flat"], "HNSW M (links per node) must be from 2 to 256, got 1 (HNSW1)"),
        (["--index", "IVF99999999999999999999,Flat"], "IVF lists must be from 1 to 16,777,216"),
        (["--index", "NSG4"], "NSG R (out-degree) must be from 8 to 256, got 4"),
        (["--index", "PQ4x0"], "PQ bits per code must be from 3 to 16, got 0"),
        (["--index", "PQ4x1"], "PQ bits per code must be from 3 to 16, got 1"),
        (["--index", "IVF4,PQ4x8fs"], "fast-scan PQ codes are 4-bit (PQ4x4fs), got 8 bits"),
        (["--index", "PQ0"], "PQ sub-quantizers must be from 1 to 65,536, got 0"),
        (["--index", "OPQ0,PQ4"], "OPQ sub-quantizers M must be from 1 to 65,536, got 0 (OPQ0)"),
        (["--index", "OPQ4_0,PQ4"], "OPQ output dim must be from 1 to 65,536, got 0 (OPQ4_0)"),
        (["--index", "RR0,Flat"], "RR output dim must be from 1 to 65,536, got 0 (RR0)"),
        (["--nlist", "0"], "argument --nlist: expected a list count from 1 to 16,777,216, got '0'"),
        (["--nprobe", "99999999999999999999"], "argument --nprobe: expected a list count from 1 to"),
        (["--ef-search", "2147483647"], "argument --ef-search: expected a candidate count from 1 to 65,536"),
        (["--pq-m", "0"], "argument --pq-m: expected a sub-quantizer count from 1 to 65,536, got '0'"),
        (["--refine", "-3"], "argument --refine: expected a candidate count from 1 to 1,024, got '-3'"),
        # the report: 99999999999999999999 was capped to the rows and mined nonsense
        (["--k", "99999999999999999999"], "argument --k: expected a neighbour count from 1 to 64"),
        (["--k", "150"], "argument --k: expected a neighbour count from 1 to 64, got '150'"),
        (["--k", "0"], "argument --k: expected a neighbour count from 1 to 64, got '0'"),
    ],
)
def test_index_numbers_and_k_are_refused_when_parsed(tmp_path, capsys, flags, says):
    with pytest.raises(SystemExit) as exit_:
        _mine_cli(tmp_path, *flags)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not (tmp_path / "p.tsv").exists()


@pytest.mark.parametrize("text", ["HNSW2", "HNSW", "IVF1,Flat", "IVF4_HNSW2,PQ4x3", "NSG8", "OPQ4_8,PQ4x4fs"])
def test_the_lowest_accepted_numbers_parse(text):
    assert parse_index(text) == text


def test_faiss_builds_and_searches_the_lowest_accepted_numbers_in_a_subprocess():
    """The lower bounds are what FAISS needs: each lowest accepted value builds, trains and searches (in a
    subprocess: below them FAISS aborts or crashes the process)."""
    low = [
        f"HNSW{HNSW_M[0]}",
        f"IVF4_HNSW{HNSW_M[0]},Flat",
        f"PQ4x{PQ_NBITS[0]}",
        f"NSG{NSG_R[0]}",
        "RR1,Flat",
    ]
    script = textwrap.dedent(
        """
        import sys, numpy as np, faiss
        x = np.random.default_rng(0).standard_normal((300, 8)).astype("float32")
        for factory in sys.argv[1:]:
            index = faiss.index_factory(8, factory, faiss.METRIC_INNER_PRODUCT)
            index.train(x)
            index.add(x)
            _, found = index.search(x[:5], 4)
            assert (found >= 0).all(), factory
            print(factory, "ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *low], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.split("\n")[:-1] == [f"{factory} ok" for factory in low]


# ---- signed thresholds --------------------------------------------------------------------------------------
def test_a_negative_threshold_parses_as_a_number(tmp_path, capsys, monkeypatch):
    import sentkit.cli

    monkeypatch.setattr(sentkit.cli, "_load_model", lambda name: NgramEncoder())
    # the report: `--threshold -inf` said "expected one argument"; a negative cosine threshold is valid
    assert _mine_cli(tmp_path, "--scoring", "cosine", "--threshold", "-0.5") == 0
    assert _mine_cli(tmp_path, "--scoring", "cosine", "--threshold", "-1e-3") == 0
    with pytest.raises(SystemExit) as exit_:
        _mine_cli(tmp_path, "--threshold", "-inf")
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --threshold: expected a finite number, got '-inf' (it would keep every pair" in err
    assert "expected one argument" not in err


# ---- k and the index against the rows searched: refused before the model loads --------------------------
def test_max_k_is_a_tenth_of_the_rows_or_the_papers_4():
    assert [max_k(n) for n in (1, 4, 49, 50, 200, 639, 640, 10**6)] == [4, 4, 4, 5, 20, 63, 64, K_MAX]


def test_a_k_large_against_the_rows_is_refused_before_the_model_loads(tmp_path):
    de, en = _write(tmp_path / "de.txt", DE), _write(tmp_path / "en.txt", EN)
    request = MineRequest(str(de), str(en), str(tmp_path / "p.tsv"), model="ngram", config=MineConfig(k=5))
    with pytest.raises(InvalidArgument) as refused:
        mine_files(request, load_model=_never)
    assert str(refused.value).startswith(f"--k 5: {de} has 4 rows to search")
    assert str(refused.value).endswith("give --k at most 4 (a tenth of the rows, or 4)")
    with pytest.raises(InvalidArgument, match="expected 1 to 64 neighbours"):
        MineConfig(k=5000)


def test_k_against_the_rows_holds_for_vectors_mined_directly():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((60, 8)), rng.standard_normal((200, 8))
    side = lambda v: ArrayVectors(v, [""] * len(v), [""] * len(v))  # noqa: E731
    assert len(mine(side(x), side(y), MineConfig(k=6)).src) > 0  # 60 rows: up to 6
    with pytest.raises(InvalidArgument, match="--k 7: src has 60 rows to search"):
        mine(side(x), side(y), MineConfig(k=7))
    mine(side(x), side(y), MineConfig(k=7, scoring="cosine"))  # cosine: no neighbourhood mean


@pytest.mark.parametrize(
    ("index", "says"),
    [
        ("IVF64,Flat", "--index IVF64,Flat: 64 IVF lists need at least as many rows to train"),
        ("PQ4", "--index PQ4: 8-bit PQ codes need 256 centroids"),
        ("NSG8", "--index NSG8: FAISS builds an NSG graph over more than 100 rows"),
        ("ivfpq", "--index ivfpq: needs at least 1000 rows a side to train"),
    ],
)
def test_an_index_the_rows_cannot_train_is_refused_before_the_model_loads(tmp_path, index, says):
    from sentkit.mining.search import IndexConfig

    de, en = _write(tmp_path / "de.txt", DE), _write(tmp_path / "en.txt", EN)
    config = MineConfig(index=IndexConfig(kind=index))
    with pytest.raises(InvalidArgument, match="^" + says.replace("(", r"\(")):
        mine_files(MineRequest(str(de), str(en), str(tmp_path / "p.tsv"), "ngram", config), load_model=_never)


def test_nlist_over_the_rows_is_refused_naming_the_flag(tmp_path):
    from sentkit.mining.search import IndexConfig

    rows = [f"row {i}" for i in range(1200)]
    de, en = _write(tmp_path / "de.txt", rows), _write(tmp_path / "en.txt", rows)
    config = MineConfig(index=IndexConfig(kind="ivf-fastscan", nlist=5000))
    with pytest.raises(InvalidArgument, match="^--nlist 5000: 5,000 IVF lists need at least as many rows"):
        mine_files(MineRequest(str(de), str(en), str(tmp_path / "p.tsv"), "ngram", config), load_model=_never)


def test_pq_sub_quantizers_not_dividing_a_folders_dim_are_refused_before_the_model_loads(tmp_path):
    from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
    from sentkit.corpus.shards import ShardSettings
    from sentkit.mining.search import IndexConfig

    de, en = _write(tmp_path / "de.txt", DE), _write(tmp_path / "en.txt", EN)
    folder = tmp_path / "v_de"
    request = EncodeRequest(str(de), str(folder), "ngram", ShardSettings(shard_size=2), engine="local")
    encode_corpus(request, load_model=lambda name: NgramEncoder(dim=32), log=lambda line: None)
    config = MineConfig(index=IndexConfig(kind="IVF2,PQ5x4"))
    with pytest.raises(InvalidArgument, match=r"^--index IVF2,PQ5x4: PQ5x4 needs the vector dim \(32\)"):
        mine_files(
            MineRequest(str(folder), str(en), str(tmp_path / "p.tsv"), "ngram", config), load_model=_never
        )
