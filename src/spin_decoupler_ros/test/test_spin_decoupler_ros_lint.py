"""spin_decoupler_ros's code passes the workspace's linter, as ament_flake8 checks a package in a ROS
workspace: ruff, with the settings of the workspace's pyproject.toml where the package
sits in one (its own defaults elsewhere)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]


@pytest.mark.linter
def test_the_package_passes_ruff() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).is_file():
        pytest.skip("ruff is not installed here (pip install ruff)")
    found = subprocess.run([ruff, "check", "--no-cache", str(PACKAGE)], capture_output=True, text=True, check=False)
    assert found.returncode == 0, found.stdout + found.stderr
