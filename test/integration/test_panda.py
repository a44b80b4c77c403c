"""The Panda agent driving the MuJoCo mock over real DDS: motion, limits, resets, the
main job's process set, and a short end-to-end training run."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rclpy
from helpers import run_module, start_node
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import UInt64

from franka_agent.core import panda
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.tools.paths import find_config
from spin_decoupler_ros.tools.processes import ProcessGroup

MOCK = "franka_agent.mock.mock_hardware_node"
AGENT = "franka_agent.panda_agent_node"
CONFIG = find_config("panda_reach.yaml", package="franka_agent")
TCP = slice(14, 17)


def start_panda(processes: ProcessGroup, log_dir: Path, speed: float = 4.0, **agent: object) -> None:
    start_node(
        processes,
        MOCK,
        log_dir,
        params_files=(CONFIG,),
        params={"speed_factor": speed},
        ready_text="mock Panda ready",
        label="mock_hardware",
    )
    start_node(
        processes, AGENT, log_dir, params_files=(CONFIG,), params={"use_sim_time": True, **agent}, label="panda_agent"
    )


def limit_violations(timeout: float = 10.0) -> int:
    """The mock's latched count of limit violations."""
    from spin_decoupler_ros.rl.client import init_private_context

    context = init_private_context()
    node = Node("violation_reader", context=context)
    seen: list[int] = []
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(UInt64, "/mock_hardware/limit_violations", lambda m: seen.append(m.data), qos)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    deadline = time.monotonic() + timeout
    while not seen and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    node.destroy_node()
    context.try_shutdown()
    assert seen, "the mock published no violation count"
    return seen[-1]


@pytest.fixture
def panda_client(processes: ProcessGroup, tmp_path: Path) -> Iterator[RLClient]:
    start_panda(processes, tmp_path)
    with RLClient(connect_timeout=30, reset_timeout=30) as client:
        yield client


@pytest.mark.parametrize(("axis", "sign"), [(0, 1.0), (1, -1.0), (2, -1.0)])
def test_the_arm_moves_in_the_commanded_direction(panda_client: RLClient, axis: int, sign: float) -> None:
    start = panda_client.reset(seed=0).observation[TCP]
    action = np.zeros(3)
    action[axis] = sign
    for _ in range(10):
        tcp = panda_client.step(action).observation[TCP]
    moved = tcp - start
    assert moved[axis] * sign > 0.08, moved
    assert np.linalg.norm(np.delete(moved, axis)) < 0.03, moved


def test_reset_returns_home(panda_client: RLClient) -> None:
    panda_client.reset(seed=0)
    for _ in range(10):
        panda_client.step([1.0, 1.0, -1.0])
    home = panda_client.reset(options=panda.HOME)
    np.testing.assert_allclose(home.observation[:7], panda.HOME, atol=5e-3)
    np.testing.assert_allclose(home.observation[7:14], 0.0, atol=0.02)
    np.testing.assert_allclose(home.observation[TCP], panda.ee_position(panda.HOME), atol=5e-3)
    noisy = panda_client.reset(seed=7).observation[:7]
    assert 0 < np.max(np.abs(noisy - panda.HOME)) <= 0.1 + 5e-3  # reset_noise 0.1 rad


@pytest.mark.parametrize("pattern", ["extremes", "flip"])
def test_adversarial_actions_never_violate_the_limits(panda_client: RLClient, pattern: str) -> None:
    rng = np.random.default_rng(3)
    panda_client.reset(seed=1)
    action = np.ones(3)
    for _ in range(150):
        action = -action if pattern == "flip" else rng.choice([-1.0, 1.0], size=3)
        answer = panda_client.step(action)
    # The hand stayed in the agent's workspace box, and the mock saw no bad command.
    assert np.all(answer.observation[TCP] >= np.array([0.2, -0.45, 0.05]) - 1e-3)
    assert np.all(answer.observation[TCP] <= np.array([0.75, 0.45, 0.8]) + 1e-3)
    assert limit_violations() == 0


def test_mock_publishes_what_franka_ros2_publishes(processes: ProcessGroup, tmp_path: Path) -> None:
    from sensor_msgs.msg import JointState

    from spin_decoupler_ros.rl.client import init_private_context

    start_node(processes, MOCK, tmp_path, params_files=(CONFIG,), ready_text="mock Panda ready")
    context = init_private_context()
    node = Node("state_reader", context=context)
    got: dict[str, JointState] = {}
    for topic in ("/joint_states", "/franka/joint_states"):
        node.create_subscription(JointState, topic, lambda m, t=topic: got.setdefault(t, m), 10)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    deadline = time.monotonic() + 10
    while len(got) < 2 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    node.destroy_node()
    context.try_shutdown()
    assert set(got) == {"/joint_states", "/franka/joint_states"}
    state = got["/franka/joint_states"]
    assert list(state.name) == list(panda.JOINT_NAMES)
    np.testing.assert_allclose(state.position, panda.HOME, atol=1e-3)


def test_pipeline_refuses_real_hardware_without_launch(ros_domain: dict[str, str]) -> None:
    done = run_module("franka_agent.pipeline", "--use-mock-hardware", "false", timeout=60)
    assert done.returncode == 2
    assert "ros2 launch franka_agent panda_train.launch.py use_mock_hardware:=false" in done.stderr


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_short_training_run_starts_the_mock_set_and_writes_its_artifacts(
    ros_domain: dict[str, str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    pipeline = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "franka_agent.pipeline",
            "--total-timesteps",
            "300",
            "--eval-episodes",
            "2",
            "--sim-speed",
            "8",
            "--run-dir",
            str(run_dir),
        ],
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # While it trains, the mock/real switch must have started exactly the mock's set of nodes.
    from spin_decoupler_ros.rl.client import init_private_context

    context = init_private_context()
    node = Node("graph_reader", context=context)
    names: set[str] = set()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not {"mock_hardware", "panda_agent", "panda_trainer"} <= names:
        names = {name for name, _ in node.get_node_names_and_namespaces()}
        time.sleep(0.2)
    node.destroy_node()
    context.try_shutdown()
    assert {"mock_hardware", "panda_agent", "panda_trainer"} <= names, names
    output, _ = pipeline.communicate(timeout=540)
    assert pipeline.returncode == 0, output
    assert "done: success rate" in output
    for artifact in (
        "model.zip",
        "steps.csv",
        "episodes.csv",
        "learning_curve.png",
        "lat_histogram.png",
        "results.json",
        "panda_agent.log",
        "mock_hardware.log",
    ):
        assert (run_dir / artifact).exists(), artifact
    with open(run_dir / "steps.csv") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 300
    for column in ("lat", "ato", "requested_duration", "wall_time", "reward"):
        assert rows[-1][column] not in ("", None), column
    assert float(rows[-1]["requested_duration"]) == pytest.approx(0.1)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["eval_episodes"] == 2 and 0.0 <= results["success_rate"] <= 1.0


def test_a_reset_sent_before_the_simulated_clock_runs_still_reaches_home(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    """Launch starts everything at once: the trainer can reset the agent before the mock
    publishes its first /clock (simulated time still 0). The reset must be timed from the
    agent's first tick, not from 0."""
    start_node(processes, AGENT, tmp_path, params_files=(CONFIG,), params={"use_sim_time": True}, ready_text=None)
    with RLClient(connect_timeout=30, reset_timeout=30) as client:
        client.connect()
        client.channel.send_reset(0, ())  # no clock yet: the agent accepts and waits
        time.sleep(1.0)
        start_node(
            processes,
            MOCK,
            tmp_path,
            params_files=(CONFIG,),
            params={"speed_factor": 4.0},
            ready_text="mock Panda ready",
            label="mock_hardware",
        )
        answer = client._wait(30.0, "reset")
        assert answer.seq == 0 and answer.observation.shape == (17,)
