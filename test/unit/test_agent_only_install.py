"""A robot PC that runs only agents needs no learner: the agents start in a Python that
cannot import torch, SB3, Gymnasium, pygame, matplotlib or MCAP (what
``SPIN_DECOUPLER_SIDE=agent rosdep install`` and requirements/agent.txt leave out;
test_package_manifests.py holds the manifests to the same line)."""

from __future__ import annotations

import subprocess
import sys

import pytest

LEARNER_MODULES = ("torch", "stable_baselines3", "gymnasium", "pygame", "Box2D", "matplotlib", "mcap", "tensorboard")
AGENTS = (
    "franka_agent.panda_agent_node",
    "spin_decoupler_ros.examples.first_order_plant.agent",
    "spin_decoupler_ros.skeletons.skeleton_agent",
)
BLOCKER = """
import importlib.abc, sys
class NoLearner(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is not installed on an agent-only machine")
sys.meta_path.insert(0, NoLearner())
import {module}
main = {module}.main
print("imported", {module}.__name__)
"""


def run_without_the_learner(module: str) -> subprocess.CompletedProcess[str]:
    code = BLOCKER.format(blocked=set(LEARNER_MODULES), module=module)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("module", AGENTS)
def test_an_agent_starts_without_the_learners_packages(module: str) -> None:
    done = run_without_the_learner(module)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"imported {module}"


def test_the_blocker_stops_a_learner_module() -> None:
    done = run_without_the_learner("spin_decoupler_ros.rl.env")
    assert done.returncode != 0 and "is not installed on an agent-only machine" in done.stderr
