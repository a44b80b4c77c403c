"""The documentation's examples run as printed: the README's minimal agent and env, and
docs/writing_an_agent.md's tank, each agent as a node process started the way its page
says, its env trained by SB3 against it (a few steps instead of thousands)."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from helpers import run_module

from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup

ROOT = Path(__file__).resolve().parents[2]
HEADER = re.compile(r"# (\w+)\.py: python \1\.py(.*)")


def python_blocks(page: Path) -> dict[str, tuple[str, list[str]]]:
    """A page's python code blocks by module name, each with the arguments its first line
    gives the command (``# tank_agent.py: python tank_agent.py --ros-args ...``)."""
    named = {}
    for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S):
        match = HEADER.match(block.splitlines()[0])
        assert match, f"a python block of {page.name} must start '# <module>.py: python <module>.py ...'"
        arguments = match.group(2).split(",")[0]  # (what follows a comma is a note)
        named[match.group(1)] = (block, shlex.split(arguments))
    return named


@pytest.mark.parametrize(
    ("page", "agent", "env"),
    [("README.md", "point_agent", "point_env"), ("docs/writing_an_agent.md", "tank_agent", "tank_env")],
)
def test_the_documented_examples_run_as_printed(
    page: str, agent: str, env: str, processes: ProcessGroup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = python_blocks(ROOT / page)
    assert set(blocks) == {agent, env}
    learner, replaced = re.subn(r"total_timesteps=\d+", "total_timesteps=120", blocks[env][0])
    assert replaced == 1, f"{page}'s env example no longer trains with total_timesteps=..."
    (tmp_path / f"{agent}.py").write_text(blocks[agent][0])
    (tmp_path / f"{env}.py").write_text(learner)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))

    node = processes.start(NodeProcess(agent, blocks[agent][1], log_path=tmp_path / "agent.log", label=agent))
    assert node.wait_for_log("agent ready", 30.0), node.log_text()
    result = run_module(env, timeout=180.0)
    assert result.returncode == 0, result.stdout + result.stderr
    if page == "README.md":  # it prints the first step's timing
        printed = re.search(r"the previous action ran ([\d.]+) s; observed at agent time ([\d.]+) s", result.stdout)
        assert printed and float(printed.group(2)) > 0.0, result.stdout
