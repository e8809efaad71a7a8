"""The `sentkit` command line end to end on a tiny saved model: encode, eval, report, and one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentkit.cli import main
from sentkit.evaluate import evaluate


@pytest.fixture
def tiny_dir(tmp_path):
    from conftest import make_tiny_encoder

    encoder = make_tiny_encoder(pooling="mean")
    return encoder, encoder.save(tmp_path / "tiny")


def test_encode_writes_one_row_per_line_equal_to_the_library(tiny_dir, tmp_path, capsys):
    encoder, path = tiny_dir
    lines = ["A man is playing a guitar.", "", "Ein Mann spielt Gitarre.", "x" * 400]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "vecs.npy"
    assert (
        main(["encode", "--model", str(path), "--input", str(tmp_path / "in.txt"), "--output", str(out)]) == 0
    )
    vectors = np.load(out)
    assert vectors.shape == (4, 32) and vectors.dtype == np.float32  # the blank line keeps its row
    np.testing.assert_allclose(vectors, encoder.encode(lines), atol=1e-5)
    assert "4 x 32 float32" in capsys.readouterr().out


def test_encode_bad_utf8_is_one_line_naming_file_and_line(tiny_dir, tmp_path, capsys):
    _, path = tiny_dir
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nalso fine\n\xff\xfe broken\n")
    out = tmp_path / "never.npy"
    assert main(["encode", "--model", str(path), "--input", str(bad), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sentkit: error: ") and f"{bad}:3: expected UTF-8" in err and "\n" not in err
    assert not out.exists()


def test_unknown_task_suggests_a_name(tiny_dir, tmp_path, capsys):
    _, path = tiny_dir
    assert main(["eval", "--model", str(path), "--tasks", "stsb-dve", "--out", str(tmp_path)]) == 2
    assert "did you mean stsb-dev" in capsys.readouterr().err


def stsb_dev_argv(model, out, *flags: str) -> list[str]:
    """`sentkit eval` of `model` on stsb-dev into `out`, with `flags`."""
    return ["eval", "--model", str(model), "--tasks", "stsb-dev", "--out", str(out), *flags]


def test_eval_then_report(tiny_dir, tmp_path, data_root, capsys):
    encoder, path = tiny_dir
    out = tmp_path / "results"
    assert main(stsb_dev_argv(path, out, "--data-root", str(data_root))) == 0
    files = sorted(out.glob("*.json"))
    assert len(files) == 1 and files[0].with_suffix(".md").exists()
    results = json.loads(files[0].read_text())
    score = results["tasks"]["stsb-dev"]["scores"]["main_score"]
    # exactly what the library gives for the model that was saved (same pooling, same pairs, same gold)
    library = evaluate(encoder, "stsb-dev", data_root=data_root, show_progress=False)
    assert score == library["tasks"]["stsb-dev"]["main_score"] < 70  # random 2-layer: far below MiniLM (86.7)
    assert results["seed"] == 0 and "torch" in results["versions"]
    assert results["config"]["device"] == "cpu"  # auto, and torch sees no GPU in the tests
    capsys.readouterr()
    assert main(["report", str(files[0]), "--out", str(tmp_path / "report")]) == 0
    table = (tmp_path / "report" / "report.md").read_text()
    assert "stsb-dev" in table and f"{score:.2f}" in table
    assert (tmp_path / "report" / "tasks.png").stat().st_size > 1000


# --- exit status: 0 all tasks ran, 1 a task failed (recorded), 2 bad input, 130 Ctrl-C -----------------


class _Stub:
    name = "stub"

    def encode(self, sentences, batch_size=64, show_progress=False):
        return np.ones((len(sentences), 2), dtype=np.float32)


@pytest.fixture
def stubs(monkeypatch):
    """Register the encoder `_stub` and tasks `_cli-<name>` running the given functions (for one test)."""
    from sentkit.encoders import ENCODERS
    from sentkit.tasks import TASKS
    from sentkit.tasks.task import Task

    class Scripted(Task):
        def evaluate(self, encoder):
            return self.meta.pop("action")(encoder)

    monkeypatch.setitem(ENCODERS._items, "_stub", lambda **kw: _Stub())

    def add(**actions):
        for name, action in actions.items():
            monkeypatch.setitem(
                TASKS._items,
                f"_cli-{name}",
                lambda n=name, a=action, **kw: Scripted(name=f"_cli-{n}", meta={"action": a}),
            )

    return add


def _raise(err):
    def action(encoder):
        raise err

    return action


def test_eval_exit_1_when_a_task_failed_and_the_rest_are_kept(stubs, tmp_path, capsys):
    stubs(ok=lambda enc: {"main_score": 50.0}, broken=_raise(RuntimeError("boom")))
    argv = ["eval", "--model", "_stub", "--tasks", "_cli-broken,_cli-ok", "--out", str(tmp_path)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "sentkit: 1 of 2 tasks failed (_cli-broken); errors recorded in" in err
    saved = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert saved["complete"] is True and list(saved["tasks"]) == ["_cli-ok"]
    assert saved["errors"]["_cli-broken"] == {"type": "RuntimeError", "message": "boom"}


def test_eval_ctrl_c_exit_130_one_line_naming_the_kept_file(stubs, tmp_path, capsys):
    stubs(ok=lambda enc: {"main_score": 50.0}, stop=_raise(KeyboardInterrupt()))
    argv = ["eval", "--model", "_stub", "--tasks", "_cli-ok,_cli-stop", "--out", str(tmp_path)]
    assert main(argv) == 130
    [path] = tmp_path.glob("*.json")
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == f"sentkit: interrupted; 1 finished tasks kept in {path} (marked incomplete)"
    assert json.loads(path.read_text())["complete"] is False


def test_a_bug_is_one_line_with_a_hint_and_debug_shows_the_traceback(stubs, monkeypatch, tmp_path, capsys):
    def buggy(*args, **kwargs):
        raise TypeError("a genuine bug")

    monkeypatch.setattr("sentkit.evaluate.evaluate", buggy)
    argv = ["eval", "--model", "_stub", "--tasks", "stsb-dev", "--out", str(tmp_path)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err == "sentkit: error: TypeError: a genuine bug (set SENTKIT_DEBUG=1 for the traceback)\n"
    monkeypatch.setenv("SENTKIT_DEBUG", "1")
    with pytest.raises(TypeError, match="a genuine bug"):
        main(argv)


def test_sigint_keeps_finished_tasks_and_exits_130(tmp_path):
    """A real SIGINT to a running `sentkit eval`: one line, exit 130, the finished task on disk."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    ready = tmp_path / "ready"
    env = dict(os.environ, STUB_READY=str(ready), HF_HUB_OFFLINE="1")
    env.pop("SENTKIT_DEBUG", None)
    script = Path(__file__).with_name("stub_cli.py")
    cmd = [sys.executable, str(script), "eval", "--model", "_stub", "--tasks", "_stub-ok,_stub-wait"]
    proc = subprocess.Popen(
        [*cmd, "--out", str(tmp_path / "res")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    err = err.decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    [path] = (tmp_path / "res").glob("*.json")
    assert err.strip().splitlines()[-1] == (
        f"sentkit: interrupted; 1 finished tasks kept in {path} (marked incomplete)"
    )
    saved = json.loads(path.read_text())
    assert saved["complete"] is False and saved["interrupted"] == "_stub-wait"
    assert saved["tasks"]["_stub-ok"]["main_score"] == 50.0
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == [path.name, path.with_suffix(".md").name]


def test_encode_refuses_to_write_nan_vectors(monkeypatch, tmp_path, capsys):
    from sentkit.encoders import ENCODERS

    class NanEncoder(_Stub):
        def encode(self, sentences, batch_size=64, show_progress=False):
            vectors = super().encode(sentences)
            vectors[1, 0] = np.nan
            return vectors

    monkeypatch.setitem(ENCODERS._items, "_nan", lambda **kw: NanEncoder())
    (tmp_path / "in.txt").write_text("a\nb\nc\n")
    out = tmp_path / "v.npy"
    assert main(["encode", "--model", "_nan", "--input", str(tmp_path / "in.txt"), "--output", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"sentkit: error: model {NanEncoder().name!r} produced non-finite vectors (NaN or Infinity) for 1 of 3 "
        "sentences; are its weights NaN?"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_eval_records_non_finite_vectors_as_the_task_error(stubs, monkeypatch, tmp_path, capsys):
    """Tasks get vectors through the same check as `encode`: the error names the model, not a NaN score."""
    from sentkit.encoders import ENCODERS

    class InfEncoder(_Stub):
        def encode(self, sentences, batch_size=64, show_progress=False):
            return np.full((len(sentences), 2), np.inf, dtype=np.float32)

    monkeypatch.setitem(ENCODERS._items, "_inf", lambda **kw: InfEncoder())
    stubs(uses=lambda enc: {"main_score": float(enc.encode(["a", "b"]).sum())})
    assert main(["eval", "--model", "_inf", "--tasks", "_cli-uses", "--out", str(tmp_path)]) == 1
    saved = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert saved["tasks"] == {}
    assert saved["errors"]["_cli-uses"] == {
        "type": "NonFiniteVectors",
        "message": "model 'stub' produced non-finite vectors (NaN or Infinity) for 2 of 2 sentences; "
        "are its weights NaN?",
    }


def test_eval_kmeans_option_reaches_clustering_tasks_only(tiny_dir, tmp_path, data_root):
    _, path = tiny_dir
    out = tmp_path / "results"
    argv = ["eval", "--model", str(path), "--tasks", "mewsc16-100,knn-mewsc16-100", "--langs", "ko"]
    argv += ["--kmeans", "sklearn+faiss", "--out", str(out), "--data-root", str(data_root)]
    assert main(argv) == 0
    results = json.loads(next(out.glob("*.json")).read_text())
    assert results["config"]["task_options"] == {"kmeans": "sklearn+faiss"}
    clustering = results["tasks"]["mewsc16-100"]["scores"]
    assert clustering["main_score"] == clustering["ko"] and 0 < clustering["ko_faiss"] <= 100
    assert "main_score" in results["tasks"]["knn-mewsc16-100"]["scores"]  # built without the option
    assert not results["errors"]


# --- the user's own files: read once, before the model loads; paths recorded as given and absolute ------


def test_eval_reads_user_files_once_and_records_absolute_paths(tmp_path, monkeypatch, capsys):
    import sentkit.tasks.user_tasks as user_tasks
    from ngram_encoder import NgramEncoder
    from sentkit.encoders import ENCODERS

    monkeypatch.setitem(ENCODERS._items, "_ngram", lambda **kw: NgramEncoder(dim=32))
    monkeypatch.chdir(tmp_path)
    rows = "a cat\ta cat sat\t3\na dog\tthe stock market\t0\nrain\train falls\t2\n"
    (tmp_path / "pairs.tsv").write_text(rows, encoding="utf-8")
    (tmp_path / "data").mkdir()
    reads = []

    def counted(path):
        reads.append(path)
        return read_sts_file(path)

    read_sts_file = user_tasks.read_sts_file
    monkeypatch.setattr(user_tasks, "read_sts_file", counted)
    argv = ["eval", "--model", "_ngram", "--tasks", "sts:pairs.tsv", "--out", "res", "--data-root", "data"]
    assert main(argv) == 0
    assert len(reads) == 1
    # 3 pairs: the interval is printed with a one-line warning that it means nothing at that size
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("sentkit: warning:")]
    assert warned == [
        "sentkit: warning: task sts:pairs.tsv: only 3 items: too few for a bootstrap interval (at least 30 "
        f"needed), so its 95% CI {warned[0].split('CI ')[1].split(' does')[0]} does not "
        "measure the uncertainty"
    ]
    saved = json.loads(next((tmp_path / "res").glob("*.json")).read_text())
    config = saved["config"]
    assert (config["data_root"], config["data_root_absolute"]) == ("data", str(tmp_path.resolve() / "data"))
    assert (config["out"], config["out_absolute"]) == ("res", str(tmp_path.resolve() / "res"))
    [record] = saved["tasks"]["sts:pairs.tsv"]["meta"]["files"]
    assert (record["path"], record["absolute_path"]) == ("pairs.tsv", str(tmp_path.resolve() / "pairs.tsv"))


def test_eval_bad_user_file_stops_before_the_model_loads(stubs, tmp_path, monkeypatch, capsys):
    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("sentkit.cli._load_model", no_model)
    (tmp_path / "pairs.tsv").write_text("a\tb\t1\nc\td\n", encoding="utf-8")
    argv = [
        "eval",
        "--model",
        "_stub",
        "--tasks",
        f"sts:{tmp_path / 'pairs.tsv'}",
        "--out",
        str(tmp_path / "r"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        f"sentkit: error: {tmp_path / 'pairs.tsv'}:2: expected 3 tab-separated fields "
        "(sentence1, sentence2, score), got 2 fields\n"
    )
    assert not (tmp_path / "r").exists()


def test_eval_bitext_with_repeated_lines_warns_in_one_line(stubs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "de.txt").write_text("Hallo\nJa\nHallo\n", encoding="utf-8")
    (tmp_path / "en.txt").write_text("Hello\nYes\nHi\n", encoding="utf-8")
    assert main(["eval", "--model", "_stub", "--tasks", "bitext:de.txt+en.txt", "--out", "res"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warnings[:1] == [
        "sentkit: warning: de.txt: 1 of 3 lines repeat an earlier line (first: line 3 repeats line 1); "
        "retrieving those lines is a tie broken by position, so the accuracy can be lower than for distinct lines"
    ]
    assert len(warnings) == 2 and "task bitext:de.txt+en.txt: only 3 items: too few" in warnings[1]
    saved = json.loads(next((tmp_path / "res").glob("*.json")).read_text())
    assert saved["tasks"]["bitext:de.txt+en.txt"]["meta"]["repeated_lines"] == {"de.txt": 1}


def test_encode_refuses_to_overwrite_its_input(tmp_path, monkeypatch, capsys):
    from sentkit.encoders import ENCODERS

    monkeypatch.setitem(ENCODERS._items, "_stub", lambda **kw: _Stub())
    text = tmp_path / "in.txt"
    text.write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "same.npy").symlink_to(text)
    for output in (text, tmp_path / "same.npy", tmp_path / "sub" / ".." / "in.txt"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        assert main(["encode", "--model", "_stub", "--input", str(text), "--output", str(output)]) == 2
        is_input = f"--output {output} is the --input file {text}"
        says = f"{output}: is a symbolic link (to {text})" if output.is_symlink() else is_input
        assert says in capsys.readouterr().err
    assert text.read_text(encoding="utf-8") == "a\nb\n"


def test_eval_device_cuda_without_a_gpu_stops_before_the_model_loads(stubs, tmp_path, monkeypatch, capsys):
    import torch

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("sentkit.cli._load_model", no_model)
    argv = [
        "eval",
        "--model",
        "_stub",
        "--tasks",
        "stsb-dev",
        "--out",
        str(tmp_path / "r"),
        "--device",
        "cuda",
    ]
    assert main(argv) == 2
    assert capsys.readouterr().err == "sentkit: error: --device cuda: torch sees no GPU\n"
    assert not (tmp_path / "r").exists()


def test_eval_precision_bf16_casts_the_model_and_stays_close_to_fp32(tiny_dir, tmp_path, data_root):
    _, path = tiny_dir
    scores = {}
    for precision in ("fp32", "bf16"):
        out = tmp_path / precision
        assert main(stsb_dev_argv(path, out, "--precision", precision, "--data-root", str(data_root))) == 0
        (file,) = out.glob("*.json")
        results = json.loads(file.read_text())
        assert results["config"]["precision"] == precision
        scores[precision] = results["tasks"]["stsb-dev"]["main_score"]
    # bf16 keeps 8 bits of mantissa: the score moves, a little (a random 2-layer model scores about 20-60)
    assert scores["bf16"] != scores["fp32"]
    assert abs(scores["bf16"] - scores["fp32"]) < 2.0


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--precision", "fp16"], "--precision fp16 needs a GPU (--device cuda); bf16 runs on CPUs too"),
        (["--precision", "bf16", "--int8"], "--precision bf16 cannot be combined with --int8"),
    ],
)
def test_eval_precision_refusals_come_before_the_model_loads(
    stubs, tmp_path, monkeypatch, capsys, flags, message
):
    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("sentkit.cli._load_model", no_model)
    argv = ["eval", "--model", "_stub", "--tasks", "stsb-dev", "--out", str(tmp_path / "r"), *flags]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"sentkit: error: {message}\n"


def test_a_model_that_is_not_torch_runs_at_fp32_only():
    from sentkit.corpus.engine_local import cast_encoder
    from sentkit.errors import InvalidArgument

    class Numpy:
        def encode(self, sentences, batch_size=64, show_progress=False):
            return np.ones((len(sentences), 4), dtype=np.float32)

    encoder = Numpy()
    assert cast_encoder(encoder, "fp32", "cpu") is encoder
    with pytest.raises(InvalidArgument, match="--precision bf16: Numpy runs at fp32 only"):
        cast_encoder(encoder, "bf16", "cpu")
