"""The package's tests: a private DDS domain for a test that touches ROS, and SB3's log
folders under the tests' temporary folder (spin_decoupler_ros.tools.isolation)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from spin_decoupler_ros.tools.isolation import LOCAL_DDS, isolated_ros_environment, sb3_logs_in

# This process's own nodes on the tests' DDS profile too (Fast DDS reads it once).
os.environ.update(LOCAL_DDS)


@pytest.fixture(scope="session", autouse=True)
def sb3_log_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with sb3_logs_in(tmp_path_factory.mktemp("sb3_logs")) as folder:
        yield folder


@pytest.fixture
def ros_domain(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A private DDS domain for this test: in this process and in every process it starts."""
    env = isolated_ros_environment()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env
