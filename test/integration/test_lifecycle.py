"""Every agent is a managed (lifecycle) node: the standard services, called from a client
process, configure, activate, deactivate, clean up and shut it down; an inactive agent
holds and refuses episodes with a typed reason; a deactivated Panda brakes within the
limits."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import start_node, start_panda_agent, start_panda_mock
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.client import Client
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState

from spin_decoupler_ros.agent.latest_message import sensor_qos
from spin_decoupler_ros.core import AgentInactiveError, EpisodeEndedError
from spin_decoupler_ros.examples.first_order_plant.task import PlantTrackingEnv
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.rl.client import init_private_context
from spin_decoupler_ros.tools.processes import ProcessGroup

PLANT = "spin_decoupler_ros.examples.first_order_plant.agent"
FAST = {"rl_timestep": 0.05, "control_rate": 100.0}


class LifecycleClient:
    """An operator's view of a managed node: its ``~/get_state`` and ``~/change_state``."""

    def __init__(self, node_name: str) -> None:
        self.context = init_private_context()
        self.node = Node("lifecycle_client", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._get: Client = self.node.create_client(GetState, f"/{node_name}/get_state")
        self._change: Client = self.node.create_client(ChangeState, f"/{node_name}/change_state")
        assert self._get.wait_for_service(timeout_sec=20), f"no /{node_name}/get_state"
        assert self._change.wait_for_service(timeout_sec=20), f"no /{node_name}/change_state"

    def _call(self, client, request):  # type: ignore[no-untyped-def]
        future = client.call_async(request)
        self.executor.spin_until_future_complete(future, timeout_sec=20)
        assert future.done(), f"{client.srv_name} did not answer"
        return future.result()

    def state(self) -> str:
        return str(self._call(self._get, GetState.Request()).current_state.label)

    def change(self, transition: int) -> bool:
        request = ChangeState.Request()
        request.transition.id = transition
        return bool(self._call(self._change, request).success)

    def close(self) -> None:
        self.node.destroy_node()
        self.context.try_shutdown()


def test_the_lifecycle_services_bring_an_agent_up_pause_it_and_shut_it_down(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    agent = start_node(processes, PLANT, tmp_path, params={**FAST, "start_state": "unconfigured"}, ready_text=None)
    operator = LifecycleClient("first_order_plant_agent")
    try:
        assert operator.state() == "unconfigured"
        assert operator.change(Transition.TRANSITION_CONFIGURE)
        assert operator.state() == "inactive"
        with RLClient(connect_timeout=20) as client:
            with pytest.raises(AgentInactiveError, match="not active"):
                client.reset(options=[0.0])
            assert operator.change(Transition.TRANSITION_ACTIVATE)
            assert operator.state() == "active"
            client.reset(options=[0.0])
            assert client.step([1.0]).seq == 1
            # Deactivated mid-episode: the client's next step ends in a typed error.
            assert operator.change(Transition.TRANSITION_DEACTIVATE)
            with pytest.raises(EpisodeEndedError, match="deactivated") as ended:
                client.step([1.0])
            assert ended.value.outcome == "DEACTIVATED"
            with pytest.raises(AgentInactiveError):
                client.reset(options=[0.0])
            assert operator.change(Transition.TRANSITION_ACTIVATE)
            client.reset(options=[0.0])
            assert client.step([1.0]).seq == 1
            assert operator.change(Transition.TRANSITION_DEACTIVATE)
        # Cleanup releases everything: configure makes it all again.
        assert operator.change(Transition.TRANSITION_CLEANUP)
        assert operator.state() == "unconfigured"
        assert operator.change(Transition.TRANSITION_CONFIGURE)
        assert operator.change(Transition.TRANSITION_ACTIVATE)
        with RLClient(connect_timeout=20) as client:
            client.reset(options=[0.0])
            assert client.step([1.0]).seq == 1
        assert operator.change(Transition.TRANSITION_ACTIVE_SHUTDOWN)
        assert agent.wait(timeout=10) == 0
    finally:
        operator.close()


def test_start_state_inactive_leaves_a_configured_agent_holding_for_an_operator(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    start_node(processes, PLANT, tmp_path, params={**FAST, "start_state": "inactive"}, ready_text=None)
    operator = LifecycleClient("first_order_plant_agent")
    try:
        assert operator.state() == "inactive"
        with RLClient(connect_timeout=20) as client:
            with pytest.raises(AgentInactiveError, match="not active"):
                client.reset(options=[0.0])
            assert operator.change(Transition.TRANSITION_ACTIVATE)
            client.reset(options=[0.0])
    finally:
        operator.close()


def test_a_bad_parameter_fails_configure_naming_it_and_leaves_the_node_unconfigured(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    agent = start_node(
        processes, PLANT, tmp_path, params={**FAST, "start_state": "unconfigured", "control_rate": 0.5}, ready_text=None
    )
    operator = LifecycleClient("first_order_plant_agent")
    try:
        assert not operator.change(Transition.TRANSITION_CONFIGURE)
        assert operator.state() == "unconfigured"
        assert agent.running()
        assert "parameter 'control_rate'" in agent.log_text()
    finally:
        operator.close()


def test_a_panda_deactivated_mid_motion_brakes_to_rest_within_the_limits(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    from test_panda import limit_violations

    start_panda_mock(processes, tmp_path, speed=1.0)
    start_panda_agent(processes, tmp_path)
    operator = LifecycleClient("panda_agent")
    speeds: list[float] = []  # the arm's fastest joint, per joint state
    operator.node.create_subscription(
        JointState, "/franka/joint_states", lambda m: speeds.append(float(np.abs(m.velocity).max())), sensor_qos(100)
    )

    def take_joint_states(count: int) -> None:
        for _ in range(count):
            operator.executor.spin_once(timeout_sec=0.01)

    try:
        with RLClient(connect_timeout=20) as client:
            client.reset(seed=1)
            for _ in range(8):
                client.step([1.0, 1.0, 1.0])
                take_joint_states(20)
            moving = max(speeds[-20:], default=0.0)
            assert operator.change(Transition.TRANSITION_DEACTIVATE)
            with pytest.raises(EpisodeEndedError) as ended:
                client.step([1.0, 1.0, 1.0])
            assert ended.value.outcome == "DEACTIVATED"
        assert moving > 0.05, f"the arm was not moving when deactivated ({moving} rad/s)"
        speeds.clear()
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and (len(speeds) < 100 or max(speeds[-100:]) > 1e-3):
            operator.executor.spin_once(timeout_sec=0.05)
        assert len(speeds) >= 100 and max(speeds[-100:]) <= 1e-3, "the arm did not come to rest"
        assert limit_violations() == 0
        assert operator.state() == "inactive"
    finally:
        operator.close()


def test_training_pauses_while_the_agent_is_deactivated_and_goes_on_once_it_is_activated(
    processes: ProcessGroup, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """An operator's pause: with on_agent_lost="truncate" the episode ends truncated,
    saying why, and the next reset waits until the agent is active again, saying so; the
    agent says its refusal of the retried resets once, not at each."""
    agent = start_node(processes, PLANT, tmp_path, params=FAST)
    operator = LifecycleClient("first_order_plant_agent")
    env = PlantTrackingEnv(on_agent_lost="truncate", agent_wait_timeout=60, client_options={"connect_timeout": 20})
    try:
        env.reset(seed=0)
        env.step(np.array([0.5], dtype=np.float32))
        assert operator.change(Transition.TRANSITION_DEACTIVATE)
        _, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
        assert truncated and not terminated and reward == 0.0
        assert "DEACTIVATED" in info["truncated_reason"]
        paused = 4.0  # (retried after AGENT_LIVELINESS_S without news, every INACTIVE_RETRY_S)
        activate = threading.Timer(paused, operator.change, args=(Transition.TRANSITION_ACTIVATE,))
        started = time.monotonic()
        activate.start()
        _, info = env.reset(seed=1)  # waits for the activation
        assert time.monotonic() - started >= paused
        assert info["seq"] == 0 and env.step(np.array([0.5], dtype=np.float32))[4]["seq"] == 1
        activate.join()
    finally:
        env.close()
        operator.close()
    said = capfd.readouterr().err
    assert "waiting for agent '/' to come back (up to 60 s): " in said and "answers again after" in said, said
    refusals = [line for line in agent.log_text().splitlines() if "rejected an episode" in line]
    assert len(refusals) == 1 and "the agent is not active" in refusals[0], refusals
