"""Stops the arm makes itself, end to end on the mock (mock, agent and the test as
processes): an injected reflex ends the episode with a typed reason within a bounded
time, the arm holds, the next reset calls the robot's error recovery and training goes
on; without a recovery the agent says what a person must do and refuses episodes until
it is activated again."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from helpers import start_panda_agent, start_panda_mock
from lifecycle_msgs.msg import Transition
from rclpy.client import Client
from std_srvs.srv import Trigger
from test_lifecycle import LifecycleClient
from test_panda import limit_violations

from spin_decoupler_ros.core import RobotStoppedError
from spin_decoupler_ros.rl import DecoupledEnv, RLClient
from spin_decoupler_ros.tools.processes import ProcessGroup

MOCK_RECOVERY = "trigger:/mock_hardware/error_recovery"
# Back and forth along x: the commanded hand never rests (3 cm per 0.1 s step).
BACK_AND_FORTH = (np.array([1.0, 0.0, 0.0]), np.array([-1.0, 0.0, 0.0]))
# Detected within the stop window (0.1 s) plus the command lead and a tick: in the
# step under way or the next (0.1 s each); three is the bound asserted.
MOST_STEPS_TO_DETECT = 3


def call_mock(operator: LifecycleClient, service: str, expect_success: bool = True) -> Trigger.Response:
    """Call one of the mock's std_srvs/Trigger services from the operator's node."""
    client: Client = operator.node.create_client(Trigger, f"/mock_hardware/{service}")
    assert client.wait_for_service(timeout_sec=20), f"no /mock_hardware/{service}"
    future = client.call_async(Trigger.Request())
    operator.executor.spin_until_future_complete(future, timeout_sec=20)
    response = future.result()
    assert response is not None and response.success == expect_success, f"{service}: {response}"
    operator.node.destroy_client(client)
    return response


def tcp(observation: np.ndarray) -> np.ndarray:
    return np.asarray(observation[14:17], dtype=np.float64)


def stop_seen(env: DecoupledEnv, operator: LifecycleClient) -> dict[str, object]:
    """Step back and forth, inject a reflex, and step on until the agent ends the episode:
    its info, once asserted it came typed within MOST_STEPS_TO_DETECT steps."""
    env.reset(seed=0)
    for step in range(6):
        _, _, _, truncated, _ = env.step(BACK_AND_FORTH[step % 2].astype(np.float32))
        assert not truncated
    call_mock(operator, "inject_stop")
    info: dict[str, object] = {}
    for steps_after in range(1, 20):
        _, reward, terminated, truncated, info = env.step(BACK_AND_FORTH[steps_after % 2].astype(np.float32))
        if truncated:
            break
    assert truncated and not terminated and reward == 0.0
    assert steps_after <= MOST_STEPS_TO_DETECT, f"detected only after {steps_after} steps"
    assert info["agent_outcome"] == "ROBOT_STOPPED"
    return info


def assert_training_goes_on(env: DecoupledEnv, observation: np.ndarray) -> None:
    """After the recovery and a reset to ``observation``: the arm follows the actions
    again, within the limits."""
    start = tcp(observation)
    moved = 0.0
    for step in range(10):
        observation, _, _, truncated, _ = env.step(BACK_AND_FORTH[0].astype(np.float32) * (0.5 if step else 1.0))
        assert not truncated, "training did not go on after the recovery"
        moved = max(moved, float(np.linalg.norm(tcp(observation) - start)))
    assert moved > 0.05, f"the arm did not follow after the recovery (moved {moved:.3f} m)"
    assert limit_violations() == 0


def test_a_reflex_ends_the_episode_typed_and_training_goes_on_after_the_recovery(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    mock = start_panda_mock(processes, tmp_path)
    agent = start_panda_agent(processes, tmp_path, recovery=MOCK_RECOVERY)
    operator = LifecycleClient("panda_agent")
    env = DecoupledEnv(on_agent_lost="truncate", agent_wait_timeout=60, client_options={"connect_timeout": 20})
    try:
        info = stop_seen(env, operator)
        assert "stopped on its own" in str(info["truncated_reason"])
        assert "error recovery" in str(info["truncated_reason"])  # what the next reset does
        # The next reset calls the mock's error recovery, then brings the arm to its start.
        observation, _ = env.reset(seed=1)
        assert "error recovery: the controller follows trajectories again" in mock.log_text()
        assert "the robot recovered" in agent.log_text()
        assert_training_goes_on(env, observation)
    finally:
        env.close()
        operator.close()


def test_without_a_recovery_a_person_must_act_and_episodes_wait_for_the_operator(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    start_panda_mock(processes, tmp_path, violation_log=str(tmp_path / "violations.jsonl"))
    agent = start_panda_agent(processes, tmp_path, recovery="none")
    operator = LifecycleClient("panda_agent")
    try:
        with RLClient(connect_timeout=20) as client:
            client.reset(seed=0)
            for step in range(4):
                client.step(BACK_AND_FORTH[step % 2])
            call_mock(operator, "inject_stop")
            with pytest.raises(RobotStoppedError) as stopped:
                for step in range(MOST_STEPS_TO_DETECT):
                    client.step(BACK_AND_FORTH[step % 2])
            assert stopped.value.needs_person and stopped.value.outcome == "ROBOT_STOPPED"
            assert "a person must act" in str(stopped.value) and "recovery: none" in str(stopped.value)
            assert "ros2 lifecycle set /panda_agent activate" in str(stopped.value)
            # Refused until the operator acts, saying why.
            with pytest.raises(RobotStoppedError, match="a person must act") as refused:
                client.reset(seed=1)
            assert refused.value.needs_person
            # The operator recovers the robot and brings the agent back.
            call_mock(operator, "error_recovery")
            assert operator.change(Transition.TRANSITION_DEACTIVATE)
            assert operator.change(Transition.TRANSITION_ACTIVATE)
            start = tcp(client.reset(seed=1).observation)
            for _ in range(6):
                answer = client.step(BACK_AND_FORTH[0])
            assert np.linalg.norm(tcp(answer.observation) - start) > 0.05
        assert "robot stopped" in agent.log_text()
        assert limit_violations() == 0
    finally:
        operator.close()


def test_a_recovery_that_does_not_answer_leaves_the_robot_to_a_person(processes: ProcessGroup, tmp_path: Path) -> None:
    start_panda_mock(processes, tmp_path)
    start_panda_agent(processes, tmp_path, recovery="trigger:/nobody/error_recovery")
    operator = LifecycleClient("panda_agent")
    try:
        with RLClient(connect_timeout=20) as client:
            client.reset(seed=0)
            call_mock(operator, "inject_stop")
            with pytest.raises(RobotStoppedError) as stopped:
                for step in range(MOST_STEPS_TO_DETECT + 1):
                    client.step(BACK_AND_FORTH[step % 2])
            assert not stopped.value.needs_person  # the next reset will try the recovery
            with pytest.raises(RobotStoppedError, match="could not be called") as failed:
                client.reset(seed=1)
            assert failed.value.needs_person and "a person must act" in str(failed.value)
    finally:
        operator.close()


def test_recoveries_by_action_leave_nothing_behind_in_the_agent(ros_domain: dict[str, str]) -> None:
    """A recovery by action (franka_ros2 v2.x's) is a goal each time the robot stopped:
    over a long run on a real arm, what the agent's action client keeps per goal must
    not grow with their number. (Any action type works: the goal is its default.)"""
    from rclpy.action import ActionServer
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    from franka_agent.recovery import FrankaActionRecovery
    from spin_decoupler_msgs.action import Episode
    from spin_decoupler_ros.rl.client import init_private_context

    context = init_private_context()
    node = Node("recovery_test", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)

    def recover(goal_handle):  # type: ignore[no-untyped-def]
        goal_handle.succeed()
        return Episode.Result()

    server = ActionServer(node, Episode, "/robot/error_recovery", execute_callback=recover)
    recovery = FrankaActionRecovery(node, "/robot/error_recovery", action_type=Episode)
    try:
        deadline = time.monotonic() + 20
        while not recovery._client.server_is_ready() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        for attempt in range(20):
            assert recovery.start() is None, "the recovery action is not available"
            outcome = None
            deadline = time.monotonic() + 20
            while outcome is None and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
                outcome = recovery.poll()
            assert outcome is not None and outcome.succeeded, f"recovery {attempt}: {outcome}"
        assert len(recovery._client._futures) <= 2, "futures of finished recoveries are kept"
    finally:
        server.destroy()
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()


FR3_RECOVERY_STEPS = (
    "error recovery: error recovered",
    "set_hardware_component_state: hardware component active",
    "switch_controller: controllers active",
)


def test_an_fr3_reflex_is_read_from_its_robot_state_and_recovered_in_three_steps(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    """The FR3 on franka_ros2 v2.4+ (the mock's Franka surface, on franka_msgs and
    controller_manager_msgs with the releases' fields): a reflex deactivates the hardware
    and its controller and sets robot_mode REFLEX; the agent reads the stop from the robot
    state, the next reset takes the three steps in order (the mock refuses any other way
    back, its one-call ~/error_recovery included), and training goes on."""
    from franka_agent.core.profile_file import load_profile
    from franka_agent.robots import mock_recovery

    fr3 = load_profile("fr3")
    assert mock_recovery("", fr3) == {"recovery": "franka_hardware:/action_server/error_recovery"}
    mock = start_panda_mock(processes, tmp_path, robot="fr3")
    agent = start_panda_agent(processes, tmp_path, robot="fr3", **mock_recovery("", fr3))
    operator = LifecycleClient("panda_agent")
    env = DecoupledEnv(on_agent_lost="truncate", agent_wait_timeout=60, client_options={"connect_timeout": 20})
    try:
        info = stop_seen(env, operator)
        refused = call_mock(operator, "error_recovery", expect_success=False)
        assert "three steps" in refused.message
        assert "robot_mode REFLEX on /franka_robot_state_broadcaster/robot_state (joint_reflex)" in str(
            info["truncated_reason"]
        )
        observation, _ = env.reset(seed=1)
        log = mock.log_text()
        steps_at = [log.find(f"]: {step}") for step in FR3_RECOVERY_STEPS]
        assert -1 not in steps_at and steps_at == sorted(steps_at), f"not the three steps in order:\n{log}"
        assert "the robot recovered" in agent.log_text()
        assert_training_goes_on(env, observation)
    finally:
        env.close()
        operator.close()


def test_a_limit_break_on_the_fr3_mock_is_a_reflex_its_robot_state_shows(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    """A Franka stops itself on a commanded jump (libfranka's motion generator checks):
    the FR3 mock counts the violation, deactivates its controller and publishes
    robot_mode REFLEX with the error that caused it, best effort, as franka_ros2 v3.3+."""
    from builtin_interfaces.msg import Duration
    from franka_msgs.msg import FrankaRobotState
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from franka_agent.core.profile_file import load_profile
    from franka_agent.robot_mode import STATE_QOS
    from spin_decoupler_ros.rl.client import init_private_context

    fr3 = load_profile("fr3")
    mock = start_panda_mock(processes, tmp_path, robot="fr3", lockstep=False)
    context = init_private_context()
    try:
        node = Node("fr3_commander", context=context)
        states: list[FrankaRobotState] = []
        node.create_subscription(FrankaRobotState, fr3.stop.topic, states.append, STATE_QOS)
        publisher = node.create_publisher(JointTrajectory, fr3.controller.command_topic, 10)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + 20
        while not states and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert states and states[-1].robot_mode == FrankaRobotState.ROBOT_MODE_MOVE
        # Joint 1 half a radian away in 10 ms: far beyond its acceleration limit.
        jump = JointTrajectoryPoint(positions=list(fr3.home + np.eye(7)[0] * 0.5), velocities=[0.0] * 7)
        jump.time_from_start = Duration(nanosec=10_000_000)
        publisher.publish(JointTrajectory(joint_names=list(fr3.joint_names), points=[jump]))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and states[-1].robot_mode != FrankaRobotState.ROBOT_MODE_REFLEX:
            executor.spin_once(timeout_sec=0.1)
        assert states[-1].robot_mode == FrankaRobotState.ROBOT_MODE_REFLEX, mock.log_text()
        errors = states[-1].current_errors
        raised = [name for name in errors.get_fields_and_field_types() if getattr(errors, name)]
        assert len(raised) == 1 and raised[0].startswith("joint_motion_generator_"), raised
        assert f"reflex ({raised[0]})" in mock.log_text()
        assert limit_violations() > 0
        node.destroy_node()
    finally:
        context.try_shutdown()
