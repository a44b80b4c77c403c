"""A reset's way home: routes that keep the hand in the box, and the homing phases as
their table allows (core/homing.py). No ROS."""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from franka_agent.core.homing import HOMING_NEXT, Homing, homing_may_go, joint_route_search
from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.limits import MotionLimits, WorkspaceBox
from franka_agent.core.motion import ArmMotion
from franka_agent.core.profile_file import load_profile
from franka_agent.core.reference import ReferenceGenerator, rest_to_rest_path

PANDA = load_profile("panda")

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

BOX = WorkspaceBox(np.array([0.2, -0.45, 0.05]), np.array([0.75, 0.45, 0.8]))


def test_the_joint_move_checked_for_routes_is_the_one_the_reference_takes() -> None:
    limits = MotionLimits(PANDA, velocity_fraction=0.5, acceleration_fraction=0.8)
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = np.clip(PANDA.home + rng.uniform(-1.0, 1.0, 7), limits.lower, limits.upper)
        goal = np.clip(PANDA.home + rng.uniform(-1.0, 1.0, 7), limits.lower, limits.upper)
        still = rng.random(7) < 0.3
        goal[still] = q[still]  # joints with nothing to do
        times, path, velocities = rest_to_rest_path(q, goal, limits, 50)
        reference = ReferenceGenerator(limits.joints, q)
        reference.set_goal(goal)
        taken = np.array([q] + [reference.step(0.001)[0].copy() for _ in range(round(times.max() * 1000) + 5)])
        np.testing.assert_allclose(path[49], goal, atol=1e-12)  # the last sample: every joint there
        # Within what a millisecond's rounding of the time moves a joint at full speed.
        np.testing.assert_allclose(path, taken[np.round(times * 1000).astype(int)], atol=limits.velocity.max() * 6e-4)
        np.testing.assert_allclose(taken[-1], goal, atol=1e-9)
        # Its velocities too (braking is checked from them): within what a few milliseconds
        # of braking change (a joint arriving stops within its last step).
        reference.reset(q)
        reference.set_goal(goal)
        speeds = [np.zeros(7)] + [reference.step(0.001)[1].copy() for _ in range(round(times.max() * 1000) + 5)]
        at_times = np.array(speeds)[np.round(times * 1000).astype(int)]
        np.testing.assert_allclose(velocities, at_times, atol=limits.acceleration.max() * 3e-3)


def plan_joint_route(*args: object) -> list[np.ndarray] | None:
    """The route ``joint_route_search`` returns, searched to the end at once."""
    search = joint_route_search(*args)  # type: ignore[arg-type]
    while True:
        try:
            next(search)
        except StopIteration as done:
            return done.value


def test_a_joint_route_keeps_the_hand_in_the_box_where_the_direct_move_would_not() -> None:
    limits = MotionLimits(PANDA, velocity_fraction=0.5, acceleration_fraction=0.8)
    kinematics = ArmKinematics(PANDA)
    box = BOX.shrunk(0.01)
    home = PANDA.home.copy()
    assert plan_joint_route(home, home + 0.1, limits, box, kinematics) == [pytest.approx(home + 0.1)]
    # A posture whose hand is where the start pose's is, but on the far side of the arm.
    posture = np.array([-2.32, 1.43, 1.31, -3.02, -1.66, 3.7, 0.73])
    start_pose = np.array([-0.08, -0.73, 0.072, -2.418, 0.003, 1.573, 0.732])

    def lowest_excess(start: np.ndarray, end: np.ndarray) -> float:
        return max(box.excess(kinematics.tcp(p)) for p in rest_to_rest_path(start, end, limits, 100)[1])

    assert lowest_excess(posture, start_pose) > 0.05  # straight there: the hand 9 cm out
    route = plan_joint_route(posture, start_pose, limits, box, kinematics)
    assert route is not None and len(route) > 1
    np.testing.assert_array_equal(route[-1], start_pose)
    for start, end in zip([posture, *route], route, strict=False):
        assert lowest_excess(start, end) == 0.0


def settle_home(motion: ArmMotion, goal: np.ndarray, seconds: float = 15.0, dt: float = 0.01) -> float | None:
    """``move_home`` to ``goal`` from wherever ``motion`` is: the time it takes to rest
    there (s), or None if it has not within ``seconds`` (the agent's reset_timeout)."""
    motion.move_home(goal)
    for tick in range(round(seconds / dt)):
        motion.step(dt)
        if motion.settled() and np.max(np.abs(motion.q - goal)) < 5e-3:
            return tick * dt
    return None


def test_a_reset_route_is_one_the_box_guard_lets_through() -> None:
    """A route is checked as the guard checks every step: the hand stays in the box on the
    way and on braking from any point of it. This direct move keeps the hand 1 cm inside
    the box, but braking from 1.1 rad/s on the way would not, so the guard braked, and from
    rest there every step towards the goal took the hand out: held 2.1 rad short for good
    (a fuzz run's reset, after adversarial joint actions)."""
    limits = MotionLimits(PANDA)
    kinematics = ArmKinematics(PANDA)
    start = np.array([0.837, -0.084, -0.62, -2.295, -2.119, 0.069, -0.401])
    goal = np.array([0.095, -0.805, 0.011, -2.256, 0.011, 1.527, 0.788])
    route_box = BOX.shrunk(0.01)
    _, path, velocities = rest_to_rest_path(start, goal, limits, 40)
    assert route_box.excess(np.array([kinematics.tcp(p) for p in path])) == 0.0  # the path alone fits
    motion = ArmMotion("joint_delta", limits, BOX, start)
    assert max(motion.state_of(p, v).risk for p, v in zip(path, velocities, strict=True)) > 0.0  # braking does not
    route = plan_joint_route(start, goal, limits, route_box, kinematics)
    assert route is not None and len(route) > 1
    assert settle_home(motion, goal) is not None
    assert motion.guard_brakes == 0


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), mode=st.sampled_from(["ee_delta", "joint_delta"]))
@example(seed=84, mode="joint_delta")  # held 2 rad short by the guard before routes were checked as it checks
def test_a_reset_reaches_its_start_pose_from_wherever_actions_left_the_arm(seed: int, mode: str) -> None:
    """Seconds of random and extreme actions, each held for 50-250 ms, then a reset at once,
    with the arm still moving: it comes to rest at its start pose within the agent's
    reset_timeout, whatever the posture the actions left."""
    rng = np.random.default_rng(seed)
    motion = ArmMotion(mode, MotionLimits(PANDA), BOX, PANDA.home)
    for _ in range(int(rng.integers(10, 60))):
        size = motion.action_size
        motion.act(rng.choice([-1.0, 1.0], size=size) if rng.random() < 0.5 else rng.uniform(-1.0, 1.0, size))
        for _ in range(int(rng.integers(5, 25))):
            motion.step(0.01)
    goal = PANDA.home + rng.uniform(-0.1, 0.1, PANDA.dof)
    assert settle_home(motion, goal) is not None, (np.round(motion.q, 3).tolist(), motion.homing)


class TracedMotion(ArmMotion):
    """An ArmMotion that keeps every homing transition it makes."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.transitions: list[tuple[Homing, Homing]] = []
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def _enter(self, phase: Homing) -> None:
        self.transitions.append((self.homing, phase))
        super()._enter(phase)


def test_homing_goes_only_where_its_table_says() -> None:
    """Every pair of phases: allowed exactly where HOMING_NEXT (or a way out of any phase,
    to IDLE or STOP) says, and refused as a defect otherwise."""
    allowed = {(a, b) for a in Homing for b in Homing if b in HOMING_NEXT[a] or b in (Homing.IDLE, Homing.STOP)}
    for a in Homing:
        for b in Homing:
            assert homing_may_go(a, b) == ((a, b) in allowed)
            motion = ArmMotion("joint_delta", MotionLimits(PANDA), BOX, PANDA.home)
            motion.homing = a
            if (a, b) in allowed:
                motion._enter(b)
                assert motion.homing is b
            else:
                with pytest.raises(RuntimeError, match=f"homing cannot go from {a.name} to {b.name}"):
                    motion._enter(b)


def test_homing_without_a_route_walks_every_phase_of_its_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no route keeps the hand in the box, the hand goes first, then the posture,
    then, after a second search, the joints straight to the goal; every step is one the
    table allows."""
    import franka_agent.core.motion as motion_module

    def no_route(*args: object, **kwargs: object) -> Generator[None, None, list[np.ndarray] | None]:
        yield
        return None

    monkeypatch.setattr(motion_module, "joint_route_search", no_route)
    motion = TracedMotion("joint_delta", MotionLimits(PANDA), BOX, PANDA.home + 0.3)
    assert settle_home(motion, PANDA.home) is not None
    assert [b for _, b in motion.transitions] == [
        Homing.STOP,
        Homing.SEARCH,
        Homing.HAND,
        Homing.POSTURE,
        Homing.STOP,
        Homing.SEARCH,
        Homing.ROUTE,
        Homing.IDLE,
    ]
    assert all(homing_may_go(a, b) for a, b in motion.transitions)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), mode=st.sampled_from(["ee_delta", "joint_delta"]))
def test_a_reset_from_anywhere_follows_the_homing_table_and_ends_idle(seed: int, mode: str) -> None:
    rng = np.random.default_rng(seed)
    motion = TracedMotion(mode, MotionLimits(PANDA), BOX, PANDA.home)
    for _ in range(int(rng.integers(5, 30))):
        motion.act(rng.uniform(-1.0, 1.0, motion.action_size))
        for _ in range(int(rng.integers(5, 25))):
            motion.step(0.01)
    motion.transitions.clear()
    assert settle_home(motion, PANDA.home + rng.uniform(-0.1, 0.1, PANDA.dof)) is not None
    phases = [b for _, b in motion.transitions]
    assert phases[0] is Homing.STOP and phases[-1] is Homing.IDLE and motion.homing is Homing.IDLE
    assert all(homing_may_go(a, b) for a, b in motion.transitions)
