"""What a folder holds decides start / resume / no-op / refuse; nothing is lost or left half-written."""

from __future__ import annotations

import json

import pytest
from transformers import TrainerCallback

from sentkit.datasets.columns import ANCHOR
from sentkit.errors import ConfigError
from sentkit.training import train
from test_trainer import save_tiny_model, stsb_sentences, tiny_config


class StopAt(TrainerCallback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt


@pytest.fixture
def tiny(tmp_path, data_root):
    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    return model_dir, datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 16)})


def test_folder_holding_a_run_without_checkpoint_is_refused_unless_overwrite(tmp_path, tiny):
    model_dir, data = tiny
    run = train(tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2), data=data)
    for checkpoint in run.glob("checkpoint-*"):
        import shutil

        shutil.rmtree(checkpoint)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    other = tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2, lr=5e-4)
    with pytest.raises(
        ConfigError, match=r"holds a finished run with a different config \(lr: 0.001 -> 0.0005\)"
    ):
        train(other, data=data)
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    (run / "results.json").unlink()  # config.yaml and best/ only: still a run, nothing to resume
    with pytest.raises(ConfigError, match=r"holds a run \(config.yaml, best/\) but no checkpoint to resume"):
        train(tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2), data=data)
    train(tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2, lr=5e-4, overwrite=True), data=data)
    assert json.loads((run / "results.json").read_text())["config"]["lr"] == 5e-4


def test_finished_run_again_is_a_no_op(tmp_path, tiny, capsys):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2)
    run = train(config, data=data)
    before = (run / "results.json").read_bytes()
    capsys.readouterr()
    train(config, data=data)
    assert "finished run (results.json); nothing to do" in capsys.readouterr().out
    assert (run / "results.json").read_bytes() == before
    more = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=2)
    with pytest.raises(ConfigError, match=r"finished run with a different config \(max_steps: 2 -> 4\)"):
        train(more, data=data)


def test_more_steps_on_resume_are_refused_before_anything_changes(tmp_path, tiny):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=2)
    with pytest.raises(KeyboardInterrupt):
        train(config, data=data, callbacks=[StopAt(3)])
    run = tmp_path / "run"
    stored = (run / "config.yaml").read_text()
    with pytest.raises(ConfigError, match=r"planned for 4 optimizer steps .* this config plans 8"):
        train(tiny_config(tmp_path, model_dir, max_steps=8, save_steps=2), data=data)
    assert (run / "config.yaml").read_text() == stored and not (run / "results.json").exists()
    train(config, data=data)  # the original command still resumes
    assert json.loads((run / "results.json").read_text())["global_step"] == 4


def test_failed_fresh_run_leaves_no_folder(tmp_path, tiny):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=4, eval_task="")
    with pytest.raises(KeyboardInterrupt):
        train(config, data=data, callbacks=[StopAt(1)])
    assert not (tmp_path / "run").exists()
    # a bad option fails before anything is written
    with pytest.raises(ConfigError, match=r"objective_options"):
        train(tiny_config(tmp_path, model_dir, objective_options="temperature=x"), data=data)
    assert not (tmp_path / "run").exists()


def test_too_few_rows_for_a_contrastive_objective_are_refused(tmp_path, tiny):
    model_dir, data = tiny
    with pytest.raises(
        ConfigError, match=r"^data: 1 training row\(s\); objective 'simcse-unsup' .* at least 2$"
    ):
        train(tiny_config(tmp_path, model_dir), data=data.select([0]))
    with pytest.raises(ConfigError, match=r"^batch_size: objective 'simcse-unsup' .* got 1 x 1 process"):
        train(tiny_config(tmp_path, model_dir, batch_size=1), data=data)
    assert not (tmp_path / "run").exists()


def test_last_batch_of_one_row_is_dropped(tmp_path, tiny, data_root):
    import datasets

    model_dir, _ = tiny
    data = datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 17)})  # 8 + 8 + 1
    run = train(tiny_config(tmp_path, model_dir, max_steps=-1, epochs=1, save_steps=10), data=data)
    results = json.loads((run / "results.json").read_text())
    assert results["global_step"] == 2  # not 3: the one-row batch has nothing to contrast (loss 0)


# ---- one training per folder --------------------------------------------------------------------------
def _hold_lock_in_another_process(folder):
    """A process that takes the run lock and sleeps; returns it once it holds the lock."""
    import subprocess
    import sys

    code = (
        "import sys, time\n"
        "from sentkit.training.run_lock import RunLock\n"
        "lock = RunLock(sys.argv[1]).__enter__()\n"
        "print('locked', flush=True)\n"
        "time.sleep(120)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_second_training_into_a_locked_folder_is_refused_and_a_killed_holder_frees_it(tmp_path, tiny, capsys):
    import signal

    from sentkit.cli import main
    from sentkit.training.run_lock import LOCK_FILE

    model_dir, data = tiny
    run = tmp_path / "run"
    holder = _hold_lock_in_another_process(run)
    try:
        with pytest.raises(ConfigError, match=rf"^output_dir: {run} is in use by another sentkit training"):
            train(tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2), data=data)
        argv = ["train", "--model", model_dir, "--output-dir", str(run), "--data", "unused.txt"]
        assert main([*argv, "--eval-task", "", "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"output_dir: {run} is in use by another sentkit training" in err
        assert [p.name for p in run.iterdir()] == [LOCK_FILE]  # nothing written by the refused runs
    finally:
        holder.send_signal(signal.SIGKILL)  # a crash: the OS drops the lock, the file stays
        holder.wait()
    assert (run / LOCK_FILE).exists()
    done = train(tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2), data=data)
    assert json.loads((done / "results.json").read_text())["global_step"] == 2
    assert not (run / LOCK_FILE).exists()  # released (and removed) when the run ends


def test_lock_is_exclusive_within_one_process_and_released_on_error(tmp_path):
    from sentkit.training.run_lock import RunLock

    folder = tmp_path / "run"
    with RunLock(folder):
        with pytest.raises(ConfigError, match="is in use by another sentkit training"):
            RunLock(folder).__enter__()
    assert not folder.exists()  # absent before, empty after: removed with the lock
    with pytest.raises(RuntimeError), RunLock(folder):
        raise RuntimeError("boom")
    with RunLock(folder):  # free again after an exception
        pass


# ---- resume checks the data ---------------------------------------------------------------------------
def test_a_link_planted_as_the_run_lock_is_refused_and_its_target_never_created(tmp_path):
    """The lock file is opened without following a link: a link named .sentkit.lock pointing elsewhere makes
    the run stop in one line, and the file it names is not created (nor a FIFO opened)."""
    import os

    from sentkit.errors import SentkitError
    from sentkit.training.run_lock import LOCK_FILE, RunLock

    folder = tmp_path / "run"
    folder.mkdir()
    target = tmp_path / "elsewhere" / "victim"
    target.parent.mkdir()
    (folder / LOCK_FILE).symlink_to(target)
    with pytest.raises(SentkitError, match="symbolic link"):
        RunLock(folder).__enter__()
    assert not target.exists()
    assert (folder / LOCK_FILE).is_symlink()
    (folder / LOCK_FILE).unlink()
    os.mkfifo(folder / LOCK_FILE)
    with pytest.raises(SentkitError, match="FIFO|regular file"):
        RunLock(folder).__enter__()


def test_resume_on_changed_data_is_refused_and_data_is_recorded(tmp_path, tiny, data_root):
    from sentkit.cache import sha256_file

    model_dir, _ = tiny
    data = tmp_path / "data.txt"
    data.write_text("\n".join(stsb_sentences(data_root, 16)) + "\n", encoding="utf-8")
    config = tiny_config(tmp_path, model_dir, data=str(data), max_steps=4, save_steps=2)
    with pytest.raises(KeyboardInterrupt):
        train(config, callbacks=[StopAt(3)])
    run = tmp_path / "run"
    original = data.read_bytes()
    first_sha = sha256_file(data)
    data.write_text("\n".join(stsb_sentences(data_root, 16, start=16)) + "\n", encoding="utf-8")
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(ConfigError) as err:
        train(config)
    assert str(err.value) == (
        f"{run}: the run being resumed started on other training data: {data.resolve()} (16 rows, sha256 "
        f"{first_sha[:12]}), now {data.resolve()} (16 rows, sha256 {sha256_file(data)[:12]}); resume on "
        "the same data, or pass --overwrite to start over"
    )
    assert sorted(p.name for p in run.iterdir()) == before
    data.write_bytes(original)
    train(config)  # the same data again: resumes
    results = json.loads((run / "results.json").read_text())
    assert results["resumed_from_step"] == 2
    assert results["data"]["path"] == str(data.resolve()) and results["data"]["sha256"] == first_sha
    assert results["data"]["rows"] == 16 and results["data"]["spec"] == str(data)
