"""Each package carries the workspace's lint settings (its ruff.toml), so that its lint test
passes wherever it is built as it does here: the copies say what pyproject.toml says."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", ["spin_decoupler_ros", "franka_agent"])
def test_a_package_lints_as_the_workspace_does(package: str) -> None:
    workspace = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]
    workspace.pop("extend-exclude")  # (the workspace's build folders)
    assert tomllib.loads((ROOT / "src" / package / "ruff.toml").read_text()) == workspace
