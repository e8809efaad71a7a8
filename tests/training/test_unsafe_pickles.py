"""A torch-pickled file that holds more than tensors (a class reference: a pickle that could run code) is
refused in one line naming the file, exit 2, and never loaded another way: a checkpoint's pytorch_model.bin,
optimizer.pt and rng_state.pth, a model folder's pytorch_model.bin, a Dense layer's weights."""

from __future__ import annotations

import pytest
import torch

from sentkit.cli import main
from sentkit.errors import DataFormatError
from sentkit.training import latest_checkpoint
from test_trainer import save_tiny_model, stsb_sentences


class Smuggled:
    """Stands for a payload: loading the pickle for real would call `__setstate__`."""

    loaded = False

    def __setstate__(self, state):
        Smuggled.loaded = True


def smuggle(path) -> None:
    """A torch.save file whose pickle references this test's class (nothing a tensors-only load allows)."""
    path.unlink(missing_ok=True)
    torch.save({"state": {}, "x": Smuggled(), "weight": torch.zeros(2)}, path)


def assert_refused(err: str, path) -> None:
    assert err.count("\n") == 1, err
    assert err == (
        f"sentkit: error: {path}: holds Python objects besides tensors (a pickle that could run code), so it is "
        "not loaded\n"
    )
    assert "weights_only" not in err and "Traceback" not in err
    assert not Smuggled.loaded


@pytest.fixture
def interrupted_run(tmp_path, data_root):
    """A run folder stopped after its checkpoint-2 (as Ctrl-C leaves it), and the argv that resumes it."""
    tmp = tmp_path
    model_dir = save_tiny_model(tmp / "tiny")
    data = tmp / "data.txt"
    data.write_text("\n".join(stsb_sentences(data_root, 32)) + "\n", encoding="utf-8")
    out = tmp / "run"
    argv = ["train", "--model", model_dir, "--data", str(data), "--output-dir", str(out), "--batch-size", "8"]
    argv += ["--max-steps", "2", "--save-steps", "2", "--eval-task", "", "--no-progress", "--lr", "1e-3"]
    assert main(argv) == 0
    (out / "results.json").unlink()  # as if stopped right after checkpoint-2: the same command resumes it
    return out, argv


@pytest.mark.parametrize("name", ["pytorch_model.bin", "optimizer.pt", "rng_state.pth"])
def test_a_checkpoint_file_with_a_class_is_refused_naming_it(name, interrupted_run, capsys):
    run, argv = interrupted_run
    checkpoint = latest_checkpoint(run)
    assert checkpoint.name == "checkpoint-2"
    if name == "pytorch_model.bin":  # a checkpoint in the .bin layout
        (checkpoint / "model.safetensors").unlink()
    smuggle(checkpoint / name)
    capsys.readouterr()
    assert main(argv) == 2
    assert_refused(capsys.readouterr().err, checkpoint / name)
    assert (checkpoint / name).is_file() and not (run / "results.json").exists()  # nothing deleted or trained


def test_a_model_folder_whose_weights_hold_a_class_is_refused(tmp_path, capsys):
    model_dir = tmp_path / "model"
    save_tiny_model(model_dir)
    (model_dir / "model.safetensors").unlink()
    smuggle(model_dir / "pytorch_model.bin")
    text = tmp_path / "one.txt"
    text.write_text("a sentence\n", encoding="utf-8")
    capsys.readouterr()
    code = main(
        ["encode", "--model", str(model_dir), "--input", str(text), "--output", str(tmp_path / "v.npy")]
    )
    assert code == 2
    assert_refused(capsys.readouterr().err, model_dir / "pytorch_model.bin")


def test_load_tensors_allows_tensors_and_refuses_a_raw_global(tmp_path):
    from sentkit.encoders.torch_files import load_tensors

    good = tmp_path / "good.pt"
    torch.save({"w": torch.ones(3), "step": 2}, good)
    assert load_tensors(good, mmap=True)["step"] == 2
    # a raw pickle naming os.system (protocol 2: PROTO, GLOBAL 'posix system', ...): never run
    raw = tmp_path / "raw.pt"
    raw.write_bytes(b"\x80\x02cposix\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03.")
    with pytest.raises(DataFormatError) as err:
        load_tensors(raw)
    assert str(err.value).startswith(f"{raw}: ") and "weights_only" not in str(err.value)
    legacy = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    assert load_tensors(legacy, mmap=True)["w"].tolist() == [1.0, 1.0]
