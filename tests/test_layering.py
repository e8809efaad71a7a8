"""Layers import downward only, read from the source with `ast` (an import inside a function counts too).

A loss never knows the trainer, an encoder never knows the AMR package, and inside `training_data/` each
method's folder uses the shared builders while the shared builders know no method. A new top-level module
or folder must be placed in `ALLOWED` before this test passes: that is the point where its layer is chosen.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "sentkit"
# Modules every layer may use: errors, atomic writes, output locks, the registry class, language codes, caches, versions,
# markdown escaping, where torch work runs (devices).
BASE = frozenset(
    {"errors", "atomic", "output_lock", "registry", "langs", "cache", "provenance", "markdown", "devices"}
)
TOP = "*"  # may import anything: the command line and the package root (`sentkit.load_encoder`)
# unit (a top-level module or folder of sentkit) -> the units it may import besides itself and BASE
ALLOWED: dict[str, frozenset[str] | str] = {
    **{name: frozenset() for name in BASE},
    "datasets": frozenset(),
    "stats": frozenset(),  # bootstrap intervals over a task's per-item values
    "encoders": frozenset({"datasets"}),  # int8 calibration and export checks read real sentences
    "analysis": frozenset(),
    "mteb_results": frozenset(),
    "report_svg": frozenset(),
    "corpus": frozenset({"datasets", "encoders"}),  # streaming readers, shards, the encode engines
    "mining": frozenset({"corpus", "encoders"}),  # k-NN search and margin scoring over encoded corpora
    "tasks": frozenset({"datasets", "encoders", "stats", "mining"}),
    "training_data": frozenset({"datasets"}),
    "objectives": frozenset({"datasets", "training_data"}),  # EASE reads its built entity vocabulary
    "evaluate": frozenset({"datasets", "encoders", "tasks", "stats"}),
    "compare": frozenset({"stats", "report"}),
    "report_html": frozenset({"datasets", "mteb_results", "report_svg"}),
    "report": frozenset({"report_html"}),
    "training": frozenset({"datasets", "encoders", "tasks", "objectives", "training_data", "evaluate"}),
    "amr": frozenset({"datasets", "encoders", "training_data", "training"}),
    "cli": TOP,
    "__init__": TOP,
}


def unit_of(path: Path) -> str:
    """`encoders` for src/sentkit/encoders/x.py, `evaluate` for src/sentkit/evaluate.py."""
    first = path.relative_to(SRC).parts[0]
    return first.removesuffix(".py")


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of every absolute `sentkit` import in the file, at any depth of the code.

    `from a.b import c` gives `a.b.c`: the name imported, whether a module or a name inside one.
    """
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "sentkit"]


def sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


UNITS = {unit_of(path) for path in sources()}


def test_every_unit_has_a_layer():
    assert UNITS - ALLOWED.keys() == set(), "place each new module or folder in ALLOWED"


def test_imports_go_down_the_layers():
    wrong = []
    for path in sources():
        unit = unit_of(path)
        allowed = ALLOWED.get(unit, frozenset())
        if allowed == TOP:
            continue
        for line, name in imported_modules(path):
            target = name.split(".")[1]
            target = target if target in UNITS else "__init__"  # `from sentkit import load_encoder`
            if target != unit and target not in BASE and target not in allowed:
                wrong.append(f"{path.relative_to(SRC.parent)}:{line}: {unit} imports {name}")
    assert wrong == []


def _training_data_part(parts: list[str], methods: set[str]) -> str:
    """What a module under training_data/ is, from its dotted path below it: a method's folder (`ease`,
    `jcse`), the spec dispatcher (`specs`) or a builder shared by methods (`shared`)."""
    if parts and parts[0] in methods:
        return parts[0]
    return "specs" if parts[:1] == ["specs"] else "shared"


def test_training_data_methods_build_on_shared_code_only():
    folder = SRC / "training_data"
    methods = {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
    assert {"ease", "jcse"} <= methods
    wrong = []
    for path in sorted(folder.rglob("*.py")):
        part = _training_data_part(list(path.relative_to(folder).with_suffix("").parts), methods)
        for line, name in imported_modules(path):
            if not name.startswith("sentkit.training_data."):
                continue
            target = _training_data_part(name.split(".")[2:], methods)
            upward = target == "specs" and part != "specs"  # only the dispatcher knows every method
            sideways = target in methods and part not in ("specs", target)  # shared or another method
            if upward or sideways:
                wrong.append(f"{path.relative_to(SRC.parent)}:{line}: {part} imports {name}")
    assert wrong == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from sentkit.training import ExtraOptimizer", ["sentkit.training.ExtraOptimizer"]),
        ("def f():\n    import sentkit.amr.encoder", ["sentkit.amr.encoder"]),
        ("from sentkit import amr, errors", ["sentkit.amr", "sentkit.errors"]),
        ("import numpy\nfrom . import x\nimport sentkitx", []),
    ],
)
def test_imports_are_found_at_any_depth(tmp_path, source, expected):
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    assert [name for _, name in imported_modules(path)] == expected


# inside encoders/, a runtime with an exporter is a subpackage whose arrows run one way: (file, what it may
# never import). The NAME@variant cache sits above both runtimes; an exporter knows its runtime, never back.
ENCODER_ARROWS = {
    "encoders/onnx/contract.py": (
        "sentkit.encoders.onnx.",
        "sentkit.encoders.openvino",
        "sentkit.encoders.export_cache",
    ),
    "encoders/onnx/encoder.py": (
        "sentkit.encoders.onnx.export",
        "sentkit.encoders.onnx.static_int8",
        "sentkit.encoders.openvino",
        "sentkit.encoders.export_cache",
    ),
    "encoders/onnx/export.py": ("sentkit.encoders.openvino", "sentkit.encoders.export_cache"),
    "encoders/onnx/static_int8.py": (
        "sentkit.encoders.onnx.export",
        "sentkit.encoders.onnx.encoder",
        "sentkit.encoders.openvino",
        "sentkit.encoders.export_cache",
    ),
    "encoders/openvino/encoder.py": (
        "sentkit.encoders.openvino.export",
        "sentkit.encoders.onnx.export",
        "sentkit.encoders.export_cache",
    ),
    "encoders/openvino/export.py": ("sentkit.encoders.export_cache",),
}


def test_encoder_runtimes_import_one_way():
    wrong = []
    for file, never in ENCODER_ARROWS.items():
        path = SRC / file
        for line, name in imported_modules(path):
            if name.startswith(never) and not name.startswith("sentkit.encoders.onnx.contract"):
                wrong.append(f"{file}:{line}: imports {name}")
    assert wrong == []
