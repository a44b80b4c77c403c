"""The examples' launch files (first_order_plant, lunar_lander) under launch_pytest.

Skipped where ROS 2 launch is not installed (the PyPI-wheel set-up); everything it
checks is also checked without launch by test/integration/test_examples.py, which
starts the same two nodes as processes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from spin_decoupler_ros.tools.isolation import isolated_ros_environment

launch_pytest = pytest.importorskip("launch_pytest", reason="ROS 2 launch (launch_pytest) is not installed")

from launch import LaunchDescription  # noqa: E402
from launch.actions import IncludeLaunchDescription, SetEnvironmentVariable  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from process_exits import Exits, all_exited_cleanly, noting_exits, wait_for_exit  # noqa: E402

LAUNCH_DIR = Path(__file__).resolve().parents[2] / "launch"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return tmp_path / "run"


@pytest.fixture
def exits() -> Exits:
    return []


def example_launch(example: str, total_timesteps: int, run_dir: Path, exits: Exits) -> LaunchDescription:
    isolation = [SetEnvironmentVariable(k, v) for k, v in isolated_ros_environment().items()]
    return LaunchDescription(
        [
            *isolation,
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(str(LAUNCH_DIR / f"{example}.launch.py")),
                launch_arguments={"total_timesteps": str(total_timesteps), "run_dir": str(run_dir)}.items(),
            ),
            noting_exits(exits),
            launch_pytest.actions.ReadyToTest(),
        ]
    )


def wait_for(path: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    return path.exists()


@launch_pytest.fixture
def plant_launch(run_dir: Path, exits: Exits) -> LaunchDescription:
    return example_launch("first_order_plant", 400, run_dir, exits)


@launch_pytest.fixture
def lander_launch(run_dir: Path, exits: Exits) -> LaunchDescription:
    return example_launch("lunar_lander", 1024, run_dir, exits)


@pytest.mark.launch(fixture=plant_launch)
def test_launch_trains_and_reports_tracking_error(run_dir: Path, exits: Exits):  # type: ignore[no-untyped-def]
    results = run_dir / "results.json"
    assert wait_for(results, 240), "the trainer never wrote its results"
    assert wait_for_exit(exits, "first_order_plant_train", 60), exits  # (launch then shuts down)
    yield
    # After launch shut down (it does when the trainer exits):
    figures = json.loads(results.read_text())
    assert figures["total_timesteps"] == 400
    assert figures["mean_tracking_error"] < figures["zero_action_tracking_error"]
    assert all_exited_cleanly(exits, 2), exits  # the trainer, then the agent


@pytest.mark.launch(fixture=lander_launch)
def test_lunar_lander_launch_trains_and_reports_the_mean_return(run_dir: Path, exits: Exits):  # type: ignore[no-untyped-def]
    results = run_dir / "results.json"
    assert wait_for(results, 240), "the trainer never wrote its results"
    assert wait_for_exit(exits, "lunar_lander_train", 60), exits
    yield
    figures = json.loads(results.read_text())
    assert figures["total_timesteps"] == 1024 and figures["eval_episodes"] == 10
    assert -1000.0 < figures["mean_return"] < 400.0
    assert all_exited_cleanly(exits, 2), exits


@pytest.mark.parametrize(
    ("total_timesteps", "exits_with"),
    [(-5, 1), (200, 0)],  # (-5: the trainer refuses it, exit 2)
    ids=["trainer_refuses", "trainer_succeeds"],
)
def test_a_launch_ends_with_its_trainers_outcome(total_timesteps: int, exits_with: int, run_dir: Path) -> None:
    """A script or CI job running ``ros2 launch`` learns whether the run trained:
    example_launch.end_with_the_trainer fails the launch when the trainer fails."""
    from launch import LaunchService

    exits: Exits = []
    isolation = [SetEnvironmentVariable(k, v) for k, v in isolated_ros_environment().items()]
    service = LaunchService()
    service.include_launch_description(
        LaunchDescription(
            [
                *isolation,
                IncludeLaunchDescription(
                    PythonLaunchDescriptionSource(str(LAUNCH_DIR / "first_order_plant.launch.py")),
                    launch_arguments={"total_timesteps": str(total_timesteps), "run_dir": str(run_dir)}.items(),
                ),
                noting_exits(exits),
            ]
        )
    )
    assert service.run() == exits_with, exits
    trainer_codes = [code for name, code in exits if name.startswith("first_order_plant_train")]
    assert trainer_codes == [2 if exits_with else 0], exits
    assert len(exits) == 2, exits  # (the agent was stopped too)
