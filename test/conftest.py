"""Test-wide fixtures: DDS isolation, and starting nodes as real processes.

Every test that touches ROS gets its own ROS_DOMAIN_ID and localhost-only discovery,
so parallel test runs (and a training run beside them) never hear each other.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import LOCAL_DDS, isolated_ros_environment

from spin_decoupler_ros.tools.processes import ProcessGroup

# This process's own nodes on the tests' DDS profile too: Fast DDS reads its profiles
# once, when the process's first participant is made, whichever test makes it.
os.environ.update(LOCAL_DDS)


@pytest.fixture(scope="session", autouse=True)
def sb3_log_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """SB3 makes a log folder for every learn() not given one: the tests' go under their own
    temporary folder (the nodes they start inherit it), not the system's."""
    folder = tmp_path_factory.mktemp("sb3_logs")
    previous = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = previous


@pytest.fixture
def ros_domain(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A private DDS domain for this test: in this process and in every process it starts."""
    env = isolated_ros_environment()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield env


@pytest.fixture
def processes(ros_domain: dict[str, str], tmp_path: Path) -> Iterator[ProcessGroup]:
    """Start node processes in the test's domain; all are stopped when the test ends."""
    group = ProcessGroup()
    yield group
    group.stop()


def pytest_configure(config: pytest.Config) -> None:
    """Load launch_pytest's plugin where launch is importable but not registered as a plugin."""
    try:
        import launch_pytest  # noqa: F401
    except ImportError:
        return
    if not config.pluginmanager.has_plugin("launch_pytest"):
        config.pluginmanager.import_plugin("launch_pytest.plugin")
