"""Agents' health on /diagnostics, read as rqt_robot_monitor would: a running agent is
OK, a learner silent past the watchdog turns the learner's status to WARN, and a robot
whose joint states stop turns the Panda's joint-state status to ERROR."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from helpers import start_node, start_panda_agent, start_panda_mock
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.tools.processes import ProcessGroup

PLANT = "spin_decoupler_ros.examples.first_order_plant.agent"


class DiagnosticsReader:
    """The newest status heard on /diagnostics for each name."""

    def __init__(self, node: Node, executor: SingleThreadedExecutor) -> None:
        self.latest: dict[str, DiagnosticStatus] = {}
        self._executor = executor
        node.create_subscription(DiagnosticArray, "/diagnostics", self._keep, 50)

    def _keep(self, message: DiagnosticArray) -> None:
        for status in message.status:
            self.latest[status.name] = status

    def wait_for(self, name: str, condition: Callable[[DiagnosticStatus], bool], timeout: float) -> DiagnosticStatus:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.latest.get(name)
            if status is not None and condition(status):
                return status
            self._executor.spin_once(timeout_sec=0.05)
        raise AssertionError(f"{name}: last heard {self.latest.get(name)}")


@contextmanager
def diagnostics_reader() -> Iterator[DiagnosticsReader]:
    from spin_decoupler_ros.rl.client import init_private_context

    context = init_private_context()
    node = Node("diagnostics_reader", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        yield DiagnosticsReader(node, executor)
    finally:
        node.destroy_node()
        context.try_shutdown()


def level(value: bytes) -> Callable[[DiagnosticStatus], bool]:
    return lambda status: status.level == value


def test_a_learner_silent_past_the_watchdog_turns_the_learner_status_to_warn(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    params = {"rl_timestep": 0.05, "watchdog_timeout": 0.5, "diagnostics_period": 0.2}
    start_node(processes, PLANT, tmp_path, namespace="/watched", params=params)
    name = "watched/first_order_plant_agent: learner"
    with diagnostics_reader() as reader, RLClient("/watched", connect_timeout=20) as client:
        loop = reader.wait_for("watched/first_order_plant_agent: control loop", level(DiagnosticStatus.OK), 10)
        assert dict((kv.key, kv.value) for kv in loop.values)["control rate"].endswith("Hz")
        client.reset(seed=0)
        for _ in range(30):
            client.step([0.5])
        running = reader.wait_for(name, lambda status: status.message == "running", 5)
        assert running.level == DiagnosticStatus.OK
        assert dict((kv.key, kv.value) for kv in running.values)["client"] == client.channel.client_id
        silent = reader.wait_for(name, level(DiagnosticStatus.WARN), 5)  # the client stops stepping
        assert "silent past the watchdog" in silent.message
        client.step([0.5])  # back: the episode resumes, and so does OK
        reader.wait_for(name, lambda status: status.message == "running", 5)


def test_joint_states_that_stop_turn_the_panda_joint_state_status_to_error(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    mock = start_panda_mock(processes, tmp_path, speed=1.0, lockstep=False)
    start_panda_agent(processes, tmp_path, diagnostics_period=0.2)
    name = "panda_agent: joint states"
    with diagnostics_reader() as reader:
        reader.wait_for(name, level(DiagnosticStatus.OK), 10)
        mock.kill(signal.SIGSTOP)  # the robot's state stops coming (and its clock)
        try:
            stale = reader.wait_for(name, level(DiagnosticStatus.ERROR), 5)
            assert "ms old" in stale.message
            loop = reader.wait_for("panda_agent: control loop", level(DiagnosticStatus.ERROR), 5)
            assert "stalled" in loop.message
        finally:
            mock.kill(signal.SIGCONT)
        reader.wait_for(name, level(DiagnosticStatus.OK), 10)
