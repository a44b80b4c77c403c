"""The Panda agent driving the MuJoCo mock over real DDS: motion, limits, resets, the
main job's process set, and a short end-to-end training run."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Time
from helpers import run_module, start_node
from helpers import start_panda_agent as start_agent
from helpers import start_panda_mock as start_mock
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import UInt64

from franka_agent.core.controller import Link
from franka_agent.core.profile_file import load_profile
from franka_agent.mock.mock_hardware_node import LATCHED
from franka_agent.robots import RECORDED_THINK_TIMES, read_limit_violations
from franka_agent.stall_guard import STOPPED_WHILE_SENDING
from spin_decoupler_ros.core.errors import AgentError
from spin_decoupler_ros.rl import DecoupledEnv, RLClient
from spin_decoupler_ros.tools.paths import find_config
from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup

PANDA = load_profile("panda")

MOCK = "franka_agent.mock.mock_hardware_node"
AGENT = "franka_agent.panda_agent_node"
CONFIG = find_config("panda_reach.yaml", package="franka_agent")
# The free-running tests give the mock and the agent real-time priority, as a real arm's
# controller and agent are deployed (README: The Franka Emika Panda), where allowed.
REALTIME = int(os.environ.get("SPIN_DECOUPLER_TEST_REALTIME", "10"))
TCP = slice(14, 17)
WORKSPACE_LOW, WORKSPACE_HIGH = np.array([0.2, -0.45, 0.05]), np.array([0.75, 0.45, 0.8])
# How far the measured hand may be outside the workspace box, which bounds every commanded
# point (the mock checks each): the joint controller's tracking error with franka_ros2's
# gains, at the limits. Measured over 1,500 adversarial steps flat out: 2.2 cm in ee_delta
# (its Cartesian speed and acceleration limits), 5.2 cm in joint_delta (docs/faults.md).
HAND_STRAY = {"ee_delta": 0.035, "joint_delta": 0.08}  # m


def hand_outside_box(tcp: np.ndarray) -> float:
    """How far (m) the measured hand ``tcp`` is outside the workspace box; 0 inside."""
    return float(max(np.max(WORKSPACE_LOW - tcp), np.max(tcp - WORKSPACE_HIGH), 0.0))


def start_panda(processes: ProcessGroup, log_dir: Path, speed: float = 4.0, **agent: object) -> None:
    start_mock(processes, log_dir, speed)
    start_agent(processes, log_dir, **agent)


class Listener:
    """A private node that keeps the latest message it hears on ``topic``."""

    def __init__(self, msg_type: type, topic: str, qos: QoSProfile | int = 10) -> None:
        from spin_decoupler_ros.rl.client import init_private_context

        self.topic = topic
        self.latest: Any = None
        self._context = init_private_context()
        self._node = Node("topic_listener", context=self._context)
        self._node.create_subscription(msg_type, topic, self._keep, qos)
        self._executor = rclpy.executors.SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self._node)

    def _keep(self, msg: Any) -> None:
        self.latest = msg

    def spin_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._executor.spin_once(timeout_sec=0.01)

    def wait(self, timeout: float = 10.0) -> Any:
        """The next message heard (fails if none comes within ``timeout``)."""
        self.latest = None
        deadline = time.monotonic() + timeout
        while self.latest is None and time.monotonic() < deadline:
            self._executor.spin_once(timeout_sec=0.1)
        assert self.latest is not None, f"nothing heard on {self.topic} within {timeout} s"
        return self.latest

    def wait_until(self, condition: Any, timeout: float = 10.0) -> Any:
        """The first message heard (the latest kept, for a latched topic) that meets
        ``condition``; fails if none does within ``timeout``."""
        deadline = time.monotonic() + timeout
        while not (self.latest is not None and condition(self.latest)) and time.monotonic() < deadline:
            self._executor.spin_once(timeout_sec=0.05)
        assert self.latest is not None and condition(self.latest), f"{self.topic}: last heard {self.latest}"
        return self.latest

    def close(self) -> None:
        self._node.destroy_node()
        self._context.try_shutdown()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def first_message(msg_type: type, topic: str, qos: QoSProfile | int = 10, timeout: float = 10.0) -> Any:
    """The first message a fresh node hears on ``topic`` (fails if none comes)."""
    with Listener(msg_type, topic, qos) as listener:
        return listener.wait(timeout)


def limit_violations(timeout: float = 10.0) -> int:
    """The mock's latched count of limit violations (what the main job reports too)."""
    count = read_limit_violations([""], timeout)["/"]
    assert count is not None, "the mock published no violation count"
    return count


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
    home = panda_client.reset(options=PANDA.home)
    np.testing.assert_allclose(home.observation[:7], PANDA.home, atol=5e-3)
    np.testing.assert_allclose(home.observation[7:14], 0.0, atol=0.02)
    np.testing.assert_allclose(home.observation[TCP], PANDA.tcp_position(PANDA.home), atol=5e-3)
    noisy = panda_client.reset(seed=7).observation[:7]
    assert 0 < np.max(np.abs(noisy - PANDA.home)) <= 0.1 + 5e-3  # reset_noise 0.1 rad


def test_a_reach_env_resetting_here_starts_where_a_success_left_the_arm(panda_client: RLClient) -> None:
    """reset_from="here": after a success the next episode starts where the arm stands
    (the last answer's joint positions, reached again after braking); after a failure,
    at home; the evaluation's resets go home as ever (algorithms.evaluate_policy)."""
    from franka_agent.reach_task import ReachEnv

    env = ReachEnv(client=panda_client, reset_from="here", max_episode_steps=40)
    observation, _ = env.reset(seed=0)
    assert np.max(np.abs(observation[:7] - PANDA.home)) <= 0.1 + 5e-3  # the first episode starts at home
    terminated = truncated = False
    while not (terminated or truncated):  # a proportional policy on the error (decimetres)
        observation, _, terminated, truncated, _ = env.step(np.clip(observation[-3:] * 3.0, -1.0, 1.0))
    assert terminated, "the proportional policy did not reach the target"
    again, _ = env.reset()
    np.testing.assert_allclose(again[:7], observation[:7], atol=5e-3)
    while not truncated:  # standing still: a failure
        _, _, _, truncated, _ = env.step(np.zeros(3, dtype=np.float32))
    home, _ = env.reset(seed=0)
    assert np.max(np.abs(home[:7] - PANDA.home)) <= 0.1 + 5e-3


def test_reset_options_other_than_a_pose_end_the_episode_naming_them(panda_client: RLClient) -> None:
    """NaN joint positions are refused before the arm is told anything; it holds, and the
    next good reset is served."""
    panda_client.reset(seed=0)
    with pytest.raises(AgentError, match=r"reset options \[nan"):
        panda_client.reset(options=np.full(7, np.nan))
    home = panda_client.reset(options=PANDA.home)
    np.testing.assert_allclose(home.observation[:7], PANDA.home, atol=5e-3)
    assert limit_violations() == 0


def test_the_panda_refuses_a_then_action(panda_client: RLClient) -> None:
    """The Panda takes no then_action (PandaAgent.then_action_refusal): its description
    says so, an env asking for one and a client sending one are refused before anything
    is sent, and the agent rejects one sent all the same, naming why, and serves the
    next episode."""
    assert not panda_client.description.takes_then_action
    with pytest.raises(ValueError, match=r"then_action=True, but agent .* takes no then_action"):
        DecoupledEnv(client=panda_client, then_action=True)
    panda_client.reset(seed=0)
    with pytest.raises(ValueError, match="takes no then_action"):
        panda_client.step(np.zeros(3), then_action=np.zeros(3))
    panda_client.description.takes_then_action = True  # a client that does not check
    with pytest.raises(AgentError, match="names a then_action, but this agent takes none: the Panda agent"):
        panda_client.step(np.zeros(3), then_action=np.zeros(3))
    panda_client.reset(seed=0)
    assert panda_client.step(np.zeros(3)).seq == 1


@pytest.mark.parametrize("pattern", ["extremes", "flip"])
def test_adversarial_actions_never_violate_the_limits(panda_client: RLClient, pattern: str) -> None:
    rng = np.random.default_rng(3)
    panda_client.reset(seed=1)
    action = np.ones(3)
    for step in range(150):
        action = -action if pattern == "flip" else rng.choice([-1.0, 1.0], size=3)
        answer = panda_client.step(action)
        # The measured hand, at every step: within the box but for the tracking error.
        assert hand_outside_box(answer.observation[TCP]) <= HAND_STRAY["ee_delta"], (step, answer.observation[TCP])
    # Held (0.5 s of zero actions), the hand is back in the box, but for the few mm of
    # tracking error left; and the mock saw no bad command.
    for _ in range(5):
        held = panda_client.step([0.0, 0.0, 0.0]).observation
    assert hand_outside_box(held[TCP]) <= 5e-3, held[TCP]
    assert limit_violations() == 0


def free_running_panda(processes: ProcessGroup, tmp_path: Path) -> tuple[NodeProcess, Path]:
    """The mock at real time and not waiting for commands, as a real arm runs on whatever
    the agent does, recording every violation; and the agent. Returns the agent and the
    violation records' path."""
    violation_log = tmp_path / "violations.jsonl"
    start_mock(
        processes, tmp_path, speed=1.0, lockstep=False, violation_log=str(violation_log), realtime_priority=REALTIME
    )
    # (A state_timeout longer than the stalls: a stalled agent's last joint state is old
    # when it wakes, which can rightly fail the step; that is not what these test.)
    return start_agent(processes, tmp_path, state_timeout=3.0, realtime_priority=REALTIME), violation_log


def assert_no_violation_but_of_stopped_sends(violation_log: Path, agent: NodeProcess) -> None:
    """No limit broken, but by a command that a stop caught between the agent's last
    check and its leaving: it reaches the controller after its first point, and the
    controller jumps onto its own segment, as joint_trajectory_controller does; nothing
    on the agent's side can take that back (panda_agent_node.py, ``_command``). Every
    violation must then be on such a late command, and the agent must have said, once
    for each, that it was stopped while sending."""
    if limit_violations() == 0:
        return
    records = violation_log.read_text() if violation_log.exists() else ""
    entries = [json.loads(line) for line in records.splitlines() if line.strip()]
    violations = [entry for entry in entries if "violation" in entry]
    assert violations, f"violations counted but none recorded:\n{records}"
    late_commands = set()
    for violation in violations:
        command = violation.get("trajectory")
        # (Its first point is the last one sent at or before its stamp, on the segment the
        # controller was already following: late means past the first point after it.)
        ahead = [t for t in command["points_ns"] if t > 0] if command is not None else []
        assert ahead and command["late_ns"] > ahead[0], f"a violation on a command that arrived in time:\n{records}"
        late_commands.add(command["stamp_ns"])
    reported = agent.log_text().count(STOPPED_WHILE_SENDING)
    assert len(late_commands) <= reported, (
        f"{len(late_commands)} late command(s) broke a limit, {reported} stop(s) while sending reported:\n{records}"
    )


def stall(agent: NodeProcess, seconds: float, arm: Listener | None = None) -> None:
    """SIGSTOP the agent for ``seconds`` (spinning ``arm`` meanwhile), then SIGCONT."""
    agent.kill(signal.SIGSTOP)
    try:
        if arm is not None:
            arm.spin_for(seconds)
        else:
            time.sleep(seconds)
    finally:
        agent.kill(signal.SIGCONT)


def test_an_agent_frozen_mid_motion_leaves_the_arm_braked_and_resumes_within_the_limits(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    """SIGSTOP the agent while the arm moves at speed, the mock's time running on as a real
    arm's does: the last command's braking tail stops the arm, and the agent, woken, carries
    on from there, whatever it was doing when it stopped (planning, sending); the mock
    counts no violation but on a command the stop held back inside its send, which the
    agent reports."""
    agent, violation_log = free_running_panda(processes, tmp_path)
    with (
        RLClient(connect_timeout=30, reset_timeout=30) as client,
        Listener(JointState, "/franka/joint_states", qos_profile_sensor_data) as arm,
    ):
        client.reset(seed=0)
        arm.wait()
        for pushes in range(3):
            for _ in range(20):  # (after a stall the agent may wait for the arm to rest first)
                moving = client.step([1.0, -1.0, -1.0] if pushes % 2 == 0 else [-1.0, 1.0, 1.0]).observation[7:14]
                if np.max(np.abs(moving)) > 0.2:
                    break
            assert np.max(np.abs(moving)) > 0.2, moving  # at speed when it freezes
            agent.kill(signal.SIGSTOP)
            try:
                arm.spin_for(0.8)
                state = arm.wait(timeout=10.0)  # the first state the mock publishes from 0.8 s into the freeze
            finally:
                agent.kill(signal.SIGCONT)
            velocity = state.velocity
            assert np.max(np.abs(velocity)) < 0.02, velocity  # braked to rest, not holding on
        for _ in range(3):  # the woken agent's first commands are what could jump
            client.step([0.0, 0.0, 0.0])
    assert_no_violation_but_of_stopped_sends(violation_log, agent)


def test_stalls_while_braking_while_resetting_and_between_steps_break_no_limit(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    """Stalls of 0.05-1.5 s at the moments the arm is most exposed: while it brakes from
    speed (a zero action), while a reset moves it, and between two steps; after each,
    the next step (or the reset) is served, and the mock counts no violation but on a
    command a stall held back inside its send, which the agent reports."""
    agent, violation_log = free_running_panda(processes, tmp_path)
    rng = np.random.default_rng(7)
    with RLClient(connect_timeout=30, reset_timeout=30) as client:
        client.reset(seed=0)
        for trial in range(4):
            for _ in range(4):
                client.step([1.0, -1.0, -1.0] if trial % 2 == 0 else [-1.0, 1.0, 1.0])
            client.step([0.0, 0.0, 0.0])  # braking from speed...
            stall(agent, float(rng.uniform(0.05, 1.5)))  # ...and stalled in the middle of it
            assert client.step([0.0, 0.0, 0.0]).observation.shape == (17,)
            # A reset, stalled while it moves the arm home; it still ends at its start pose.
            client.channel.send_reset(trial, ())
            time.sleep(float(rng.uniform(0.05, 0.4)))
            stall(agent, float(rng.uniform(0.05, 1.5)))
            answer = client._wait(30.0, "reset")
            assert answer.seq == 0
            # Between two steps: the learner is quiet while the agent is stalled; its next
            # step resumes the episode.
            client.step([0.5, 0.5, 0.5])
            stall(agent, float(rng.uniform(0.05, 1.5)))
            assert client.step([-0.5, -0.5, -0.5]).seq == 2
    assert_no_violation_but_of_stopped_sends(violation_log, agent)


@pytest.mark.parametrize("use_sim_time", [True, False])
def test_a_slow_send_on_a_waiting_clock_is_not_uncertain(ros_domain: dict[str, str], use_sim_time: bool) -> None:
    """A publish that took longer than half the lead may have left too late on wall time;
    on a simulated clock only if the newest /clock has moved past the command's lead. A
    clock that waits for the agent (the lockstep mock) has not, so the agent goes on
    commanding (marking it uncertain would wait for an arm that cannot come to rest)."""
    from rosgraph_msgs.msg import Clock

    from franka_agent.panda_agent_node import PandaAgent
    from spin_decoupler_ros.node_runner import bring_up

    previous = signal.getsignal(signal.SIGCONT)
    rclpy.init(args=["--ros-args", "-p", f"use_sim_time:={str(use_sim_time).lower()}"])
    try:
        agent = PandaAgent()
        bring_up(agent)
        source = rclpy.create_node("clock_source")
        clock = source.create_publisher(Clock, "/clock", 10)
        stamp_ns = 5_000_000_000
        lead_ns = agent.settings.command_lead_ns

        def heard(clock_ns: int) -> None:
            """Publish ``clock_ns`` until the agent's /clock reader has it."""
            sec, nanosec = divmod(clock_ns, 1_000_000_000)
            deadline = time.monotonic() + 10.0
            while agent._guard.command_time_ns() < clock_ns and time.monotonic() < deadline:
                clock.publish(Clock(clock=Time(sec=sec, nanosec=nanosec)))
                time.sleep(0.01)
            assert agent._guard.command_time_ns() >= clock_ns, "the agent never heard the /clock"

        slow_send = time.monotonic() - 10 * agent._guard.stall_wall_s
        if use_sim_time:
            heard(stamp_ns)
            assert not agent._guard.sent_late(time.monotonic(), stamp_ns)
            assert not agent._guard.sent_late(slow_send, stamp_ns)  # the clock waited
            heard(stamp_ns + lead_ns)
            assert agent._guard.sent_late(slow_send, stamp_ns)  # the clock ran on meanwhile
        else:
            now_ns = agent.now_ns()
            assert not agent._guard.sent_late(time.monotonic(), now_ns)
            assert agent._guard.sent_late(slow_send, now_ns)  # wall time always runs on
        source.destroy_node()
        agent.destroy_node()
    finally:
        rclpy.try_shutdown()
        signal.signal(signal.SIGCONT, previous)


@pytest.mark.parametrize("stopped", [True, False])
def test_a_stop_inside_a_send_is_reported_and_commanding_waits_for_the_arm(
    ros_domain: dict[str, str], capfd: pytest.CaptureFixture[str], stopped: bool
) -> None:
    """A SIGCONT that the agent takes as its publish returns (it was stopped inside the
    send, past every check): the command may reach the controller late, so the agent
    says so and commands nothing more until the arm rests; a send without a stop goes on."""
    from franka_agent.panda_agent_node import PandaAgent
    from spin_decoupler_ros.node_runner import bring_up

    previous = signal.getsignal(signal.SIGCONT)
    rclpy.init()
    try:
        agent = PandaAgent()
        bring_up(agent)
        agent.arm.keep(agent.now_ns(), PANDA.home.copy(), np.zeros(PANDA.dof))
        agent.on_action_start(np.array([1.0, -1.0, -1.0]))
        from trajectory_msgs.msg import JointTrajectory

        # Into a topic no controller reads, nothing is planned or sent (a new plan's first
        # command goes once: lost, the arm would hold while the agent believed it moving).
        agent._command()
        assert agent.controller.link is Link.NONE and "no controller subscribes" in capfd.readouterr().err
        agent.create_subscription(JointTrajectory, agent.settings.command_topic, lambda _: None, 10)
        deadline = time.monotonic() + 10.0
        while agent._command_pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        publish = agent._command_pub.publish
        sent: list[object] = []

        def send(message: object) -> None:
            publish(message)
            sent.append(message)
            if stopped:
                os.kill(os.getpid(), signal.SIGCONT)  # (its handler runs as Python resumes)

        agent._command_pub.publish = send  # type: ignore[method-assign,assignment]
        agent._command()
        assert len(sent) == 1
        assert agent.controller.uncertain == stopped
        assert (STOPPED_WHILE_SENDING in capfd.readouterr().err) == stopped
        agent.destroy_node()
    finally:
        rclpy.try_shutdown()
        signal.signal(signal.SIGCONT, previous)


def test_on_a_waiting_clock_a_tick_reads_the_state_stamped_at_its_time(ros_domain: dict[str, str]) -> None:
    """Under a timing model on a lockstep clock, what a tick reads is the joint state
    stamped at its time, whatever the order the two topics arrive in: one that comes
    after the /clock that made the tick is waited for, and one stamped later (the mock
    ran ahead) is kept for the tick at its time. So a seeded run repeats."""
    import threading

    from rosgraph_msgs.msg import Clock

    from franka_agent.panda_agent_node import PandaAgent
    from spin_decoupler_ros.node_runner import bring_up

    previous = signal.getsignal(signal.SIGCONT)
    rclpy.init(
        args=["--ros-args", "-p", "use_sim_time:=true", "-p", "timing_model:=none", "-p", "joint_states_topic:=/js"]
    )
    try:
        agent = PandaAgent()
        bring_up(agent)
        assert agent.waits_on_clock
        source = rclpy.create_node("clock_and_state_source")
        clock = source.create_publisher(Clock, "/clock", 10)
        states = source.create_publisher(JointState, "/js", 10)
        base_ns, period_ns = 5_000_000_000, agent.params.control_period_ns

        def stamp(clock_ns: int) -> Time:
            sec, nanosec = divmod(clock_ns, 1_000_000_000)
            return Time(sec=sec, nanosec=nanosec)

        def state(k: int) -> JointState:
            """The arm's state at tick k: its first joint at k (rad), to tell them apart."""
            message = JointState(name=list(PANDA.joint_names), position=[float(k)] + [0.0] * 6, velocity=[0.0] * 7)
            message.header.stamp = stamp(base_ns + k * period_ns)
            return message

        def tick(k: int) -> float:
            """Move the agent's clock to tick k (as a tick sees it) and read the state."""
            deadline = time.monotonic() + 10.0
            while agent.now_ns() < base_ns + k * period_ns and time.monotonic() < deadline:
                clock.publish(Clock(clock=stamp(base_ns + k * period_ns)))
                rclpy.spin_once(agent, timeout_sec=0.01)
            assert agent.now_ns() == base_ns + k * period_ns, "the agent never heard the /clock"
            q, _ = agent.arm.measured()
            return float(q[0])

        def delivered(k: int) -> None:
            """Publish tick k's state until the agent's reader has it queued."""
            states.publish(state(k))
            time.sleep(0.2)

        for k in (0, 1):  # the topic's grid: a state at every tick
            delivered(k)
            assert tick(k) == k
        delivered(2)
        delivered(3)  # the mock ran ahead of the clock
        assert tick(2) == 2.0
        assert tick(3) == 3.0  # kept from the take at tick 2
        # Tick 5's /clock overtakes its state, which comes 0.1 s later: the tick waits for it.
        delivered(4)
        late = threading.Timer(0.1, lambda: states.publish(state(5)))
        late.start()
        assert tick(5) == 5.0
        late.join()
        source.destroy_node()
        agent.destroy_node()
    finally:
        rclpy.try_shutdown()
        signal.signal(signal.SIGCONT, previous)


def test_mock_refuses_a_trajectory_that_ends_moving_as_newer_controllers_do(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    """joint_trajectory_controller refuses, by default since Jazzy, a trajectory whose last
    point still moves; the mock does too, and counts it (the agent must never send one)."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from spin_decoupler_ros.rl.client import init_private_context

    start_node(processes, MOCK, tmp_path, params_files=(CONFIG,), ready_text="mock arm ready")
    context = init_private_context()
    node = Node("rogue_commander", context=context)
    publisher = node.create_publisher(JointTrajectory, "/joint_trajectory_controller/joint_trajectory", 10)
    deadline = time.monotonic() + 10
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    goal = PANDA.home + 0.01
    moving = JointTrajectoryPoint(
        positions=list(goal), velocities=[0.1] * 7, time_from_start=Duration(nanosec=500_000_000)
    )
    try:
        with (
            Listener(UInt64, "/mock_hardware/limit_violations", LATCHED) as violations,
            Listener(JointState, "/franka/joint_states", qos_profile_sensor_data) as arm,
        ):
            violations.wait_until(lambda count: count.data == 0)
            # A writer can see the mock's reader before that reader knows the writer (DDS
            # discovery is not symmetric), and a sample sent then is not delivered: send
            # the refused trajectory until the mock has counted it.
            deadline = time.monotonic() + 10
            while violations.latest.data == 0 and time.monotonic() < deadline:
                publisher.publish(JointTrajectory(joint_names=list(PANDA.joint_names), points=[moving]))
                violations.spin_for(0.2)
            refused = violations.latest.data
            assert refused >= 1, "the mock never counted the trajectory that ends moving"
            # Refused: not followed, the arm still rests where it started.
            assert np.allclose(arm.wait().position, PANDA.home, atol=1e-3)
            at_rest = JointTrajectoryPoint(positions=list(goal), velocities=[0.0] * 7, time_from_start=Duration(sec=1))
            publisher.publish(JointTrajectory(joint_names=list(PANDA.joint_names), points=[at_rest]))
            # The accepted one is followed: the arm gets to its goal and rests there.
            arm.wait_until(lambda state: np.allclose(state.position, goal, atol=2e-3))
            violations.spin_for(0.2)
            assert violations.latest.data == refused
    finally:
        node.destroy_node()
        context.try_shutdown()


def test_mock_publishes_what_franka_ros2_publishes(processes: ProcessGroup, tmp_path: Path) -> None:
    from spin_decoupler_ros.rl.client import init_private_context

    start_node(processes, MOCK, tmp_path, params_files=(CONFIG,), ready_text="mock arm ready")
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
    assert list(state.name) == list(PANDA.joint_names)
    np.testing.assert_allclose(state.position, PANDA.home, atol=1e-3)


def test_pipeline_refuses_real_hardware_without_launch(ros_domain: dict[str, str]) -> None:
    done = run_module("franka_agent.pipeline", "--use-mock-hardware", "false", timeout=60)
    assert done.returncode == 2
    assert "ros2 launch franka_agent panda_train.launch.py robot:=panda use_mock_hardware:=false" in done.stderr


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
        "sim_robot.log",  # the mock and the agent in one process, under the default timing model
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
    ends = results["eval_per_episode"]  # each episode's end: success, how far, how close it came
    assert len(ends) == 2 and all(e["closest_distance_m"] <= e["final_distance_m"] for e in ends)
    assert [e["success"] for e in ends].count(True) / 2 == results["success_rate"]
    assert results["mock_limit_violations"] == 0  # every command the agent sent was within the limits
    # Trained faster than real time, the policy is then evaluated at real time, as on the arm.
    assert results["evaluation"].startswith("at real time") and "at real time" in output
    evaluated = json.loads((run_dir / "real_time_eval" / "results.json").read_text())
    assert evaluated["timing_model"] == "wall" and evaluated["success_rate"] == results["success_rate"]
    assert evaluated["evaluated_model"] == str(run_dir / "model.zip")
    assert results["eval_mock_limit_violations"] == 0
    assert results["timing_model"].startswith("replay:") and results["timing_model"].endswith(RECORDED_THINK_TIMES)
    assert_the_recording_holds_every_step_once_in_order(run_dir / "run.mcap", rows)
    assert "tensorboard --logdir" in (run_dir / "README.md").read_text()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events,) = run_dir.glob("tensorboard/SAC_1/events.out.tfevents.*")
    tags = EventAccumulator(str(events)).Reload().Tags()["scalars"]
    assert {"timing/lat_p50_ms", "timing/think_p99_ms", "timing/late_tick_percent", "rollout/ep_rew_mean"} <= set(tags)


def assert_the_recording_holds_every_step_once_in_order(path: Path, rows: list[dict[str, str]]) -> None:
    """run.mcap, read back with the mcap reader: every command once, in order, each with its
    answer, the first answers' LAT those of steps.csv; timing, status, joint states and the
    controller's trajectories beside them."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    from spin_decoupler_msgs.msg import StepCommand

    by_topic: dict[str, list[Any]] = {}
    schemas: dict[str, str] = {}
    with open(path, "rb") as file:
        reader = make_reader(file, decoder_factories=[DecoderFactory()])
        for schema, channel, _, decoded in reader.iter_decoded_messages():
            by_topic.setdefault(channel.topic, []).append(decoded)
            schemas[channel.topic] = schema.name if schema else ""
    assert schemas == {
        "/panda/step_command": "spin_decoupler_msgs/msg/StepCommand",
        "/panda/step_result": "spin_decoupler_msgs/msg/StepResult",
        "/panda/step_timing": "spin_decoupler_msgs/msg/StepTiming",
        "/panda/status": "spin_decoupler_msgs/msg/AgentStatus",
        "/joint_states": "sensor_msgs/msg/JointState",
        "/joint_trajectory_controller/joint_trajectory": "trajectory_msgs/msg/JointTrajectory",
    }, schemas
    steps = [command for command in by_topic["/panda/step_command"] if command.kind == StepCommand.STEP]
    episodes: dict[bytes, list[int]] = {}
    for command in steps:
        episodes.setdefault(bytes(command.episode_id.uuid), []).append(command.seq)
    for seqs in episodes.values():
        assert seqs == list(range(1, len(seqs) + 1)), seqs  # once each, in order
    answers = [answer.seq for answer in by_topic["/panda/step_result"] if answer.seq > 0]
    assert answers == [command.seq for command in steps]  # one answer per command, in its order
    assert len(steps) >= len(rows)  # training, then the evaluation's steps
    recorded_lats = [
        answer.lat.sec + answer.lat.nanosec * 1e-9 for answer in by_topic["/panda/step_result"] if answer.seq > 0
    ]
    assert recorded_lats[: len(rows)] == pytest.approx([float(row["lat"]) for row in rows], abs=1e-6)
    assert len(by_topic["/panda/step_timing"]) >= len(rows) - 5  # best kept: the last ones may be in flight
    assert by_topic["/joint_states"] and by_topic["/joint_trajectory_controller/joint_trajectory"]


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
        deadline = time.monotonic() + 30.0
        while not (client.channel.status and client.channel.status.message == "episode running"):
            assert time.monotonic() < deadline, "the agent never accepted the reset"
            client.rl_node.spin_once(0.05)
        start_mock(processes, tmp_path)
        answer = client._wait(30.0, "reset")
        assert answer.seq == 0 and answer.observation.shape == (17,)


def test_joint_states_of_other_joints_on_the_same_topic_are_ignored(processes: ProcessGroup, tmp_path: Path) -> None:
    """On a shared joint-state topic, the gripper's and another arm's messages (here
    faster than the arm's own) neither stand in for the Panda's state nor starve it."""
    import threading

    from spin_decoupler_ros.rl.client import init_private_context

    start_panda(processes, tmp_path)
    context = init_private_context()
    node = Node("other_joints", context=context)
    publisher = node.create_publisher(JointState, "/franka/joint_states", qos_profile_sensor_data)
    gripper = JointState(name=["panda_finger_joint1", "panda_finger_joint2"], position=[0.04, 0.04])
    other_arm = JointState(name=[f"fr3_joint{i}" for i in range(1, 8)], position=[1.0] * 7, velocity=[2.0] * 7)
    stop = threading.Event()

    def publish_others() -> None:
        while not stop.is_set():
            publisher.publish(gripper)
            publisher.publish(other_arm)
            time.sleep(0.001)

    publishing = threading.Thread(target=publish_others, daemon=True)
    publishing.start()
    try:
        with RLClient(connect_timeout=30, reset_timeout=30) as client:
            answers = [client.reset(options=PANDA.home)]
            answers += [client.step([0.0, 0.0, 0.0]) for _ in range(20)]
    finally:
        stop.set()
        publishing.join()
        node.destroy_node()
        context.try_shutdown()
    for answer in answers:
        np.testing.assert_allclose(answer.observation[:7], PANDA.home, atol=5e-3)
        np.testing.assert_allclose(answer.observation[7:14], 0.0, atol=0.02)


def test_an_agent_without_joint_states_says_which_topic_it_waits_on(processes: ProcessGroup, tmp_path: Path) -> None:
    """No driver, no mock: the agent is ready (it holds nothing) and says, again and
    again, which topic it has no joint state on; once states come, that they do."""
    agent = start_agent(processes, tmp_path, use_sim_time=False)
    deadline = time.monotonic() + 20
    said = "no joint state on /franka/joint_states yet: commanding nothing (is the robot's driver, or the mock"
    while said not in agent.log_text():
        assert time.monotonic() < deadline, agent.log_text()
        time.sleep(0.2)
    start_mock(processes, tmp_path, speed=1.0)
    while "joint states arrive on /franka/joint_states: commanding the arm" not in agent.log_text():
        assert time.monotonic() < deadline + 20, agent.log_text()
        time.sleep(0.2)


def test_an_agent_asking_its_time_in_init_is_told_to_ask_from_setup(ros_domain: dict[str, str]) -> None:
    from spin_decoupler_ros.agent import AgentNode

    class EarlyAgent(AgentNode):
        def __init__(self) -> None:
            super().__init__("early_agent", action_low=[-1.0], action_high=[1.0], observation_size=1)
            self.started_ns = self.now_ns()  # (what an earlier skeleton showed)

    rclpy.init()
    try:
        with pytest.raises(RuntimeError, match=r"EarlyAgent asked now_ns\(\) before it was configured: .* setup\(\)"):
            EarlyAgent()
    finally:
        rclpy.shutdown()
