"""ArmController (the agent's per-period logic) and the in-process reach env, without ROS;
lateness, stalls and uncertainty are in test_controller_lateness.py."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from arm_setup import BOX, PANDA, PERIOD, controller

from franka_agent.core.command_check import Violation, command_violations
from franka_agent.core.controller import ArmController, Command
from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.limits import MotionLimits
from franka_agent.core.profile import BUILT_IN_PROFILES
from franka_agent.core.profile_file import load_profile
from franka_agent.core.sim import ArmSim
from franka_agent.inprocess_env import InProcessReachEnv, _points


def test_nothing_is_commanded_before_a_measured_state() -> None:
    assert controller().command(0) is None


def sent_at(command: Command) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """A command's points by absolute time (ns)."""
    return {command.stamp_ns + t: point for t, point in zip(command.times_ns, command.points, strict=True)}


def test_a_new_action_never_changes_what_was_sent_up_to_the_horizon() -> None:
    c = controller()
    c.start(PANDA.home, 0)
    c.act(np.array([1.0, 0.0, 0.0]))
    commands = [c.command(k * PERIOD) for k in range(15)]
    assert commands[-1] is not None
    promised = sent_at(commands[-1])
    c.act(np.array([-1.0, 0.0, 0.0]))  # a change of course arrives between ticks
    following = c.command(15 * PERIOD)
    assert following is not None
    horizon = 15 * PERIOD + c.lead_periods * PERIOD
    kept = [t for t in sent_at(following) if t <= horizon]
    # (from the last point promised at or before now: the controller follows the message's
    # own segments, never a bridge from its previous command)
    last_before = max(t for t in promised if t <= 15 * PERIOD)
    assert kept == [t for t in promised if last_before <= t <= horizon] and len(kept) == c.lead_periods + 1
    for t in kept:
        np.testing.assert_array_equal(sent_at(following)[t][0], promised[t][0])
        np.testing.assert_array_equal(sent_at(following)[t][1], promised[t][1])
    # ... and from there on the new course: the hand comes back.
    x_before = c.kinematics.tcp(following.points[0][0])[0]
    later = [c.command((16 + k) * PERIOD) for k in range(80)][-1]
    assert later is not None and c.kinematics.tcp(later.points[0][0])[0] < x_before - 0.01


def test_a_new_plan_is_sent_once_until_its_first_point_is_reached() -> None:
    """After a (re)start the first command's first point lies ahead: the joint controller
    bridges there from its last command. Every further message would start that bridge
    again, one update off on Jazzy's controller (core/jtc_update.py), so nothing more is
    sent until the point is reached; from then on every command starts at a point the
    controller has already reached."""
    c = controller()
    c.start(PANDA.home, 0)
    c.act(np.array([1.0, 0.0, 0.0]))
    first = c.command(0)
    assert first is not None and min(first.times_ns) > 0
    reached = first.stamp_ns + first.times_ns[0]
    assert first.reaches_ns == reached  # a lockstep world runs to its first point
    k = 1
    while k * PERIOD < reached:
        assert c.bridging(k * PERIOD) and c.command(k * PERIOD) == dataclasses.replace(first, repeat=True)
        k += 1
    assert k > 1
    for _ in range(20):
        command = c.command(k * PERIOD)
        assert command is not None and not command.repeat and command.times_ns[0] <= 0 < command.times_ns[1]
        assert command.reaches_ns == command.stamp_ns + command.times_ns[1]  # the first point ahead, not the past one
        k += 1


def test_two_commands_at_one_clock_reading_plan_the_same() -> None:
    """A simulated clock can stand still between two ticks (the simulator waiting in
    lockstep): the second command sees no time pass, so it must repeat the plan, not
    divide by the zero interval (which once sent the mock accelerations of 70 rad/s^2)."""
    c = controller()
    c.start(PANDA.home, 0)
    c.act(np.array([1.0, -1.0, 1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a division by zero is a failure here
        for k in range(20):
            first, second = c.command(k * PERIOD), c.command(k * PERIOD)
            assert first is not None and second is not None
            for (q1, v1), (q2, v2) in zip(first.points, second.points, strict=True):
                assert np.isfinite(q2).all() and np.isfinite(v2).all()
                np.testing.assert_allclose(q2, q1, atol=1e-12)
                np.testing.assert_allclose(v2, v1, atol=1e-12)


def test_commands_are_stamped_now_with_points_a_period_apart_from_the_lead_on() -> None:
    c = controller(trajectory_points=4, lead_periods=3)
    c.start(PANDA.home, 123 * PERIOD)
    command = c.command(123 * PERIOD)
    assert command is not None and command.stamp_ns == 123 * PERIOD and command.period_ns == PERIOD
    assert command.times_ns == [3 * PERIOD, 4 * PERIOD, 5 * PERIOD, 6 * PERIOD]  # at rest: no braking to do


def test_every_command_ends_braking_to_rest_within_the_limits() -> None:
    """A joint controller that hears nothing more runs to the end of the last command:
    that end must be at rest, reached within the acceleration limits (and newer
    joint_trajectory_controllers refuse a trajectory that ends moving)."""
    c = controller()
    c.start(PANDA.home, 0)
    c.act(np.array([1.0, -1.0, -1.0]))
    longest = 0
    for k in range(40):
        command = c.command(k * PERIOD)
        assert command is not None
        velocities = np.array([v for _, v in command.points])
        np.testing.assert_array_equal(velocities[-1], 0.0)
        seconds = np.array(command.times_ns) / 1e9
        assert np.all(np.diff(seconds) > 0)
        rates = np.abs(np.diff(velocities, axis=0)) / np.diff(seconds)[:, None]
        assert np.all(rates <= c.limits.acceleration * (1 + 1e-6)), rates.max()
        longest = max(longest, len(command.points))
    # The arm got moving: the last point reached, the points sent before up to the
    # horizon (right after the first command's bridge, some of its braking knots among
    # them: test_a_new_plan_is_sent_once_until_its_first_point_is_reached), the plan,
    # and a braking knot per joint at most.
    assert 3 < longest <= 1 + (c.lead_periods - 1 + 7) + 3 + 7


def test_reset_goes_to_the_seeded_start_pose_and_reports_reaching_it() -> None:
    sim = ArmSim(PANDA)
    c = controller(reset_noise=0.1)
    c.start(sim.q, 0)
    c.begin_reset(5, np.zeros(0), sim.q, sim.dq)
    expected = PANDA.home + np.random.default_rng(5).uniform(-0.1, 0.1, 7)
    np.testing.assert_allclose(c.reset_goal, expected)
    now = 0
    for _ in range(500):
        if c.reset_reached(sim.q, sim.dq):
            break
        command = c.command(now)
        assert command is not None
        if not command.repeat:  # (not sent again)
            sim.command(_points(command), now / 1e9)
        sim.step(10)
        now += PERIOD
    else:
        pytest.fail("the reset never completed")
    np.testing.assert_allclose(sim.q, expected, atol=5e-3)


def test_a_reset_from_an_arm_pushed_into_a_corner_reaches_its_start_pose_inside_the_box() -> None:
    """Joint actions can leave the arm in a posture 2.3 rad from its start pose, the hand
    low in a corner, one the null space cannot turn into the start pose's. The reset
    must still get there, every command inside the limits and the box. (A direct joint
    move from there swung the hand to the floor, where the guard held it 1.8 rad short
    until the reset timed out: a fuzz run's failure.)"""
    corner = np.array([-0.98, 1.599, 0.705, -2.806, -1.52, 3.702, 2.847])  # sim time 0 here
    start_pose = np.array([-0.08, -0.73, 0.072, -2.418, 0.003, 1.573, 0.732])
    sim = ArmSim(PANDA)
    sim.place(corner)
    kinematics = ArmKinematics(PANDA)
    c = ArmController("joint_delta", MotionLimits(PANDA, velocity_fraction=0.5, acceleration_fraction=0.8), BOX, PERIOD)
    c.start(sim.q, 0)
    c.begin_reset(0, start_pose, sim.q, sim.dq)
    found: list[Violation] = []
    now = 0
    for _ in range(1500):  # the agent's reset_timeout, 15 s
        if c.reset_reached(sim.q, sim.dq):
            break
        command = c.command(now)
        assert command is not None
        points = _points(command)
        found += command_violations(points, BOX, kinematics)
        assert command.repeat or sim.command(points, now / 1e9)  # (a repeat is not sent again)
        sim.step(10)
        now += PERIOD
    else:
        pytest.fail(f"the reset never completed: {c.reset_error(sim.q):.3f} rad short")
    assert found + sim.violations == []
    np.testing.assert_allclose(sim.q, start_pose, atol=5e-3)


def test_reset_options_give_the_start_pose() -> None:
    c = controller()
    c.begin_reset(None, PANDA.home + 0.2, None, np.zeros(7))
    np.testing.assert_allclose(c.reset_goal, np.clip(PANDA.home + 0.2, c.limits.lower, c.limits.upper))


@pytest.mark.parametrize(
    "options",
    [np.full(7, np.nan), np.r_[PANDA.home[:6], np.inf], PANDA.home[:6], np.r_[PANDA.home, 0.0], np.zeros(1)],
)
def test_reset_options_other_than_a_pose_are_refused(options: np.ndarray) -> None:
    """A pose with a non-finite joint or another count of values is refused, naming what
    came, and the reset goal stays as it was: the arm is never sent towards garbage."""
    c = controller()
    c.begin_reset(None, PANDA.home + 0.1, None, np.zeros(7))
    before = c.reset_goal.copy()
    with pytest.raises(ValueError, match=r"reset options \[.*\]: the arm takes none .* or 7 finite joint positions"):
        c.begin_reset(None, options, None, np.zeros(7))
    np.testing.assert_array_equal(c.reset_goal, before)


@pytest.mark.parametrize("jerk_capped", [False, True])
@pytest.mark.parametrize("robot", BUILT_IN_PROFILES)
def test_inprocess_env_runs_the_task_and_a_proportional_policy_solves_it(robot: str, jerk_capped: bool) -> None:
    """Every arm's reach task can be solved within the limits, the accelerations
    jerk-capped or not: a proportional policy reaches three targets in a row, and the
    mock counts no violation."""
    env = InProcessReachEnv({"robot": robot, "jerk_capped": jerk_capped})
    dof = load_profile(robot).dof
    successes = 0
    for episode in range(3):
        observation, _ = env.reset(seed=episode)
        assert observation.shape == (2 * dof + 9,)
        for _ in range(50):
            error_dm = observation[-3:]  # target - TCP, decimetres
            observation, reward, terminated, truncated, info = env.step(np.clip(error_dm / 0.3, -1, 1))
            assert reward == pytest.approx(-10.0 * info["distance"])
            if terminated or truncated:
                break
        successes += info["is_success"]
    assert successes == 3
    assert env.sim.violations == []


WARMED_UP_CONTROL_PATH = """
import sys
import numpy as np
from franka_agent.core.profile_file import load_profile
from franka_agent.core.controller import ArmController
from franka_agent.core.limits import MotionLimits, WorkspaceBox

PANDA = load_profile("panda")

box = WorkspaceBox(np.array([0.2, -0.45, 0.05]), np.array([0.75, 0.45, 0.8]))
c = ArmController("{mode}", MotionLimits(PANDA), box, 10_000_000)
c.warm_up()
loaded = set(sys.modules)
c.start(PANDA.home, 0)
c.begin_reset(3, np.zeros(0), PANDA.home, np.zeros(7))
for k in range(1, 4):
    c.reset_reached(PANDA.home, np.zeros(7))
    c.command(k * 10_000_000)
c.act(np.ones(c.action_size))
c.command(4 * 10_000_000)
c.command(7 * 10_000_000)
print(sorted(set(sys.modules) - loaded))
"""


@pytest.mark.parametrize("mode", ["ee_delta", "joint_delta"])
def test_after_warm_up_the_control_path_imports_nothing(mode: str) -> None:
    """A first command that paid for a lazy import (numpy.ma, 24 ms, on np.unique's first
    call) reached a free-running mock after its planned points: a jump of 22 rad/s^2 at
    the first reset. The agent warms its controller up before it says it is ready."""
    import subprocess
    import sys

    script = WARMED_UP_CONTROL_PATH.replace("{mode}", mode)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.parametrize(("mode", "seed"), [("ee_delta", 0), ("ee_delta", 1), ("joint_delta", 2)])
def test_reusing_the_lookahead_plans_exactly_what_planning_afresh_does(mode: str, seed: int) -> None:
    """A steady tick takes the state the last command previewed instead of computing it
    again; whatever happens between ticks (actions, stops, resets, late ticks, a clock
    standing still), the commands must be the very same."""
    rng = np.random.default_rng(seed)
    reusing = ArmController(mode, MotionLimits(PANDA, acceleration_fraction=0.8), BOX, PERIOD)
    afresh = ArmController(mode, MotionLimits(PANDA, acceleration_fraction=0.8), BOX, PERIOD)
    for c in (reusing, afresh):
        c.start(PANDA.home, 0)
    now = 0
    for tick in range(600):
        event = rng.random()
        size = reusing.action_size
        if event < 0.1:
            action = rng.uniform(-1.0, 1.0, size)
            for c in (reusing, afresh):
                c.act(action)
        elif event < 0.12:
            for c in (reusing, afresh):
                c.hold()
        elif event < 0.13:
            reset_seed = int(rng.integers(100))
            for c in (reusing, afresh):
                c.begin_reset(reset_seed, np.zeros(0), None, np.zeros(PANDA.dof))
        now += PERIOD * (1 if rng.random() < 0.95 else int(rng.integers(0, 4)))
        assert reusing.motion is not None and afresh.motion is not None
        afresh.motion.reuse_lookahead = False
        mine, theirs = reusing.command(now), afresh.command(now)
        assert mine is not None and theirs is not None
        assert mine.times_ns == theirs.times_ns, tick
        for (q1, v1), (q2, v2) in zip(mine.points, theirs.points, strict=True):
            assert np.array_equal(q1, q2) and np.array_equal(v1, v2), tick
    assert reusing.motion is not None and afresh.motion is not None
    assert reusing.motion.guard_brakes == afresh.motion.guard_brakes
