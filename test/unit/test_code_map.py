"""docs/code_map.md says what every module of the packages is for, as their docstrings do."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from code_map import PAGE, page, purpose  # noqa: E402


def test_the_code_map_is_the_one_the_docstrings_make() -> None:
    assert PAGE.read_text() == page(), "docs/code_map.md is stale: ./ws exec python test/code_map.py"


def test_every_module_names_its_purpose() -> None:
    missing = [line for line in page().splitlines() if line.startswith("| `") and line.endswith("|  |")]
    assert missing == []


def test_a_purpose_is_the_docstrings_first_paragraph(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""One thing: what it\nis for.\n\nHow it works."""\n')
    assert purpose(module) == "One thing: what it is for."
