"""Training options are checked where they are parsed (YAML, flags, Python), in one line naming where."""

from __future__ import annotations

import pytest

from sentkit.errors import ConfigError
from sentkit.training.config import StagedConfig, TrainConfig, load_config


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("batch_size", '"abc"', "batch_size: expected a positive integer, got 'abc'"),
        ("batch_size", "0", "batch_size: expected a positive integer, got 0"),
        ("batch_size", "-4", "batch_size: expected a positive integer, got -4"),
        ("batch_size", "8.5", "batch_size: expected a positive integer, got 8.5"),
        ("lr", "0", "lr: expected a positive number, got 0"),
        ("lr", "-1e-5", "lr: expected a positive number, got -1e-05"),
        ("temperature", "0.0", "temperature: expected a number >= 1e-19 or empty (null), got 0.0"),
        ("warmup_ratio", "1.5", "warmup_ratio: expected a number in [0, 1), got 1.5"),
        ("max_steps", "0", "max_steps: expected a positive integer, or -1 to train for `epochs`, got 0"),
        ("bf16", '"yes"', "bf16: expected a boolean (true/false), got 'yes'"),
        ("pooling", "max", "pooling: expected one of auto, cls, cls_mlp, mean, got 'max'"),
        ("seed", "-1", "seed: expected an integer in [0, 2**32), got -1"),
        ("model", "12", "model: expected a non-empty string, got 12"),
    ],
)
def test_bad_yaml_value_names_file_line_and_expected_type(tmp_path, key, value, expected):
    path = tmp_path / "run.yaml"
    path.write_text(f"objective: simcse-unsup\n{key}: {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        TrainConfig.from_yaml(path)
    assert str(err.value) == f"{path}:2: {expected}"


def test_unknown_key_names_line_and_close_match(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("lr: 0.001\n\nlearning_rate: 0.1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"run.yaml:3: unknown training option 'learning_rate'"):
        TrainConfig.from_yaml(path)
    path.write_text("batch_sise: 8\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"did you mean 'batch_size'\?"):
        TrainConfig.from_yaml(path)


def test_yaml_syntax_error_is_one_line(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("lr: [0.1\nbatch_size: 3\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        TrainConfig.from_yaml(path)
    assert str(err.value).startswith(f"{path}:") and "\n" not in str(err.value)


def test_values_yaml_reads_as_strings_or_ints_are_converted(tmp_path):
    path = tmp_path / "run.yaml"
    # YAML 1.1 reads 3e-5 (no dot) as a string and 2 as an int: both are the numbers meant
    path.write_text("lr: 3e-5\nepochs: 2\n", encoding="utf-8")
    config = TrainConfig.from_yaml(path)
    assert config.lr == 3e-5 and isinstance(config.epochs, float) and config.epochs == 2.0


def test_python_api_and_flags_are_checked_too():
    with pytest.raises(
        ConfigError, match=r"^TrainConfig.batch_size: expected a positive integer, got 'abc'$"
    ):
        TrainConfig(batch_size="abc")
    with pytest.raises(ConfigError, match=r"^--batch-size: expected a positive integer, got -1$"):
        TrainConfig().with_flags({"batch_size": -1})
    with pytest.raises(ConfigError, match=r"^--lr: expected a positive number, got 0.0$"):
        TrainConfig().with_flags({"lr": 0.0})
    with pytest.raises(ConfigError, match=r"objective_options: temperature: expected number, got 'abc'"):
        TrainConfig(objective_options="temperature=abc").objective_overrides()


def test_staged_config_chains_models_and_applies_flags(tmp_path):
    path = tmp_path / "stages.yaml"
    path.write_text(
        "output_dir: runs/x\nmodel: base\nbatch_size: 8\nstages:\n"
        "  - {objective: simcse-sup, data: a.csv, lr: 0.001}\n"
        "  - name: nli\n    data: b.csv\n",
        encoding="utf-8",
    )
    plan = load_config(path, flags={"seed": 7, "model": "other"})
    assert isinstance(plan, StagedConfig) and plan.names == ["stage1", "nli"]
    first, second = plan.stages
    assert (first.model, first.output_dir, first.lr, first.seed) == ("other", "runs/x/stage1", 0.001, 7)
    assert (second.model, second.output_dir, second.objective) == (
        "runs/x/stage1/best",
        "runs/x/nli",
        "simcse-unsup",
    )
    assert second.batch_size == 8 and second.seed == 7 and second.data == "b.csv"

    path.write_text("stages:\n  - {data: a.csv}\n  - {data: b.csv, model: m}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"stages\[1\].model: stage 2 starts from stage1's best model"):
        load_config(path)
    path.write_text("stages:\n  - {data: a.csv, batch_size: 0}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"stages\[0\]:2: batch_size: expected a positive integer, got 0"):
        load_config(path)


def test_key_given_twice_is_refused_naming_file_line_and_key(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("lr: 0.001\nbatch_size: 8\nlr: 0.01\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        TrainConfig.from_yaml(path)
    assert str(err.value) == f"{path}:3: lr: given twice (first on line 1); keep one"
    path.write_text("stages:\n  - data: a.csv\n    seed: 1\n    seed: 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"run.yaml:4: seed: given twice \(first on line 3\); keep one$"):
        load_config(path)
    path.write_text("lr: 0.001\nbatch_size: 8\n", encoding="utf-8")  # still plain safe YAML otherwise
    assert TrainConfig.from_yaml(path).batch_size == 8
