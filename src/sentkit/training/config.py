"""`TrainConfig`: every `sentkit train` option, checked where it is parsed (YAML, flags, Python), and
`StagedConfig`: a list of partial configs run one after another, each starting from the previous best model."""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentkit.errors import ConfigError, MissingDataError

# Fields that may change between an interrupted run and the command that resumes it. `max_steps` and
# `epochs` may change only while the planned number of optimizer steps stays the same (the learning-rate
# schedule is built for that number; the trainer checks it once the data is known). `lr` and
# `max_grad_norm` may change so a diverged run can go on from its last checkpoint more gently: the
# schedule continues from that step, scaled to the new peak rate.
RESUMABLE_CHANGES = frozenset(
    {"max_steps", "epochs", "eval_steps", "save_steps", "save_total_limit", "logging_steps", "test_tasks"}
    | {"num_workers", "progress", "overwrite", "data_root", "lr", "max_grad_norm"}
)
# of those, the ones that make a finished run another run (its schedule is spent)
TRAINING_CHANGES = frozenset({"max_steps", "epochs", "lr", "max_grad_norm"})
POOLINGS = ("auto", "cls", "cls_mlp", "mean")


# ---- value checks ------------------------------------------------------------------------------------
# the objectives' softmax-temperature bound (sentkit.objectives.options.TEMPERATURE_MIN, which gives the float32
# reasoning), repeated so that reading a config does not import torch; tests/training/test_temperature.py
# checks the two agree
TEMPERATURE_MIN = 1e-19


def _positive(x: float) -> bool:
    return x > 0


def _non_negative(x: float) -> bool:
    return x >= 0


_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "positive": (_positive, "a positive {kind}"),
    "non_negative": (_non_negative, "a {kind} >= 0"),
    "steps": (lambda x: x == -1 or x > 0, "a positive integer, or -1 to train for `epochs`"),
    "ratio": (lambda x: 0 <= x < 1, "a number in [0, 1)"),
    "temperature": (lambda x: x >= TEMPERATURE_MIN, f"a number >= {TEMPERATURE_MIN:g}"),
    "seed": (lambda x: 0 <= x < 2**32, "an integer in [0, 2**32)"),
    "pooling": (lambda x: x in POOLINGS, "one of " + ", ".join(POOLINGS)),
    "nonempty": (lambda x: bool(x.strip()), "a non-empty string"),
}
_KIND_WORDS = {int: "integer", float: "number", str: "string", bool: "boolean (true/false)"}


def _opt(default: Any, help: str, check: str | None = None) -> Any:  # noqa: A002 - `help` is the argparse word
    return field(default=default, metadata={"help": help, "check": check})


def field_kind(f: dataclasses.Field) -> tuple[type, bool]:
    """(value type, None allowed) of a TrainConfig field, from its annotation (`float | None` -> float, True)."""
    text = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    names = [part.strip() for part in text.split("|")]
    kind = {"int": int, "float": float, "str": str, "bool": bool}[names[0]]
    return kind, "None" in names


def expected_text(f: dataclasses.Field) -> str:
    """What a field takes, in words: 'a positive integer', 'a number in [0, 1)', ..."""
    kind, nullable = field_kind(f)
    check = f.metadata.get("check")
    words = _CHECKS[check][1].format(kind=_KIND_WORDS[kind]) if check else "a " + _KIND_WORDS[kind]
    if not words.startswith(("a ", "an ", "one of")):
        words = "a " + words
    return words + (" or empty (null)" if nullable else "")


def checked_value(f: dataclasses.Field, value: Any, where: str) -> Any:
    """`value` converted to the field's type (int -> float for float fields), or a one-line ConfigError."""
    kind, nullable = field_kind(f)
    if value is None and nullable:
        return None
    given, ok = value, False
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is float:
        if isinstance(value, str):
            # YAML 1.1 (PyYAML) reads `3e-5` (no dot) as a string: accept what parses as a number
            try:
                if re.fullmatch(r"\s*[-+]?[\d.]+(e[-+]?\d+)?\s*", value, re.I):
                    value = given = float(value)
            except ValueError:
                pass
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        value = float(value) if ok else value
    elif kind is str:
        ok = isinstance(value, str)
    check = f.metadata.get("check")
    if ok and check:
        ok = _CHECKS[check][0](value)
    if not ok:
        raise ConfigError(f"{where}: expected {expected_text(f)}, got {given!r}")
    return value


@dataclass
class TrainConfig:
    """Every `sentkit train` flag; defaults are unsupervised SimCSE's (Gao et al., 2021, sec. 3 + appendix A)."""

    model: str = _opt(
        "minilm-en",
        "base encoder: short name (minilm-en, e5-small-m), local directory or hub name",
        "nonempty",
    )
    objective: str = _opt("simcse-unsup", "registered objective (simcse-unsup, simcse-sup, ...)", "nonempty")
    data: str = _opt("", ".txt (one sentence a line) or .csv/.tsv/.jsonl with anchor[,positive[,negative]]")
    output_dir: str = _opt(
        "runs/simcse", "run directory: config, metrics.jsonl, checkpoints, best/, results.json", "nonempty"
    )
    pooling: str = _opt(
        "auto",
        "auto (cls -> cls_mlp, SimCSE's MLP over [CLS] in training only; else the model's) | cls | cls_mlp | mean",
        "pooling",
    )
    max_length: int = _opt(
        32, "max tokens per training sentence (SimCSE: 32); evaluation keeps the model's own", "positive"
    )
    batch_size: int = _opt(
        64, "sentences per process per step (SimCSE unsup: 64); DDP multiplies the negatives", "positive"
    )
    lr: float = _opt(3e-5, "peak learning rate, linear decay to 0 (SimCSE BERT-base unsup: 3e-5)", "positive")
    epochs: float = _opt(1.0, "passes over the data (SimCSE: 1)", "positive")
    max_steps: int = _opt(-1, "optimizer steps; > 0 overrides epochs", "steps")
    warmup_ratio: float = _opt(0.0, "fraction of steps with linear warm-up (SimCSE: none)", "ratio")
    weight_decay: float = _opt(0.0, "AdamW weight decay (SimCSE: 0)", "non_negative")
    max_grad_norm: float = _opt(
        1.0, "gradient clipping norm, 0 = none (Trainer default, as SimCSE)", "non_negative"
    )
    temperature: float | None = _opt(
        None,
        f"softmax temperature, at least {TEMPERATURE_MIN:g}; empty = the objective's paper value (SimCSE 0.05)",
        "temperature",
    )
    hard_negative_weight: float | None = _opt(
        None,
        "weight alpha of each anchor's own hard negative (JCSE eq. 5); empty = objective default (1)",
        "non_negative",
    )
    objective_options: str = _opt("", "other objective fields as key=value,key=value")
    eval_task: str = _opt("stsb-dev", "task evaluated every eval_steps for model selection (empty = none)")
    eval_steps: int = _opt(250, "evaluate every N optimizer steps (SimCSE: 250)", "positive")
    eval_on_start: bool = _opt(True, "also evaluate the untrained model (step 0) so the gain is on record")
    eval_batch_size: int = _opt(64, "batch size for encoding during evaluation", "positive")
    test_tasks: str = _opt("", "comma list of tasks/suites evaluated once on the best model at the end")
    save_steps: int = _opt(250, "write a resumable checkpoint every N steps", "positive")
    save_total_limit: int = _opt(2, "keep at most this many checkpoints", "positive")
    logging_steps: int = _opt(50, "log the loss terms every N steps", "positive")
    seed: int = _opt(42, "seed for initialisation, data order and dropout (SimCSE: 42)", "seed")
    bf16: bool = _opt(False, "bf16 mixed precision (GPUs with bf16 support)")
    gradient_accumulation_steps: int = _opt(
        1, "micro-batches per optimizer step (negatives stay per micro-batch)", "positive"
    )
    max_train_samples: int = _opt(0, "use only the first N training rows (0 = all)", "non_negative")
    num_workers: int = _opt(0, "data loader worker processes", "non_negative")
    data_root: str = _opt("", "benchmark data folder for evaluation (default: $SENTKIT_DATA)")
    progress: bool = _opt(True, "show the progress bar")
    overwrite: bool = _opt(False, "delete an existing run in output_dir and start over")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, checked_value(f, getattr(self, f.name), f"TrainConfig.{f.name}"))

    @classmethod
    def from_yaml(cls, path: str | Path) -> TrainConfig:
        """Read a YAML (or JSON) mapping of field -> value; a bad key or value names the file and line."""
        config = load_config(path)
        if isinstance(config, StagedConfig):
            raise ConfigError(f"{path}: a multi-stage config (stages:); read it with load_config")
        return config

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], source: str = "config", lines: Mapping[str, int] | None = None
    ) -> TrainConfig:
        """A config from a mapping; each key and value is checked and an error names `source`(:line) and key."""
        return cls(**checked_options(data, source, lines))

    def with_flags(self, flags: Mapping[str, Any]) -> TrainConfig:
        """This config with command-line values applied; a bad one is named by its flag (`--batch-size`)."""
        return dataclasses.replace(self, **checked_flags(flags))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def objective_overrides(self) -> dict[str, Any]:
        """Objective hyper-parameters set here (None = keep the paper default) plus `objective_options`."""
        from sentkit.objectives import OBJECTIVES

        fields = {f.name: f for f in dataclasses.fields(OBJECTIVES.get(self.objective).config_class)}
        out: dict[str, Any] = {}
        for name in ("temperature", "hard_negative_weight"):
            value = getattr(self, name)
            if value is not None:
                if name not in fields:
                    raise ConfigError(f"{name}: objective {self.objective!r} has no {name!r} option")
                out[name] = value
        for item in filter(None, (s.strip() for s in self.objective_options.split(","))):
            key, sep, raw = item.partition("=")
            key = key.strip()
            if not sep or key not in fields:
                raise ConfigError(
                    f"objective_options: expected key=value with key in {sorted(fields)}, got {item!r}"
                )
            out[key] = _cast(key, raw.strip(), type(fields[key].default))
        return out


def _cast(key: str, raw: str, kind: type) -> Any:
    if kind is bool:
        if raw.lower() not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            raise ConfigError(f"objective_options: {key}: expected true or false, got {raw!r}")
        return raw.lower() in ("1", "true", "yes", "on")
    if kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            raise ConfigError(
                f"objective_options: {key}: expected {_KIND_WORDS[kind]}, got {raw!r}"
            ) from None
    return raw


_FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}


def checked_options(
    data: Mapping[str, Any], source: str, lines: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """Check every key and value of a mapping of TrainConfig fields; errors read `source:line: key: ...`."""
    out = {}
    for key, value in data.items():
        where = f"{source}:{lines[key]}" if lines and key in lines else source
        if key not in _FIELDS:
            close = difflib.get_close_matches(str(key), list(_FIELDS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{where}: unknown training option {key!r}{hint}")
        out[key] = checked_value(_FIELDS[key], value, f"{where}: {key}")
    return out


def checked_flags(flags: Mapping[str, Any]) -> dict[str, Any]:
    """Check command-line values; an error names the flag (`--batch-size: expected a positive integer ...`)."""
    out = {}
    for key, value in flags.items():
        if key not in _FIELDS:
            raise ConfigError(f"--{key.replace('_', '-')}: unknown training option")
        out[key] = checked_value(_FIELDS[key], value, "--" + key.replace("_", "-"))
    return out


# ---- multi-stage runs --------------------------------------------------------------------------------
_STAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass
class StagedConfig:
    """Stages run in order in one command: stage k+1 starts from stage k's `best/`; each has its own folder.

    Built from a mapping whose `stages:` list holds partial configs (plus an optional `name`, default
    stage1, stage2, ...); the other top-level keys are shared by every stage, a stage's own keys win.
    """

    output_dir: str
    names: list[str]
    stages: list[TrainConfig]
    overwrite: bool = False

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        source: str = "config",
        lines: Mapping[str, Any] | None = None,
        flags: Mapping[str, Any] | None = None,
    ) -> StagedConfig:
        lines = lines or {}
        where = f"{source}:{lines['stages']}" if "stages" in lines else source
        raw_stages = data.get("stages")
        if not isinstance(raw_stages, list) or not raw_stages:
            raise ConfigError(f"{where}: stages: expected a non-empty list of partial training configs")
        shared = checked_options({k: v for k, v in data.items() if k != "stages"}, source, lines)
        shared.update(checked_flags(flags or {}))
        output_dir = shared.pop("output_dir", _FIELDS["output_dir"].default)
        overwrite = shared.pop("overwrite", False)
        stage_lines = lines.get("stages.items") or [{}] * len(raw_stages)
        names: list[str] = []
        stages: list[TrainConfig] = []
        for i, raw in enumerate(raw_stages):
            here = f"stages[{i}]"
            if not isinstance(raw, Mapping):
                raise ConfigError(f"{where}: {here}: expected a mapping of training options, got {raw!r}")
            raw = dict(raw)
            name = raw.pop("name", f"stage{i + 1}")
            if not isinstance(name, str) or not _STAGE_NAME.fullmatch(name) or name in names:
                raise ConfigError(f"{where}: {here}.name: expected a unique folder name, got {name!r}")
            for banned in ("output_dir", "overwrite"):
                if banned in raw:
                    raise ConfigError(
                        f"{where}: {here}.{banned}: set it once at the top level (stage folders are "
                        f"<output_dir>/<name>)"
                    )
            if i > 0 and "model" in raw:
                raise ConfigError(
                    f"{where}: {here}.model: stage {i + 1} starts from {names[-1]}'s best model; "
                    "remove `model` here"
                )
            options = {**shared, **checked_options(raw, f"{source}: {here}", stage_lines[i])}
            options.update(checked_flags({k: v for k, v in (flags or {}).items() if k != "model" or i == 0}))
            options.pop("output_dir", None)
            options.pop("overwrite", None)
            if i > 0:
                options["model"] = str(Path(output_dir) / names[-1] / "best")
            names.append(name)
            stages.append(TrainConfig(**options, output_dir=str(Path(output_dir) / name)))
        return cls(output_dir=output_dir, names=names, stages=stages, overwrite=overwrite)

    def to_dict(self) -> dict[str, Any]:
        """The resolved plan: every stage's full config (the top-level config.yaml)."""
        return {
            "output_dir": self.output_dir,
            "stages": [{"name": n, **s.to_dict()} for n, s in zip(self.names, self.stages, strict=True)],
        }


# ---- files -------------------------------------------------------------------------------------------
def load_config(path: str | Path, flags: Mapping[str, Any] | None = None) -> TrainConfig | StagedConfig:
    """A YAML/JSON config file (with `flags` applied on top): a `StagedConfig` when it has `stages:`."""
    data, lines = _read_yaml(Path(path))
    if "stages" in data:
        return StagedConfig.from_dict(data, str(path), lines, flags)
    config = TrainConfig.from_dict(data, source=str(path), lines=lines)
    return config.with_flags(flags) if flags else config


def _read_yaml(path: Path) -> tuple[dict, dict[str, Any]]:
    """The mapping in a YAML file and the line of each key (`stages.items`: one such dict per stage)."""
    import yaml

    if not path.is_file():
        raise MissingDataError(path, "expected a YAML file of TrainConfig fields")
    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text)
        data = yaml.load(text, Loader=_unique_key_loader())  # a SafeLoader: plain data only
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: expected a UTF-8 YAML file ({err.reason} at byte {err.start})") from None
    except _DuplicateKey as err:
        raise ConfigError(
            f"{path}:{err.line}: {err.key}: given twice (first on line {err.first_line}); keep one"
        ) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(f"{where}: expected a YAML mapping of training options ({problem})") from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: expected a mapping of TrainConfig fields, got {type(data).__name__}")
    return data, _key_lines(node)


class _DuplicateKey(Exception):
    """A key given twice in one YAML mapping (PyYAML would keep the last one silently)."""

    def __init__(self, key: str, line: int, first_line: int) -> None:
        super().__init__(key, line, first_line)
        self.key, self.line, self.first_line = key, line, first_line


def _unique_key_loader():
    """yaml.SafeLoader that raises _DuplicateKey for a repeated key in any mapping, at any depth."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` merges, not a key
                        continue
                    key = self.construct_object(key_node, deep=True)
                    line = key_node.start_mark.line + 1
                    try:
                        if key in seen:
                            raise _DuplicateKey(str(key), line, seen[key])
                        seen[key] = line
                    except TypeError:  # an unhashable key: SafeLoader reports it itself
                        continue
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def _key_lines(node) -> dict[str, Any]:
    import yaml

    lines: dict[str, Any] = {}
    if not isinstance(node, yaml.MappingNode):
        return lines
    for key, value in node.value:
        lines[str(key.value)] = key.start_mark.line + 1
        if key.value == "stages" and isinstance(value, yaml.SequenceNode):
            lines["stages.items"] = [_key_lines(item) for item in value.value]
    return lines
