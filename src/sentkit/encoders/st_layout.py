"""A model's sentence-transformers module list (modules.json): read exactly or refused, and written back.

sentkit reproduces Transformer -> Pooling -> Dense ... -> Normalize (st_modules.py) and the model's default
prompt. Any other module, order or setting is refused with one line (`UnsupportedModel`), never dropped:
a module left out gives vectors of the wrong kind, or of the wrong size, with no error. Local folders and
hub names read the same files; a hub name through the local Hugging Face cache (all that is used when
HF_HUB_OFFLINE=1), or the hub when online.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sentkit.encoders.st_modules import ACTIVATIONS, POOLING_MODES, Dense, activation_class
from sentkit.errors import DataFormatError, MissingDataError, UnsupportedModel

MODULES_FILE = "modules.json"
TRANSFORMER_CONFIG = "sentence_bert_config.json"
# older sentence-transformers named the transformer's config after its architecture; it still reads these
LEGACY_TRANSFORMER_CONFIGS = tuple(
    f"sentence_{arch}_config.json"
    for arch in ("roberta", "distilbert", "camembert", "albert", "xlm-roberta", "xlnet")
)
MODEL_CONFIG = "config_sentence_transformers.json"
SUPPORTED = (
    f"Transformer, one Pooling ({', '.join(POOLING_MODES)}), Dense layers "
    f"(activation {', '.join(ACTIVATIONS)}) and Normalize, in that order"
)
# pooling_mode_* flags of sentence-transformers < 6 (still written by sentkit, read by every version)
LEGACY_POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
SENTENCE = "sentence_embedding"  # the feature Dense and Normalize must read and write


class NotInCache(Exception):
    """A hub file the local cache neither holds nor knows to be absent, with the hub offline."""


class ModelFiles:
    """The files of a local folder or of a hub repository, by path relative to its root."""

    def __init__(self, source: str | Path) -> None:
        self.source = str(source)
        path = Path(self.source).expanduser()
        self.folder = path if path.exists() else None  # None: a hub name

    def where(self, relpath: str) -> str:
        """How an error names a file: `<folder or hub name>/<relpath>`."""
        return f"{self.source.rstrip('/')}/{relpath}"

    def find(self, relpath: str) -> Path | None:
        """The local path of `relpath`, or None when the model has no such file.

        Hub files come from the cache; when the cache does not know a file, it is fetched from the hub, or
        NotInCache is raised with HF_HUB_OFFLINE=1.
        """
        if self.folder is not None:
            path = self.folder / relpath
            return path if path.is_file() else None
        from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache
        from huggingface_hub.errors import RemoteEntryNotFoundError

        cached = try_to_load_from_cache(self.source, relpath)
        if isinstance(cached, str):
            return Path(cached)
        if cached is not None:  # the cache records that the hub has no such file
            return None
        if constants.HF_HUB_OFFLINE:
            raise NotInCache(relpath)
        try:
            return Path(hf_hub_download(self.source, relpath))
        except RemoteEntryNotFoundError:
            return None

    def is_cached_hub_model(self) -> bool:
        """A hub name whose transformers files are in the local cache."""
        from huggingface_hub import try_to_load_from_cache

        return self.folder is None and isinstance(try_to_load_from_cache(self.source, "config.json"), str)


@dataclass
class SentenceTransformersLayout:
    """What sentkit reproduces of a sentence-transformers model, read from its own files."""

    transformer_path: str = ""  # the transformers model's folder inside the model ("" = its root)
    pooling: str = "mean"
    include_prompt: bool = True  # False: the prompt's tokens are left out of the pooling
    dense: list[Dense] = field(default_factory=list)
    dense_configs: list[str] = field(default_factory=list)  # each Dense layer's config file, for errors
    normalize: bool = False
    max_length: int | None = None  # None: the tokenizer's limit, capped at the model's positions
    do_lower_case: bool = False
    prefix: str = ""  # the default prompt


def read_layout(files: ModelFiles) -> SentenceTransformersLayout | None:
    """The model's module list, or None for a plain transformers model (no modules.json).

    A hub model whose cache does not say whether it has a modules.json (HF_HUB_OFFLINE=1) loads as a plain
    model, with a warning on stderr.
    """
    try:
        path = files.find(MODULES_FILE)
    except NotInCache:
        if files.is_cached_hub_model():
            print(
                f"sentkit: warning: {files.source}: the local Hugging Face cache does not say whether this "
                f"model has a {MODULES_FILE}; loading it as a plain transformers model ([CLS] pooling). "
                "Download it once with the hub online to use its sentence-transformers modules.",
                file=sys.stderr,
            )
        return None
    if path is None:
        return None
    modules = _read_json(path, files.where(MODULES_FILE))
    if not isinstance(modules, list) or not all(
        isinstance(m, dict) and isinstance(m.get("type"), str) and isinstance(m.get("path", ""), str)
        for m in modules
    ):
        raise DataFormatError(files.where(MODULES_FILE), None, "a JSON list of {type, path} modules")
    _check_model_type(files)
    kinds = []
    for i, module in enumerate(modules):
        kind = _kind(module["type"])
        if kind is None:
            raise UnsupportedModel(
                f"{files.where(MODULES_FILE)}: module {module.get('idx', i)} ({module['type']}) cannot be "
                f"reproduced; sentkit loads {SUPPORTED}"
            )
        kinds.append(kind)
    if not re.fullmatch(r"TPD*N?", "".join(k[0] for k in kinds)):
        raise UnsupportedModel(
            f"{files.where(MODULES_FILE)}: modules {' -> '.join(kinds)} cannot be reproduced; "
            f"sentkit loads {SUPPORTED}"
        )
    layout = SentenceTransformersLayout()
    for kind, module in zip(kinds, modules):
        folder = module.get("path", "").strip("/")
        if kind == "Transformer":
            _read_transformer(files, folder, layout)
        elif kind == "Pooling":
            _read_pooling(files, folder, layout)
        elif kind == "Dense":
            dense = _read_dense(files, folder)
            if layout.dense and layout.dense[-1].out_features != dense.in_features:
                raise DataFormatError(
                    files.where(_join(folder, "config.json")),
                    None,
                    f"in_features {layout.dense[-1].out_features} (the Dense layer before it), "
                    f"got {dense.in_features}",
                )
            layout.dense.append(dense)
            layout.dense_configs.append(_join(folder, "config.json"))
        else:
            _check_features(files, folder, "Normalize")
            layout.normalize = True
    layout.prefix = _default_prompt(files)
    return layout


def _kind(module_type: str) -> str | None:
    """`Transformer`, `Pooling`, `Dense` or `Normalize` for sentence-transformers' own classes (any of their
    import paths across versions), else None (custom code, CNN, LSTM, WordEmbeddings, ...)."""
    if not module_type.startswith("sentence_transformers."):
        return None
    name = module_type.rsplit(".", 1)[-1]
    return name if name in ("Transformer", "Pooling", "Dense", "Normalize") else None


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _read_json(path: Path, where: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise DataFormatError(where, None, f"valid JSON ({err})") from None


def _find(files: ModelFiles, relpath: str) -> Path | None:
    try:
        return files.find(relpath)
    except NotInCache:
        raise MissingDataError(
            files.where(relpath), "not in the local Hugging Face cache and HF_HUB_OFFLINE=1"
        ) from None


def _config(files: ModelFiles, folder: str, name: str = "config.json") -> dict:
    """A module's JSON config ({} when the module has none, as sentence-transformers reads it)."""
    relpath = _join(folder, name)
    path = _find(files, relpath)
    if path is None:
        return {}
    config = _read_json(path, files.where(relpath))
    if not isinstance(config, dict):
        raise DataFormatError(files.where(relpath), None, "a JSON object")
    return config


def _refuse(files: ModelFiles, relpath: str, what: str) -> UnsupportedModel:
    return UnsupportedModel(f"{files.where(relpath)}: {what} cannot be reproduced; sentkit loads {SUPPORTED}")


def _check_model_type(files: ModelFiles) -> None:
    model_type = _config(files, "", MODEL_CONFIG).get("model_type", "SentenceTransformer")
    if model_type != "SentenceTransformer":
        raise _refuse(
            files, MODEL_CONFIG, f"model_type {model_type!r} (not a dense sentence embedding model)"
        )


def _read_transformer(files: ModelFiles, folder: str, layout: SentenceTransformersLayout) -> None:
    name = TRANSFORMER_CONFIG
    config: dict = {}
    for candidate in (TRANSFORMER_CONFIG, *LEGACY_TRANSFORMER_CONFIGS):
        config = _config(files, folder, candidate)
        if config:
            name = candidate
            break
    relpath = _join(folder, name)
    task = config.get("transformer_task", "feature-extraction")
    if task != "feature-extraction":
        raise _refuse(files, relpath, f"Transformer task {task!r}")
    text = {"method": "forward", "method_output_name": "last_hidden_state"}
    modality = config.get("modality_config", {"text": text})
    if (
        modality != {"text": text}
        or config.get("module_output_name", "token_embeddings") != "token_embeddings"
    ):
        raise _refuse(files, relpath, f"Transformer inputs/outputs {modality}")
    for key in ("processing_kwargs", "query_length", "document_length", "query_expansion"):
        if config.get(key):
            raise _refuse(files, relpath, f"Transformer setting {key}={config[key]!r}")
    layout.transformer_path = folder
    layout.do_lower_case = bool(config.get("do_lower_case", False))
    limit = config.get("max_seq_length")
    for key in ("processor_kwargs", "tokenizer_args"):  # sentence-transformers lets these override it
        limit = (config.get(key) or {}).get("model_max_length", limit)
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise DataFormatError(
                files.where(relpath), None, f"max_seq_length a positive integer, got {limit!r}"
            )
        layout.max_length = limit


def _read_pooling(files: ModelFiles, folder: str, layout: SentenceTransformersLayout) -> None:
    relpath = _join(folder, "config.json")
    config = _config(files, folder)
    if "pooling_mode" in config:
        mode = config["pooling_mode"]
        modes = list(mode) if isinstance(mode, list | tuple) else [mode]
    else:  # sentence-transformers < 6: one flag per mode; none set means mean
        modes = [m for key, m in LEGACY_POOLING_FLAGS.items() if config.get(key)] or ["mean"]
    if len(modes) != 1 or modes[0] not in POOLING_MODES:
        raise _refuse(files, relpath, f"pooling mode {' + '.join(map(str, modes))}")
    layout.pooling = modes[0]
    layout.include_prompt = bool(config.get("include_prompt", True))


def _check_features(files: ModelFiles, folder: str, kind: str) -> dict:
    """The module's config, refused unless it maps the sentence vector to itself."""
    config = _config(files, folder)
    for key in ("module_input_name", "module_output_name"):
        if config.get(key, SENTENCE) not in (SENTENCE, None):
            raise _refuse(files, _join(folder, "config.json"), f"{kind} on {config[key]!r}")
    return config


def _read_dense(files: ModelFiles, folder: str) -> Dense:
    relpath = _join(folder, "config.json")
    config = _check_features(files, folder, "Dense")
    if config.get("use_residual"):
        raise _refuse(files, relpath, "Dense with use_residual")
    activation = config.get("activation_function", "torch.nn.modules.activation.Tanh")  # its default
    if not isinstance(activation, str) or activation_class(activation) is None:
        raise _refuse(files, relpath, f"Dense activation {activation!r}")
    try:
        dense = Dense(
            int(config["in_features"]),
            int(config["out_features"]),
            bool(config.get("bias", True)),
            activation,
        )
    except (KeyError, TypeError, ValueError):
        raise DataFormatError(files.where(relpath), None, "in_features and out_features (integers)") from None
    _load_dense_weights(files, folder, dense)
    return dense


def _load_dense_weights(files: ModelFiles, folder: str, dense: Dense) -> None:
    """model.safetensors, else pytorch_model.bin (tensors only: sentkit.encoders.torch_files)."""
    relpath = _join(folder, "model.safetensors")
    path = _find(files, relpath)
    if path is not None:
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        relpath = _join(folder, "pytorch_model.bin")
        path = _find(files, relpath)
        if path is None:
            raise MissingDataError(
                files.where(_join(folder, "model.safetensors")), "the Dense layer's weights"
            )
        from sentkit.encoders.torch_files import load_tensors

        state = load_tensors(path)
    want = {k: tuple(v.shape) for k, v in dense.linear.state_dict().items()}
    got = {k.removeprefix("linear."): tuple(v.shape) for k, v in state.items()}
    if got != want:
        raise DataFormatError(files.where(relpath), None, f"Dense weights {want} (linear.*), got {got}")
    dense.linear.load_state_dict({k.removeprefix("linear."): v for k, v in state.items()})


def _default_prompt(files: ModelFiles) -> str:
    """The prompt sentence-transformers' `encode` prepends by default (`default_prompt_name`), else ""."""
    config = _config(files, "", MODEL_CONFIG)
    name = config.get("default_prompt_name")
    if not name:
        return ""
    prompts = config.get("prompts") or {}
    if name not in prompts:
        raise DataFormatError(
            files.where(MODEL_CONFIG), None, f"default_prompt_name {name!r} among its prompts"
        )
    return str(prompts[name])


def write_layout(
    folder: Path,
    hidden: int,
    pooling: str,
    dense: list[Dense],
    normalize: bool,
    max_length: int,
    prefix: str,
    include_prompt: bool = True,
    do_lower_case: bool = False,
) -> None:
    """modules.json and each module's files, so sentence-transformers (>= 3) and sentkit load the model as it
    encodes: Transformer (the root), Pooling, each Dense (config + model.safetensors), Normalize."""
    from safetensors.torch import save_file

    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]

    def add(kind: str) -> Path:
        idx = len(modules)
        modules.append(
            {
                "idx": idx,
                "name": str(idx),
                "path": f"{idx}_{kind}",
                "type": f"sentence_transformers.models.{kind}",
            }
        )
        (folder / f"{idx}_{kind}").mkdir(exist_ok=True)
        return folder / f"{idx}_{kind}"

    pooling_config = {"word_embedding_dimension": hidden}
    pooling_config.update({key: mode == pooling for key, mode in LEGACY_POOLING_FLAGS.items()})
    pooling_config["include_prompt"] = include_prompt
    (add("Pooling") / "config.json").write_text(json.dumps(pooling_config, indent=2))
    for layer in dense:
        sub = add("Dense")
        (sub / "config.json").write_text(json.dumps(layer.config(), indent=2))
        state = {f"linear.{k}": v.detach().cpu().contiguous() for k, v in layer.linear.state_dict().items()}
        save_file(state, str(sub / "model.safetensors"))
    if normalize:
        add("Normalize")
    (folder / MODULES_FILE).write_text(json.dumps(modules, indent=2))
    (folder / TRANSFORMER_CONFIG).write_text(
        json.dumps({"max_seq_length": max_length, "do_lower_case": do_lower_case}, indent=2)
    )
    prompts = {"query": prefix} if prefix else {}
    (folder / MODEL_CONFIG).write_text(
        json.dumps(
            {
                "prompts": prompts,
                "default_prompt_name": "query" if prefix else None,
                "similarity_fn_name": "cosine",
            },
            indent=2,
        )
    )
