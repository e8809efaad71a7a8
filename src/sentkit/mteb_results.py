"""Read MTEB result files (`<TaskName>.json`, one per task, as `mteb.evaluate` and the public results
repository write them) into sentkit's results shape, so `sentkit report` puts them beside sentkit runs.

Scores are scaled to percent. Tasks whose protocol and data sentkit shares are renamed to the sentkit task
(STSBenchmark test -> `stsb`, STS17 -> `sts17` with its pairs, STS12-16 -> `sts12-16` with one key per
year); every other task keeps its MTEB name prefixed `mteb:`. No mteb import is needed to read them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from sentkit.errors import DataFormatError

SAME_AS_SENTKIT = {"STSBenchmark": "stsb", "STS17": "sts17"}
STS_YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")
# sentkit names STS17's cross-lingual pairs English first (en-es); MTEB names some the other way (es-en)
_STS17_PAIRS = ("en-ar", "en-de", "en-tr", "en-es", "en-fr", "en-it", "en-nl")


def is_mteb_result(data: object) -> bool:
    """An MTEB TaskResult object: `task_name` and a `scores` dict of split -> list of subset scores."""
    return isinstance(data, dict) and "task_name" in data and isinstance(data.get("scores"), dict)


def mteb_result_files(path: str | Path) -> list[Path]:
    """The task result files in a file or folder (recursively), skipping model_meta.json."""
    path = Path(path)
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*.json") if p.name != "model_meta.json")


def _sts17_key(subset: str) -> str:
    a, _, b = subset.partition("-")
    flipped = f"{b}-{a}"
    return flipped if flipped in _STS17_PAIRS else subset


def _split_scores(data: dict, path: Path) -> tuple[str, list[dict]]:
    scores = data["scores"]
    split = "test" if "test" in scores else next(iter(scores), None)
    if split is None or not isinstance(scores[split], list):
        raise DataFormatError(path, None, "expected MTEB scores as {split: [subset scores]}")
    rows = [r for r in scores[split] if isinstance(r, dict) and "main_score" in r]
    if not rows:
        raise DataFormatError(path, None, f"expected subset scores with a main_score in split {split!r}")
    return split, rows


def _model_name(path: Path) -> str:
    """model_meta.json's name beside the file, else the results-folder layout `<model>/<revision>/Task.json`."""
    meta = path.parent / "model_meta.json"
    if meta.is_file():
        try:
            name = json.loads(meta.read_text(encoding="utf-8")).get("name")
        except json.JSONDecodeError as err:
            raise DataFormatError(meta, err.lineno, f"expected a JSON object ({err.msg})") from None
        if name:
            return str(name)
    return path.parent.parent.name.replace("__", "/") if path.parent.parent.name else path.parent.name


def read_mteb_result(path: str | Path) -> tuple[str, str, dict]:
    """(model name, sentkit task name, sentkit task result) for one MTEB result file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataFormatError(path, err.lineno, f"expected an MTEB result JSON object ({err.msg})") from None
    if not is_mteb_result(data):
        raise DataFormatError(path, 1, "expected an MTEB result object with 'task_name' and 'scores'")
    mteb_name = str(data["task_name"])
    split, rows = _split_scores(data, path)
    by_subset = {str(r.get("hf_subset", "default")): 100.0 * float(r["main_score"]) for r in rows}
    if mteb_name == "STS17":
        scores = {_sts17_key(k): v for k, v in by_subset.items()}
    elif len(by_subset) == 1:
        scores = {}
    else:
        scores = dict(by_subset)
    main = sum(by_subset.values()) / len(by_subset)
    name = SAME_AS_SENTKIT.get(mteb_name, f"mteb:{mteb_name}")
    result = {
        "main_score": main,
        "scores": {"main_score": main, **scores},
        "languages": [k for k in scores] if mteb_name == "STS17" else [],
        "meta": {
            "source": "MTEB result file",
            "mteb_task": mteb_name,
            "split": split,
            "mteb_version": data.get("mteb_version"),
            "dataset_revision": data.get("dataset_revision"),
            "file": {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
        },
    }
    return _model_name(path), name, result


def read_mteb_runs(paths: Iterable[str | Path]) -> list[dict]:
    """One sentkit-shaped run per model found in the MTEB result files or folders; STS12-16 are merged
    into `sts12-16` (main = mean of the years) when all five are present."""
    runs: dict[str, dict] = {}
    for given in paths:
        for path in mteb_result_files(given):
            model, task, result = read_mteb_result(path)
            run = runs.setdefault(
                model,
                {"model": f"{model} (MTEB)", "tasks": {}, "source": "mteb", "path": str(given), "seed": None},
            )
            run["tasks"][task] = result
    for run in runs.values():
        years = [f"mteb:{y}" for y in STS_YEARS]
        if all(y in run["tasks"] for y in years):
            per_year = {y.removeprefix("mteb:"): run["tasks"].pop(y) for y in years}
            main = sum(r["main_score"] for r in per_year.values()) / len(per_year)
            run["tasks"]["sts12-16"] = {
                "main_score": main,
                "scores": {"main_score": main, **{y: r["main_score"] for y, r in per_year.items()}},
                "languages": ["en"],
                "meta": {"source": "MTEB result files", "years": {y: r["meta"] for y, r in per_year.items()}},
            }
    return list(runs.values())


def looks_like_mteb(path: str | Path) -> bool:
    """A folder of MTEB result files, or one JSON file holding an MTEB TaskResult."""
    path = Path(path)
    if path.is_dir():
        return any(path.rglob("model_meta.json")) or any(
            _peek_is_mteb(p) for p in list(path.rglob("*.json"))[:3]
        )
    return path.suffix == ".json" and _peek_is_mteb(path)


def _peek_is_mteb(path: Path) -> bool:
    try:
        return is_mteb_result(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError, OSError):
        return False  # not MTEB: the sentkit results reader reports what is wrong with it
