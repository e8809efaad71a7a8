"""The model fingerprint covers every setting the loaded pipeline reads: each edit of a saved model's files
changes it, and a sharded encode stopped before the edit refuses to resume after it (sentence-transformers
layouts saved by sentkit and by sentence-transformers, and sentkit's ONNX fp32 and int8 exports)."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from conftest import make_tiny_encoder
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.manifest import ManifestMismatch
from sentkit.corpus.shards import ShardSettings
from sentkit.encoders import load_encoder
from sentkit.encoders.fingerprint import model_fingerprint
from sentkit.encoders.st_modules import Dense
from sentkit.encoders.transformer import TransformerEncoder

LINES = [f"Sentence {i} with Accents: café {'word ' * (i % 5)}" for i in range(12)]


def edit_json(path, **changes):
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def drop_normalize(folder):
    modules = json.loads((folder / "modules.json").read_text())
    (folder / "modules.json").write_text(
        json.dumps([m for m in modules if not m["type"].endswith("Normalize")])
    )


def edit_dense_weights(folder):
    from safetensors.torch import load_file, save_file

    path = folder / "2_Dense" / "model.safetensors"
    state = load_file(str(path))
    state["linear.bias"] = state["linear.bias"] + 0.5
    save_file(state, str(path))


def edit_tokenizer_json(folder, change):
    path = folder / "tokenizer.json"
    spec = json.loads(path.read_text())
    change(spec)
    path.write_text(json.dumps(spec))


def swap_vocab_ids(spec):
    vocab = spec["model"]["vocab"]  # WordPiece: token -> id
    vocab["sentence"], vocab["word"] = vocab["word"], vocab["sentence"]


# name -> edit of a folder saved by sentkit (TransformerEncoder.save: sentence-transformers layout with
# mean pooling, a Tanh Dense layer, Normalize, the prompt "query: " left out of the pooling, 64 tokens)
TORCH_EDITS = {
    "include_prompt": lambda f: edit_json(f / "1_Pooling" / "config.json", include_prompt=True),
    "pooling mode flags": lambda f: edit_json(
        f / "1_Pooling" / "config.json", pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True
    ),
    "pooling_mode": lambda f: edit_json(f / "1_Pooling" / "config.json", pooling_mode="cls"),
    "Dense activation": lambda f: edit_json(
        f / "2_Dense" / "config.json", activation_function="torch.nn.modules.linear.Identity"
    ),
    "Dense weights": edit_dense_weights,
    "Normalize": drop_normalize,
    "prompt text": lambda f: edit_json(
        f / "config_sentence_transformers.json", prompts={"query": "passage: "}
    ),
    "default prompt": lambda f: edit_json(f / "config_sentence_transformers.json", default_prompt_name=None),
    "do_lower_case (sentence_bert_config)": lambda f: edit_json(
        f / "sentence_bert_config.json", do_lower_case=True
    ),
    "max_seq_length": lambda f: edit_json(f / "sentence_bert_config.json", max_seq_length=32),
    # transformers 5 rebuilds a BERT tokenizer's normaliser from tokenizer_config.json (an edit of the one in
    # tokenizer.json changes nothing, and the fingerprint stays); its vocabulary comes from tokenizer.json
    "tokenizer.json vocabulary": lambda f: edit_tokenizer_json(f, swap_vocab_ids),
    "strip_accents": lambda f: edit_json(f / "tokenizer_config.json", strip_accents=False),
    "do_lower_case (tokenizer_config)": lambda f: edit_json(f / "tokenizer_config.json", do_lower_case=False),
    "special token": lambda f: edit_json(f / "tokenizer_config.json", cls_token="[SEP]"),
    "model_max_length": lambda f: edit_json(f / "tokenizer_config.json", model_max_length=48),
    "model config": lambda f: edit_json(f / "config.json", layer_norm_eps=1e-3),
}


@pytest.fixture(scope="module")
def sentkit_model(tmp_path_factory):
    base = make_tiny_encoder(pooling="mean")
    encoder = TransformerEncoder(
        base.model,
        base.tokenizer,
        pooling="mean",
        max_length=64,
        prefix="query: ",
        normalize=True,
        dense=[Dense(32, 16, True, "Tanh")],
        include_prompt=False,
    )
    return encoder.save(tmp_path_factory.mktemp("models") / "sentkit")


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    past = time.time_ns() - 60 * 10**9  # settled: a rerun trusts its identity
    os.utime(path, ns=(past, past))
    return path


def _request(model, corpus, out):
    settings = ShardSettings(shard_size=4)
    return EncodeRequest(
        input=str(corpus), output=str(out), model=str(model), settings=settings, engine="local"
    )


def _stop_after_first_shard(work):
    if work.chunk == 1:
        raise KeyboardInterrupt


def _stopped_run(model, corpus, out) -> str:
    """A run into `out` stopped after its first shard; returns the fingerprint it recorded."""
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(
            _request(model, corpus, out), log=lambda line: None, before_shard=_stop_after_first_shard
        )
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["shards"]) == 1
    return manifest["model"]["fingerprint"]


def _assert_resume_refused(model, corpus, out, recorded):
    with pytest.raises(ManifestMismatch, match=r"written by model .*; encode into a new folder") as err:
        encode_corpus(_request(model, corpus, out), log=lambda line: None)
    assert recorded in str(err.value) and "\n" not in str(err.value)
    assert len(json.loads((out / "manifest.json").read_text())["shards"]) == 1  # nothing added


def test_an_unedited_model_resumes(sentkit_model, corpus, tmp_path):
    """The control: loading the same folder again, from another working directory, gives the same fingerprint."""
    out = tmp_path / "out"
    recorded = _stopped_run(sentkit_model, corpus, out)
    copy = shutil.copytree(sentkit_model, tmp_path / "elsewhere" / "model")
    assert model_fingerprint(load_encoder(copy)) == recorded
    summary = encode_corpus(_request(sentkit_model, corpus, out), log=lambda line: None)
    assert summary["written"] == 2 and summary["rows"] == len(LINES)


@pytest.mark.parametrize("edit", list(TORCH_EDITS))
def test_each_setting_of_a_saved_model_refuses_the_resume(edit, sentkit_model, corpus, tmp_path):
    model = shutil.copytree(sentkit_model, tmp_path / "model")
    out = tmp_path / "out"
    recorded = _stopped_run(model, corpus, out)
    TORCH_EDITS[edit](model)
    assert model_fingerprint(load_encoder(model)) != recorded  # the edited folder still loads
    _assert_resume_refused(model, corpus, out, recorded)


def _pooling_config(folder):
    return next(folder.glob("1_*")) / "config.json"


ST_EDITS = {
    "pooling_mode": lambda f: edit_json(_pooling_config(f), pooling_mode="lasttoken"),
    "include_prompt": lambda f: edit_json(_pooling_config(f), include_prompt=True),
    "prompt": lambda f: edit_json(f / "config_sentence_transformers.json", prompts={"query": "q: "}),
}


@pytest.fixture(scope="module")
def st_model(sentkit_model, tmp_path_factory):
    """A folder saved by sentence-transformers itself (its Pooling writes `pooling_mode`, not the flags)."""
    st = pytest.importorskip("sentence_transformers")
    try:
        from sentence_transformers.sentence_transformer import modules
    except ImportError:
        from sentence_transformers import models as modules
    root = tmp_path_factory.mktemp("st")
    base = load_encoder(sentkit_model)
    base.model.save_pretrained(root / "hf")
    base.tokenizer.save_pretrained(root / "hf")
    built = st.SentenceTransformer(
        modules=[
            modules.Transformer(str(root / "hf"), max_seq_length=64),
            modules.Pooling(32, pooling_mode="weightedmean", include_prompt=False),
            modules.Normalize(),
        ],
        device="cpu",
        prompts={"query": "query: "},
        default_prompt_name="query",
    )
    built.save(str(root / "st"))
    return root / "st"


@pytest.mark.parametrize("edit", list(ST_EDITS))
def test_settings_of_a_sentence_transformers_save_refuse_the_resume(edit, st_model, corpus, tmp_path):
    model = shutil.copytree(st_model, tmp_path / "model")
    out = tmp_path / "out"
    recorded = _stopped_run(model, corpus, out)
    ST_EDITS[edit](model)
    _assert_resume_refused(model, corpus, out, recorded)


def _meta(**changes):
    return lambda f: edit_json(f / "sentkit_onnx.json", **changes)


def _other_graph(folder):
    """The other variant's graph under this folder's name, its recorded sha256 left as it was."""
    other = folder.parent / ("int8" if folder.name == "onnx" else "onnx") / "model.onnx"
    shutil.copy2(other, folder / "model.onnx")


ONNX_EDITS = {
    "prefix": _meta(prefix="passage: "),
    "do_lower_case": _meta(do_lower_case=True),
    "max_length": _meta(max_length=32),
    "include_prompt": _meta(include_prompt=True),
    "graph file": _other_graph,
    "tokenizer.json vocabulary": lambda f: edit_tokenizer_json(f, swap_vocab_ids),
    "special token": lambda f: edit_json(f / "tokenizer_config.json", cls_token="[SEP]"),
    "model_max_length": lambda f: edit_json(f / "tokenizer_config.json", model_max_length=48),
}


@pytest.fixture(scope="module")
def exports(sentkit_model, tmp_path_factory):
    """The sentkit model exported as fp32 (`onnx/`) and int8 (`int8/`) ONNX folders."""
    pytest.importorskip("onnxruntime")
    from sentkit.encoders.onnx.export import export_onnx

    root = tmp_path_factory.mktemp("exports")
    encoder = load_encoder(sentkit_model)
    export_onnx(encoder, root / "onnx")
    export_onnx(encoder, root / "int8", int8=True)
    return root


@pytest.mark.parametrize("variant", ["onnx", "int8"])
@pytest.mark.parametrize("edit", list(ONNX_EDITS))
def test_each_setting_of_an_onnx_export_refuses_the_resume(edit, variant, exports, corpus, tmp_path):
    model = shutil.copytree(exports, tmp_path / "exports") / variant
    out = tmp_path / "out"
    recorded = _stopped_run(model, corpus, out)
    assert recorded.startswith("onnx:")
    ONNX_EDITS[edit](model)
    _assert_resume_refused(model, corpus, out, recorded)
