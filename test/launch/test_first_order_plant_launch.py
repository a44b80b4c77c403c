"""launch/first_order_plant.launch.py under launch_pytest.

Skipped where ROS 2 launch is not installed (the PyPI-wheel set-up); everything it
checks is also checked without launch by test/integration/test_examples.py, which
starts the same two nodes as processes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers import isolated_ros_environment

launch_pytest = pytest.importorskip("launch_pytest", reason="ROS 2 launch (launch_pytest) is not installed")

from launch.actions import IncludeLaunchDescription, SetEnvironmentVariable  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402

from launch import LaunchDescription  # noqa: E402

LAUNCH_FILE = Path(__file__).resolve().parents[2] / "launch" / "first_order_plant.launch.py"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return tmp_path / "run"


@launch_pytest.fixture
def plant_launch(run_dir: Path) -> LaunchDescription:
    isolation = [SetEnvironmentVariable(k, v) for k, v in isolated_ros_environment().items()]
    return LaunchDescription(
        [
            *isolation,
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(str(LAUNCH_FILE)),
                launch_arguments={"total_timesteps": "400", "run_dir": str(run_dir)}.items(),
            ),
            launch_pytest.actions.ReadyToTest(),
        ]
    )


@pytest.mark.launch(fixture=plant_launch)
def test_launch_trains_and_reports_tracking_error(run_dir: Path):  # type: ignore[no-untyped-def]
    results = run_dir / "results.json"
    deadline = time.monotonic() + 240
    while not results.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert results.exists(), "the trainer never wrote its results"
    yield
    # After launch shut down (it does when the trainer exits):
    figures = json.loads(results.read_text())
    assert figures["total_timesteps"] == 400
    assert figures["mean_tracking_error"] < figures["zero_action_tracking_error"]
