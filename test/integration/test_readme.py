"""The README's minimal example of each side runs as printed: its agent as a node process,
its env trained by SB3 against it (a few steps instead of 3,000)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers import run_module

from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_python_blocks() -> dict[str, str]:
    """The README's python code blocks, by the file name their first line gives."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    named = {}
    for block in blocks:
        first = block.splitlines()[0]
        match = re.match(r"# (\w+)\.py:", first)
        assert match, f"a README python block must start '# <module>.py: ...', not {first!r}"
        named[match.group(1)] = block
    return named


def test_the_readme_examples_run_as_printed(
    processes: ProcessGroup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = readme_python_blocks()
    assert set(blocks) == {"point_agent", "point_env"}
    learner, replaced = re.subn(r"total_timesteps=\d+", "total_timesteps=120", blocks["point_env"])
    assert replaced == 1, "the README's env example no longer trains with total_timesteps=..."
    (tmp_path / "point_agent.py").write_text(blocks["point_agent"])
    (tmp_path / "point_env.py").write_text(learner)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))

    agent = processes.start(NodeProcess("point_agent", log_path=tmp_path / "agent.log", label="point_agent"))
    assert agent.wait_for_log("agent ready", 30.0), agent.log_text()
    result = run_module("point_env", timeout=180.0)
    assert result.returncode == 0, result.stdout + result.stderr
    printed = re.search(r"the previous action ran ([\d.]+) s; observed at agent time ([\d.]+) s", result.stdout)
    assert printed, result.stdout
    assert float(printed.group(2)) > 0.0
