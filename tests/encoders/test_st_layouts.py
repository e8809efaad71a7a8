"""Models in sentence-transformers layout load with exactly their own modules: sentkit's vectors equal
`SentenceTransformer(folder).encode` for every supported layout (torch and ONNX), for a hub name served
from the local cache too; modules it cannot reproduce are refused with one line."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from conftest import minilm_dir
from sentkit.cli import main
from sentkit.encoders import load_encoder
from sentkit.encoders.st_modules import POOLING_MODES, pool
from sentkit.encoders.transformer import TransformerEncoder

# lengths vary so batches pad; one row is empty, one is cut at the 64-token window
SENTENCES = [
    "A man is playing a guitar.",
    "antidisestablishmentarianism xylophonists",
    "Hi.",
    "",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Électricité, naïveté & coöperation!",
    "word " * 100,
]
HIDDEN = 32


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))  # (n,)


def assert_same_vectors(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.shape == theirs.shape and ours.dtype == np.float32
    assert cosines(ours, theirs).min() >= 0.9999
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    """A 2-layer, 32-dim random BERT with the MiniLM WordPiece tokenizer, saved as a plain transformers model."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * HIDDEN,
        max_position_embeddings=128,
    )
    folder = tmp_path_factory.mktemp("tiny") / "hf"
    BertModel(config, add_pooling_layer=False).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def st_module_classes():
    """sentence-transformers' module classes (moved out of `sentence_transformers.models` in version 6)."""
    try:
        from sentence_transformers.sentence_transformer import modules
    except ImportError:
        from sentence_transformers import models as modules
    return modules


def build_st(tiny_hf, folder, mode="cls", dense=(), normalize=False, prompt=None, include_prompt=True):
    """Save a model with sentence-transformers' own module classes; `dense`: (out_features, activation) pairs."""
    from sentence_transformers import SentenceTransformer

    models = st_module_classes()
    torch.manual_seed(1)
    modules = [
        models.Transformer(str(tiny_hf), max_seq_length=64),
        models.Pooling(HIDDEN, pooling_mode=mode, include_prompt=include_prompt),
    ]
    width = HIDDEN
    for out, activation in dense:
        modules.append(models.Dense(width, out, activation_function=activation))
        width = out
    if normalize:
        modules.append(models.Normalize())
    prompts = {"query": prompt} if prompt else None
    model = SentenceTransformer(
        modules=modules, device="cpu", prompts=prompts, default_prompt_name="query" if prompt else None
    )
    model.save(str(folder))
    return folder


def st_vectors(folder) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(SENTENCES, batch_size=3)


LAYOUTS = {  # name -> build_st arguments
    **{mode: {"mode": mode} for mode in POOLING_MODES},
    "labse-like": {"mode": "cls", "dense": [(HIDDEN, torch.nn.Tanh())], "normalize": True},
    "mean-dense-identity": {"mode": "mean", "dense": [(16, torch.nn.Identity())]},
    "two-dense": {"mode": "max", "dense": [(24, torch.nn.ReLU()), (8, torch.nn.GELU())]},
    "prompt": {"mode": "mean", "normalize": True, "prompt": "query: "},
    "prompt-excluded": {"mode": "weightedmean", "prompt": "search query: ", "include_prompt": False},
    "cls-prompt-excluded": {"mode": "cls", "prompt": "search query: ", "include_prompt": False},
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_torch_vectors_equal_sentence_transformers(layout, tiny_hf, tmp_path):
    folder = build_st(tiny_hf, tmp_path / layout, **LAYOUTS[layout])
    encoder = load_encoder(folder)
    assert isinstance(encoder, TransformerEncoder) and encoder.max_length == 64
    ours = encoder.encode(SENTENCES, batch_size=3)
    assert_same_vectors(ours, st_vectors(folder))
    want_dim = LAYOUTS[layout].get("dense", [(HIDDEN, None)])[-1][0]
    assert encoder.dim == ours.shape[1] == want_dim
    assert encoder.truncated == 1  # the 100-word row


def test_transformer_in_a_subfolder(tiny_hf, tmp_path):
    """Older saves keep the transformer in `0_Transformer/` (modules.json names the folder)."""
    folder = build_st(tiny_hf, tmp_path / "model", **LAYOUTS["labse-like"])
    sub = folder / "0_Transformer"
    sub.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).rename(sub / name)
    (folder / "sentence_bert_config.json").rename(sub / "sentence_bert_config.json")
    modules = json.loads((folder / "modules.json").read_text())
    modules[0]["path"] = "0_Transformer"
    (folder / "modules.json").write_text(json.dumps(modules))
    assert_same_vectors(load_encoder(folder).encode(SENTENCES, batch_size=3), st_vectors(folder))


def test_legacy_do_lower_case_lowercases_like_sentence_transformers(tiny_hf, tmp_path):
    """`do_lower_case: true` in sentence_bert_config.json, on a tokenizer that keeps case; kept on save
    and in the ONNX export."""
    pytest.importorskip("onnxruntime")
    from sentkit.encoders.onnx.encoder import OnnxEncoder

    folder = build_st(tiny_hf, tmp_path / "model", mode="mean")
    edit_json(folder / "tokenizer_config.json", do_lower_case=False)  # transformers builds a cased normaliser
    cased = load_encoder(folder).encode(SENTENCES)
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 64, "do_lower_case": True})
    )
    lowered = load_encoder(folder)
    want = st_vectors(folder)
    assert_same_vectors(lowered.encode(SENTENCES, batch_size=3), want)
    assert cosines(cased, want).min() < 0.99  # "A man ..." differs when case is kept
    resaved = lowered.save(tmp_path / "resaved")
    assert_same_vectors(load_encoder(resaved).encode(SENTENCES), want)
    assert_same_vectors(st_vectors(resaved), want)
    assert main(["export", "--model", str(resaved), "--out", str(tmp_path / "onnx")]) == 0
    assert_same_vectors(OnnxEncoder(tmp_path / "onnx", threads=1).encode(SENTENCES), want)


def test_plain_and_layout_cases_differ(tiny_hf, tmp_path):
    """The parity test above can fail: max pooling, Dense and Normalize each change the vectors."""
    plain = load_encoder(tiny_hf).encode(SENTENCES)  # no modules.json: [CLS], not normalised
    labse = load_encoder(build_st(tiny_hf, tmp_path / "labse", **LAYOUTS["labse-like"])).encode(SENTENCES)
    maxed = load_encoder(build_st(tiny_hf, tmp_path / "max", mode="max")).encode(SENTENCES)
    assert cosines(plain, maxed).max() < 0.999
    assert cosines(plain, labse).max() < 0.999
    np.testing.assert_allclose(np.linalg.norm(labse, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("mode", POOLING_MODES)
@pytest.mark.parametrize("prompt_length", [0, 3])
def test_pooling_formula_equals_sentence_transformers_pooling(mode, prompt_length):
    """On random token states with right and left padding, `pool` equals sentence-transformers' Pooling."""
    models = st_module_classes()
    torch.manual_seed(2)
    hidden = torch.randn(4, 7, 5)  # (batch, seq, hidden)
    right = torch.tensor([[1] * 7, [1] * 5 + [0] * 2, [1] * 4 + [0] * 3, [1] * 6 + [0]])
    left = right.flip(1)  # the same lengths padded on the left
    theirs_pool = models.Pooling(5, pooling_mode=mode, include_prompt=prompt_length == 0)
    for mask in (right, left):
        features = {"token_embeddings": hidden, "attention_mask": mask}
        if prompt_length:
            features["prompt_length"] = prompt_length
        theirs = theirs_pool(features)["sentence_embedding"]
        torch.testing.assert_close(pool(hidden, mask, mode, prompt_length), theirs, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("layout", ["labse-like", "max", "mean-dense-identity"])
def test_onnx_export_vectors_equal_sentence_transformers(layout, tiny_hf, tmp_path):
    pytest.importorskip("onnxruntime")
    from sentkit.encoders.onnx.contract import META_FILE
    from sentkit.encoders.onnx.encoder import OnnxEncoder

    folder = build_st(tiny_hf, tmp_path / layout, **LAYOUTS[layout])
    out = tmp_path / "onnx"
    assert main(["export", "--model", str(folder), "--out", str(out)]) == 0
    onnx = OnnxEncoder(out, threads=1)
    want = st_vectors(folder)
    assert_same_vectors(onnx.encode(SENTENCES, batch_size=3), want)
    meta = json.loads((out / META_FILE).read_text())
    assert meta["pooling"] == LAYOUTS[layout]["mode"] and meta["dim"] == want.shape[1]
    assert len(meta["dense"]) == len(LAYOUTS[layout].get("dense", []))
    if layout == "labse-like":  # int8: close, not equal
        assert main(["export", "--model", str(folder), "--out", str(tmp_path / "int8"), "--int8"]) == 0
        got = OnnxEncoder(tmp_path / "int8", threads=1).encode(SENTENCES)
        assert got.shape == want.shape and cosines(got, want).min() >= 0.99


def hub_cache(tmp_path, monkeypatch, repo: str, folder) -> None:
    """`folder` as the cached snapshot of hub model `repo` in a fresh HF_HUB_CACHE."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo_dir = cache / f"models--{repo.replace('/', '--')}"
    shutil.copytree(folder, repo_dir / "snapshots" / commit)
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))  # read once at import
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def test_hub_name_from_the_local_cache_loads_its_modules(tiny_hf, tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer

    folder = build_st(tiny_hf, tmp_path / "labse", **LAYOUTS["labse-like"])
    hub_cache(tmp_path, monkeypatch, "sentkit-test/tiny-labse", folder)
    encoder = load_encoder("sentkit-test/tiny-labse")
    assert encoder.name == "tiny-labse" and len(encoder.dense) == 1 and encoder.normalize
    theirs = SentenceTransformer("sentkit-test/tiny-labse", device="cpu", local_files_only=True)
    assert_same_vectors(encoder.encode(SENTENCES, batch_size=3), theirs.encode(SENTENCES, batch_size=3))


def test_plain_hub_model_keeps_cls_and_says_when_the_cache_cannot_tell(
    tiny_hf, tmp_path, monkeypatch, capsys
):
    hub_cache(tmp_path, monkeypatch, "sentkit-test/plain", tiny_hf)
    repo_dir = tmp_path / "hub" / "models--sentkit-test--plain"
    want = load_encoder(tiny_hf).encode(SENTENCES)
    unknown = load_encoder("sentkit-test/plain")
    assert "does not say whether this model has a modules.json" in capsys.readouterr().err
    np.testing.assert_allclose(unknown.encode(SENTENCES), want, atol=1e-6)
    # the hub once answered that the file does not exist: a plain model, no warning
    marker = repo_dir / ".no_exist" / (repo_dir / "refs" / "main").read_text() / "modules.json"
    marker.parent.mkdir(parents=True)
    marker.touch()
    known = load_encoder("sentkit-test/plain")
    assert capsys.readouterr().err == ""
    assert known.pooling == "cls" and not known.normalize and not len(known.dense)


def edit_json(path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


REFUSALS = {  # name -> (edit of a LaBSE-like folder, what the error line must say)
    "custom module": (
        lambda f: _set_module(f, 2, "my_package.modules.FancyHead"),
        "module 2 (my_package.modules.FancyHead) cannot be reproduced",
    ),
    "LSTM": (
        lambda f: _set_module(f, 1, "sentence_transformers.models.LSTM"),
        "module 1 (sentence_transformers.models.LSTM) cannot be reproduced",
    ),
    "two pooling modes": (
        lambda f: edit_json(f / "1_Pooling" / "config.json", pooling_mode=["cls", "mean"]),
        "pooling mode cls + mean cannot be reproduced",
    ),
    "unknown pooling mode": (
        lambda f: edit_json(f / "1_Pooling" / "config.json", pooling_mode="median"),
        "pooling mode median cannot be reproduced",
    ),
    "unknown activation": (
        lambda f: edit_json(f / "2_Dense" / "config.json", activation_function="my_package.Swish"),
        "Dense activation 'my_package.Swish' cannot be reproduced",
    ),
    "order": (
        lambda f: _swap_modules(f, 2, 3),
        "modules Transformer -> Pooling -> Normalize -> Dense cannot be reproduced",
    ),
}


def _set_module(folder, idx: int, kind: str) -> None:
    modules = json.loads((folder / "modules.json").read_text())
    modules[idx]["type"] = kind
    (folder / "modules.json").write_text(json.dumps(modules))


def _swap_modules(folder, i: int, j: int) -> None:
    modules = json.loads((folder / "modules.json").read_text())
    modules[i], modules[j] = modules[j], modules[i]
    (folder / "modules.json").write_text(json.dumps(modules))


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_module_sentkit_cannot_reproduce_is_refused_in_one_line(case, tiny_hf, tmp_path, capsys):
    folder = build_st(tiny_hf, tmp_path / "model", **LAYOUTS["labse-like"])
    edit, says = REFUSALS[case]
    edit(folder)
    (tmp_path / "in.txt").write_text("a sentence\n")
    out = tmp_path / "v.npy"
    capsys.readouterr()  # building the model printed progress bars
    code = main(["encode", "--model", str(folder), "--input", str(tmp_path / "in.txt"), "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"sentkit: error: {folder}/") and says in err
    assert "sentkit loads Transformer, one Pooling (cls, mean, max" in err
    assert not out.exists()


def test_trained_model_keeps_its_dense_and_normalize_on_save(tiny_hf, tmp_path):
    """Training goes through the Dense layer (it is part of the model); the saved folder keeps it, and
    sentence-transformers loads the trained model as sentkit encodes it."""
    from sentkit.training.run import trainable_encoder

    folder = build_st(tiny_hf, tmp_path / "labse", **LAYOUTS["labse-like"])
    encoder = trainable_encoder(str(folder), "auto")
    assert encoder.pooling == "cls_mlp" and len(encoder.dense) == 1 and encoder.normalize
    before = encoder.dense[0].linear.weight.detach().clone()
    encoder.train()
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.5)
    vectors = encoder(encoder.tokenize(SENTENCES[:3]))  # (3, 32): through Dense, the MLP head, Normalize
    loss = (vectors[0] * vectors[1]).sum()
    loss.backward()
    assert encoder.dense[0].linear.weight.grad.abs().sum() > 0
    optimizer.step()
    assert not torch.equal(encoder.dense[0].linear.weight, before)
    expected = encoder.encode(SENTENCES)
    saved = encoder.save(tmp_path / "trained")
    modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((saved / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling", "Dense", "Normalize"]
    reloaded = load_encoder(saved)
    torch.testing.assert_close(reloaded.dense[0].linear.weight, encoder.dense[0].linear.weight)
    assert reloaded.mlp is None  # the training-only head is not saved
    assert_same_vectors(reloaded.encode(SENTENCES), expected)
    assert_same_vectors(st_vectors(saved), expected)


def test_nan_weights_encode_exits_2_in_one_line_and_writes_nothing(tiny_hf, tmp_path, capsys):
    from transformers import BertModel

    model = BertModel.from_pretrained(tiny_hf)
    with torch.no_grad():
        model.embeddings.word_embeddings.weight.fill_(float("nan"))
    folder = tmp_path / "nan-model"
    shutil.copytree(tiny_hf, folder)
    model.save_pretrained(folder)
    (tmp_path / "in.txt").write_text("one\ntwo\n")
    out = tmp_path / "v.npy"
    capsys.readouterr()
    code = main(["encode", "--model", str(folder), "--input", str(tmp_path / "in.txt"), "--output", str(out)])
    err = capsys.readouterr().err.replace("\r", "\n")  # the encode progress bar comes first
    assert code == 2 and [line for line in err.splitlines() if "sentkit" in line] == [
        "sentkit: error: model 'nan-model' produced non-finite vectors (NaN or Infinity) for 2 of 2 "
        "sentences; are its weights NaN?"
    ], err
    assert not out.exists()
