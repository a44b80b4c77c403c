"""Data between processes is typed ROS 2 messages: no module of ours loads pickled or
marshalled data, which would run whatever code a sender put in it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

SRC = Path(__file__).resolve().parents[2] / "src"
UNSAFE = {"pickle", "_pickle", "cPickle", "cloudpickle", "dill", "marshal", "shelve", "jsonpickle"}


def unsafe_imports(path: Path) -> list[str]:
    """Each import of a deserialiser that runs code, in any form (``import pickle``,
    ``from pickle import loads``, ``import cloudpickle as cp``, ``__import__("pickle")``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("__import__", "import_module"):
            modules = [
                arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            ]
        else:
            continue
        found += [f"{path}:{node.lineno}: {module}" for module in modules if module.split(".")[0] in UNSAFE]
    return found


def test_no_module_of_ours_imports_a_deserialiser_that_runs_code() -> None:
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 50
    assert [line for path in modules for line in unsafe_imports(path)] == []


def test_every_form_of_the_import_is_found(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import os\nfrom pickle import loads\nimport cloudpickle as cp\nimport marshal, json\n"
        "m = __import__('dill')\nfrom json import loads as jl\n"
    )
    assert [line.split(": ")[1] for line in unsafe_imports(module)] == ["pickle", "cloudpickle", "marshal", "dill"]
