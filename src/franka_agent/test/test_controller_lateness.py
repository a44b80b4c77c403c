"""ArmController when commands come late or the agent stalls: nothing up to the lead
bends the motion, and after an uncertain command it plans on from the arm at rest (the
Link table). Without ROS."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from arm_setup import BOX, MS, PANDA, PERIOD, controller
from hypothesis import given, settings
from hypothesis import strategies as st

from franka_agent.core.command_check import Violation, command_violations
from franka_agent.core.controller import LINK_NEXT, SETTLE_NS, ArmController, Link, link_may_go
from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.limits import MotionLimits
from franka_agent.core.sim import ArmSim
from franka_agent.inprocess_env import _points


def drive(ticks: int, stalls: dict[int, float], mode: str = "ee_delta") -> tuple[list[Violation], ArmSim]:
    """The controller commanding the simulated arm as the agent commands the mock, except
    that before tick k in ``stalls`` it sends nothing for that many periods while the
    arm runs on. Returns what the controller model found beyond a limit, and the sim."""
    sim = ArmSim(PANDA)
    kinematics = ArmKinematics(PANDA)
    c = ArmController(mode, MotionLimits(PANDA, acceleration_fraction=1.0), BOX, PERIOD)
    c.start(sim.q, 0)
    rng = np.random.default_rng(1)
    found: list[Violation] = []
    now = 0
    for k in range(ticks):
        if k in stalls:
            gap = round(stalls[k] * PERIOD)
            sim.step(gap // MS)
            now += gap
        if k % 10 == 0:
            c.act(rng.choice([-1.0, 1.0], size=c.action_size))
        command = c.command(now)
        assert command is not None
        points = _points(command)
        found += command_violations(points, BOX, kinematics)
        assert command.repeat or sim.command(points, now / 1e9)  # (a repeat is not sent again)
        sim.step(PERIOD // MS)
        now += PERIOD
    return found + sim.violations, sim


@pytest.mark.parametrize("mode", ["ee_delta", "joint_delta"])
def test_an_agent_that_stalls_mid_motion_never_makes_the_commands_jump(mode: str) -> None:
    """Late ticks (1.5 to 40 periods, on and off the period grid) pick up from where the
    commands already sent put the joint controller, so not one command breaks a limit
    (before, a stall past the third point left the controller holding at rest while the
    agent carried on at speed: 10-16 rad/s^2 at the next command)."""
    stalls = {
        k: late
        for k, late in zip(range(25, 400, 25), [1.5, 2, 2.5, 3, 4, 5.7, 8, 12, 20, 40, 2, 3, 6, 1.7, 30], strict=True)
    }
    found, _ = drive(400, stalls, mode)
    assert found == []


def test_a_long_stall_leaves_the_arm_at_rest() -> None:
    sim = drive(30, {})[1]
    assert np.max(np.abs(sim.dq)) > 0.05  # moving when the agent falls silent
    sim.step(300)
    np.testing.assert_array_equal(sim.follower.sample(sim.time)[1], 0.0)  # the reference has stopped
    sim.step(1500)
    assert np.max(np.abs(sim.dq)) < 1e-3  # and the arm with it


def run_late_and_stalled(
    seed: int, mode: str, lead_periods: int, max_lateness_ns: int, ticks: int = 150
) -> list[Violation]:
    """The controller against the joint controller model on a timeline with everything
    that makes commands late: each command's stamp lags the controller's time by a stale
    clock, and it reaches the controller after a delivery delay (together up to
    ``max_lateness_ns``, in order); the agent stalls now and then for up to 2 s (on and
    off the millisecond grid); actions, holds and resets come at random. Returns what
    the joint controller commanded beyond a limit, and any point outside the box."""
    rng = np.random.default_rng(seed)
    sim = ArmSim(PANDA)
    kinematics = ArmKinematics(PANDA)
    c = ArmController(mode, MotionLimits(PANDA, acceleration_fraction=0.8), BOX, PERIOD, lead_periods=lead_periods)
    c.start(sim.q, 0)
    found: list[Violation] = []
    in_flight: list[tuple[int, int, list]] = []  # (arrival, stamp, points), in arrival order
    tick_ns = reading_ns = last_arrival_ns = 0
    for _ in range(ticks):
        event = rng.random()
        if event < 0.15:
            c.act(rng.choice([-1.0, 1.0], size=c.action_size) * rng.uniform(0.2, 1.0))
        elif event < 0.17:
            c.hold()
        elif event < 0.18:
            c.begin_reset(int(rng.integers(100)), np.zeros(0), None, np.zeros(PANDA.dof))
        lateness = int(rng.integers(0, max_lateness_ns + 1))
        stale = int(rng.integers(0, lateness + 1))  # the part from a clock that lags
        reading_ns = max(reading_ns, tick_ns - stale)  # a clock never runs backwards
        command = c.command(reading_ns)
        assert command is not None
        points = _points(command)
        found += command_violations(points, BOX, kinematics)
        last_arrival_ns = max(last_arrival_ns, reading_ns + lateness)
        if not command.repeat:  # (not sent again)
            in_flight.append((last_arrival_ns, command.stamp_ns, points))
        stalled = rng.random() < 0.04  # a stall: up to 2 s, on and off the control grid
        tick_ns += int(rng.integers(2 * PERIOD, 200 * PERIOD)) if stalled else PERIOD
        while sim.time_ns < tick_ns:
            while in_flight and in_flight[0][0] <= sim.time_ns:
                _, stamp_ns, arrived = in_flight.pop(0)
                assert sim.command(arrived, stamp_ns / 1e9), "the controller refused a command"
            sim.step(1)
    return found + sim.violations


@settings(max_examples=24, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    mode=st.sampled_from(["ee_delta", "joint_delta"]),
    lead_periods=st.integers(1, 4),
)
def test_no_delay_or_stall_up_to_the_lead_breaks_a_limit(seed: int, mode: str, lead_periods: int) -> None:
    """The invariant of the command design (see ArmController): whatever makes a
    command late at the joint controller, by less than the lead, and whatever stalls the
    agent, what the controller commands stays within the Panda's position, velocity
    and acceleration limits, update by update, and every point in the box."""
    assert run_late_and_stalled(seed, mode, lead_periods, lead_periods * PERIOD - MS) == []


def test_lateness_beyond_the_lead_is_what_breaks_the_limits() -> None:
    """The same timelines with commands up to half a period later than the lead allows:
    the controller jumps onto plans the agent changed after the horizon. (So the test
    above can fail, and the lead is what holds the invariant.)"""
    found = [run_late_and_stalled(seed, "joint_delta", 1, PERIOD + PERIOD // 2) for seed in range(4)]
    assert sum(len(f) for f in found) > 0
    assert all(v.kind == "acceleration" for f in found for v in f)


@pytest.mark.parametrize("reached", [True, False])
def test_after_an_uncertain_command_the_agent_replans_from_the_arm_at_rest(reached: bool) -> None:
    """The agent stalled while sending a command, or was stopped right after (on SIGSTOP
    it systematically lands there, right after an observation goes out): the controller
    follows it, or the one before (it came too late and was refused). Once both have
    ended, the next commands go on from where the arm rests, without a jump."""
    sim = ArmSim(PANDA)
    c = ArmController("joint_delta", MotionLimits(PANDA, acceleration_fraction=0.8), BOX, PERIOD)
    c.start(sim.q, 0)
    c.act(np.array([1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0]))
    now = _command_for(c, sim, 0, 12)  # at speed
    stalled = c.command(now)  # one period more of motion at speed than the one before
    assert stalled is not None
    if reached:
        assert sim.command(_points(stalled), now / 1e9)
    c.mark_uncertain()
    for _ in range(300):  # a stall of up to 3 s: both trajectories end, the arm comes to rest
        sim.step(PERIOD // MS)
        now += PERIOD
        if c.settle_uncertainty(sim.q, sim.dq, sim.time_ns):
            break
    assert not c.uncertain
    rest = sim.q.copy()
    c.act(np.array([-1.0, 1.0, -1.0, -1.0, 1.0, -1.0, -1.0]))  # the next step
    now = _command_for(c, sim, now, 50)
    assert sim.violations == []
    assert np.max(np.abs(sim.q - rest)) > 0.05  # and it moves on from there


@pytest.mark.parametrize("error", [-0.002, 0.001, 0.004])
def test_a_replan_from_a_measured_rest_bridges_the_tracking_error_within_the_limits(error: float) -> None:
    """The joint controller holds the end of the command it followed; the arm, measured,
    rests there only up to its tracking error (sub-millirad, more under load). The plan
    that starts from the measured rest must let the controller get there within the
    limits: its first point comes BRIDGE_NS on. (Planned from the next lead instead, a
    0.7 mrad error demanded 8.5 rad/s^2 of a 7.5 limit: the stress gate, busy core.)"""
    sim = ArmSim(PANDA)
    c = ArmController("joint_delta", MotionLimits(PANDA, acceleration_fraction=0.8), BOX, PERIOD)
    c.start(sim.q, 0)
    c.act(np.array([1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0]))
    now = 0
    now = _command_for(c, sim, 0, 12)
    c.mark_uncertain()
    while not c.settle_uncertainty(sim.q + error * np.array([1, -1, 1, -1, 1, -1, 1]), sim.dq, sim.time_ns):
        sim.step(PERIOD // MS)
        now += PERIOD
    c.act(np.array([-1.0, 1.0, -1.0, -1.0, 1.0, -1.0, -1.0]))
    _command_for(c, sim, now, 50)
    assert sim.violations == []


def _command_for(c: ArmController, sim: ArmSim, now: int, ticks: int) -> int:
    """``ticks`` control periods of commands, each taken by the simulated controller;
    returns the time after them."""
    for _ in range(ticks):
        command = c.command(now)
        assert command is not None and (command.repeat or sim.command(_points(command), now / 1e9))
        sim.step(PERIOD // MS)
        now += PERIOD
    return now


def test_an_uncertain_command_is_not_decided_while_the_arm_moves() -> None:
    sim = ArmSim(PANDA)
    c = ArmController("ee_delta", MotionLimits(PANDA, acceleration_fraction=0.8), BOX, PERIOD)
    c.start(sim.q, 0)
    c.act(np.array([1.0, -1.0, -1.0]))
    for k in range(30):
        command = c.command(k * PERIOD)
        assert command is not None and (command.repeat or sim.command(_points(command), k * PERIOD / 1e9))
        sim.step(PERIOD // MS)
    c.mark_uncertain()
    assert not c.settle_uncertainty(sim.q, sim.dq, sim.time_ns)  # moving, the tails not ended
    assert c.uncertain


def test_a_replanned_hold_stays_where_the_arm_is() -> None:
    """After a re-plan from the arm (a stop, an uncertain command), holding sends the
    arm's own configuration, joint by joint: nothing drifts through the IK's null space
    (a controller that comes back holding where the arm is must not see a jump)."""
    c = controller()
    q = PANDA.home + 0.1
    c.start(q, 0)
    for k in range(10):
        c.act(np.array([1.0 if (k // 3) % 2 == 0 else -1.0, 0.0, 0.0]))
        c.command((k + 1) * PERIOD)
    c.replan_from(q)
    for k in range(40):
        c.hold()
        command = c.command((20 + k) * PERIOD)
        assert command is not None
        for point, velocity in command.points:
            np.testing.assert_allclose(point, q, atol=1e-12)
            np.testing.assert_allclose(velocity, 0.0, atol=1e-12)


def test_the_link_goes_only_where_its_table_says() -> None:
    """Every pair: allowed exactly where LINK_NEXT (or the way out of any, to NONE) says,
    and refused as a defect otherwise."""
    for a, b in itertools.product(Link, Link):
        allowed = b in LINK_NEXT[a] or b is Link.NONE
        assert link_may_go(a, b) == allowed
        c = controller()
        c.link = a
        if allowed:
            c._enter(b)
            assert c.link is b
        else:
            with pytest.raises(RuntimeError, match=f"the link cannot go from {a.name} to {b.name}"):
                c._enter(b)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["command", "withdrawn", "stall", "rest", "replan"]), max_size=30))
def test_whatever_the_agent_does_the_link_keeps_to_its_table(moves: list[str]) -> None:
    """The controller driven as the agent drives it, in any order: a command each tick
    unless uncertain (then only once the arm rests), a command withdrawn right after it
    was made, stalls, re-plans. Every change of the link is one LINK_NEXT allows (a
    defect would raise), and uncertain means something was sent."""
    sim = ArmSim(PANDA)
    c = controller()
    c.start(sim.q, 0)
    c.act(np.ones(3))
    seen, now = {c.link}, 0
    for move in moves:
        now += PERIOD
        if move == "stall":
            c.mark_uncertain()
        elif move == "replan":
            c.replan_from(sim.q)
        elif move == "rest" or c.uncertain:
            c.settle_uncertainty(sim.q, np.zeros(PANDA.dof), now + 10 * SETTLE_NS)
        else:
            assert c.command(now) is not None
            if move == "withdrawn":
                c.withdraw()
        seen.add(c.link)
        assert not c.uncertain or c._sent_ns.size > 0
    assert Link.NONE in seen
