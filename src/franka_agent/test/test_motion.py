"""The commanded motion within the limits: the reference that chases a goal, braking to
rest, the action mapping and the box guard (core/reference.py, core/motion.py). No ROS."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.limits import MotionLimits, WorkspaceBox
from franka_agent.core.motion import ArmMotion
from franka_agent.core.profile_file import load_profile
from franka_agent.core.reference import ReferenceGenerator, braking_knots
from franka_agent.core.trajectory import sample_knots

PANDA = load_profile("panda")

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

BOX = WorkspaceBox(np.array([0.2, -0.45, 0.05]), np.array([0.75, 0.45, 0.8]))


def _check_limits(limits: MotionLimits, qs: np.ndarray, vs: np.ndarray, dt: float) -> None:
    assert np.all(qs >= limits.lower - 1e-12) and np.all(qs <= limits.upper + 1e-12)
    assert np.all(np.abs(vs) <= limits.velocity + 1e-12)
    accelerations = np.abs(np.diff(vs, axis=0)) / dt
    assert np.all(accelerations <= limits.acceleration * (1 + 1e-9))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), dt=st.sampled_from([0.002, 0.01]))
def test_reference_never_exceeds_position_velocity_or_acceleration_limits(seed: int, dt: float) -> None:
    rng = np.random.default_rng(seed)
    limits = MotionLimits(PANDA)
    reference = ReferenceGenerator(limits.joints, PANDA.home)
    qs, vs = [reference.q], [reference.v]
    for _ in range(60):  # adversarial goals: anywhere, even outside the limits, switched often
        reference.set_goal(rng.uniform(PANDA.limits.lower - 1.0, PANDA.limits.upper + 1.0))
        for _ in range(int(rng.integers(1, 15))):
            q, v = reference.step(dt)
            qs.append(q)
            vs.append(v)
    _check_limits(limits, np.array(qs), np.array(vs), dt)


def test_reference_reaches_its_goal_without_overshoot() -> None:
    limits = MotionLimits(PANDA)
    reference = ReferenceGenerator(limits.joints, PANDA.home)
    goal = PANDA.home + np.array([0.3, -0.2, 0.25, 0.2, -0.3, 0.15, 0.4])
    reference.set_goal(goal)
    low, high = np.minimum(PANDA.home, goal), np.maximum(PANDA.home, goal)
    for _ in range(500):
        q, _ = reference.step(0.01)
        assert np.all(q >= low - 1e-9) and np.all(q <= high + 1e-9)
    assert reference.settled()
    np.testing.assert_allclose(reference.q, goal, atol=1e-9)


def test_stop_brakes_within_acceleration_limits_and_holds() -> None:
    limits = MotionLimits(PANDA)
    reference = ReferenceGenerator(limits.joints, PANDA.home)
    reference.set_goal(PANDA.home + 1.0)
    for _ in range(20):
        reference.step(0.01)
    assert np.any(np.abs(reference.v) > 0.1)
    reference.stop()
    previous = reference.v.copy()
    for _ in range(200):
        _, v = reference.step(0.01)
        assert np.all(np.abs(v - previous) <= limits.acceleration * 0.01 * (1 + 1e-9))
        previous = v.copy()
    assert np.all(reference.v == 0.0)


def test_ee_delta_actions_move_the_hand_straight_along_the_commanded_axis() -> None:
    for axis in range(3):
        for sign in (-1.0, 1.0):
            arm = ArmMotion("ee_delta", MotionLimits(PANDA, acceleration_fraction=1.0), BOX, PANDA.home)
            start = PANDA.tcp_position(arm.q)
            action = np.zeros(3)
            action[axis] = sign
            for _ in range(8):  # eight RL steps of 0.1 s at 100 Hz
                arm.act(action)
                for _ in range(10):
                    arm.step(0.01)
            moved = PANDA.tcp_position(arm.q) - start
            assert moved[axis] * sign > 0.08, (axis, sign, moved)
            assert np.linalg.norm(np.delete(moved, axis)) < 0.015, (axis, sign, moved)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    mode=st.sampled_from(["ee_delta", "joint_delta"]),
    pattern=st.sampled_from(["random", "extremes", "flip"]),
)
def test_adversarial_actions_never_take_commands_out_of_the_limits_or_the_box(
    seed: int, mode: str, pattern: str
) -> None:
    rng = np.random.default_rng(seed)
    limits = MotionLimits(PANDA, acceleration_fraction=1.0)
    arm = ArmMotion(mode, limits, BOX, PANDA.home)
    qs, vs = [arm.q], [arm.v]
    action = rng.choice([-1.0, 1.0], size=arm.action_size)
    for _ in range(80):
        if pattern == "random":
            action = rng.uniform(-1.0, 1.0, arm.action_size)
        elif pattern == "extremes":
            action = rng.choice([-1.0, 1.0], size=arm.action_size)
        else:
            action = -action  # a sign flip every step
        if rng.random() < 0.05:
            arm.stop()
        else:
            arm.act(action)
        for _ in range(int(rng.integers(1, 12))):
            q, v = arm.step(0.01)
            qs.append(q)
            vs.append(v)
            assert BOX.contains(PANDA.tcp_position(q), tolerance=1e-4), PANDA.tcp_position(q)
    _check_limits(limits, np.array(qs), np.array(vs), 0.01)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1.1, 1.1), min_size=7, max_size=7))
@example([5.643352760916792e-25, 2.568622938704645e-05, 0.0, 0.0, 0.0, 2.568622938704645e-05, 0.0])
def test_braking_knots_stop_every_joint_at_its_limit_and_interpolate_exactly(velocity: list[float]) -> None:
    limits = MotionLimits(PANDA, acceleration_fraction=0.8)
    v = np.array(velocity)
    knots = braking_knots(PANDA.home, v, limits)
    if not np.any(v):
        assert knots == []
        return
    assert len(knots) <= 7
    times = np.array([0.0, *(t_ns * 1e-9 for t_ns, _, _ in knots)])
    positions = [PANDA.home, *(q for _, q, _ in knots)]
    velocities = [v, *(knot_v for _, _, knot_v in knots)]
    np.testing.assert_array_equal(velocities[-1], 0.0)  # exactly: a controller refuses "almost"
    # Each joint stops where braking at its limit stops it, no further.
    np.testing.assert_allclose(positions[-1] - PANDA.home, v * np.abs(v) / (2 * limits.acceleration), atol=1e-9)
    # Sampled as a joint trajectory controller samples it, it never brakes harder than that.
    t = np.linspace(0.0, times[-1], 400)
    sampled = np.array([sample_knots(times, positions, velocities, ti)[1] for ti in t])
    # Up to float rounding: a knot position is exact to one ulp of |q|, and a cubic's
    # velocity turns that into up to 3 ulp / h, so 6 ulp / h between two samples (h the
    # shortest segment, a microsecond when a joint barely moves).
    ulp = np.finfo(np.float64).eps * max(float(np.max(np.abs(q))) for q in positions)
    rounding = 6.0 * ulp / float(np.min(np.diff(times)))
    assert np.all(np.abs(np.diff(sampled, axis=0)) <= limits.acceleration * (t[1] - t[0]) * (1 + 1e-6) + rounding)


def _edge_of_acceptance(motion: ArmMotion, q: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """The fastest velocity along ``direction`` the box guard accepts at ``q``."""
    if motion.state_of(q, direction).risk <= 0.0:
        return direction
    low, high = 0.0, 1.0
    for _ in range(30):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if motion.state_of(q, middle * direction).risk <= 0.0 else (low, middle)
    return low * direction


def _braking_excess(q: np.ndarray, v: np.ndarray, limits: MotionLimits, box: WorkspaceBox = BOX) -> tuple[float, float]:
    """How far outside ``box`` (m) the braking tail from (q, v) puts the TCP: at its
    knots (what the controller is sent), and anywhere along the interpolated path."""
    kinematics = ArmKinematics(PANDA)
    knots = braking_knots(q, v, limits)
    times = np.array([0.0, *(t_ns * 1e-9 for t_ns, _, _ in knots)])
    positions, velocities = [q, *(k[1] for k in knots)], [v, *(k[2] for k in knots)]
    path = [sample_knots(times, positions, velocities, t)[0] for t in np.linspace(0.0, times[-1], 100)]
    return max(box.excess(kinematics.tcp(p)) for p in positions), max(box.excess(kinematics.tcp(p)) for p in path)


@pytest.mark.parametrize("jerk_capped", [False, True])
def test_braking_from_any_state_the_box_guard_accepts_stays_in_the_box(jerk_capped: bool) -> None:
    """The guard accepts a reference state only if braking from it keeps the TCP inside
    the workspace box, and every command ends with that braking. At the edge of what it
    accepts (the fastest state along a random direction, from a hand a centimetre inside
    a face), neither the knots sent nor the path between them may leave the box; they
    keep 0.7 mm of the millimetre the guard keeps (what it does not check, between the
    points it does, strays less). When the guard checked a straight joint-space line
    instead of each joint braking to its own stop, it missed the path by up to 3.4 mm."""
    limits = MotionLimits(PANDA, velocity_fraction=0.5, acceleration_fraction=0.8, jerk_capped=jerk_capped)
    motion = ArmMotion("joint_delta", limits, BOX, PANDA.home)
    guard = BOX.shrunk(0.001)
    kinematics = ArmKinematics(PANDA)
    rng = np.random.default_rng(0)
    checked = 0
    while checked < 500:
        outside = np.clip(PANDA.home + rng.uniform(-1.2, 1.2, 7), limits.lower, limits.upper)
        if guard.excess(kinematics.tcp(outside)) == 0.0:
            continue
        low, high = 0.0, 1.0  # along the line from home: where the hand is 1 cm inside
        for _ in range(30):
            middle = 0.5 * (low + high)
            q = PANDA.home + middle * (outside - PANDA.home)
            low, high = (middle, high) if motion.state_of(q, np.zeros(7)).risk <= -0.01 else (low, middle)
        q = PANDA.home + low * (outside - PANDA.home)
        v = _edge_of_acceptance(motion, q, rng.uniform(-1.0, 1.0, 7) * limits.velocity)
        assert _braking_excess(q, v, limits, BOX.shrunk(0.0007)) == (0.0, 0.0), (q, v)
        checked += 1


def test_the_box_guard_refuses_the_state_a_fuzz_run_sent_out_of_the_box() -> None:
    """The planned state (mid-reset, the hand moving along a face) whose braking knots
    reached 1.7 mm outside the box in a fuzz run: the guard must not accept it."""
    limits = MotionLimits(PANDA, velocity_fraction=0.5, acceleration_fraction=0.8)
    q = np.array([-0.32512609530734770, 1.325096925125874, -2.165330398225298, -1.244955730776564,
                  -2.3302450870966616, 0.9529408622439629, 1.2356562996939526])  # fmt: skip
    v = np.array([0.7983666848635346, -0.5331098752091731, 1.0836149850925978, -0.01821922001075789,
                  0.8511237888663226, 0.3426209350195976, -0.22449559365101796])  # fmt: skip
    knots_excess, _ = _braking_excess(q, v, limits)
    assert knots_excess > 0.0015
    assert ArmMotion("joint_delta", limits, BOX, q).state_of(q, v).risk > 0.0


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), mode=st.sampled_from(["ee_delta", "joint_delta"]))
def test_every_reference_step_is_one_of_constant_acceleration(seed: int, mode: str) -> None:
    """Consecutive reference states (q0, v0) -> (q1, v1), h apart, move by (v0 + v1) h / 2:
    then the cubic Hermite spline the joint controller draws between the points sent is
    the reference itself, with its acceleration (v1 - v0) / h. A step that breaks this
    by e makes the spline's acceleration 6 e / h^2 larger somewhere."""
    rng = np.random.default_rng(seed)
    motion = ArmMotion(mode, MotionLimits(PANDA, acceleration_fraction=0.8), BOX, PANDA.home)
    dt = 0.01
    for _ in range(300):
        event = rng.random()
        if event < 0.1:
            motion.act(rng.choice([-1.0, 1.0], size=motion.action_size) * rng.uniform(0.0, 1.0))
        elif event < 0.12:
            motion.stop()
        elif event < 0.13:
            motion.move_home(PANDA.home + rng.uniform(-0.1, 0.1, PANDA.dof))
        q0, v0 = motion.q.copy(), motion.v.copy()
        q1, v1 = motion.step(dt)
        np.testing.assert_allclose(q1 - q0, 0.5 * (v0 + v1) * dt, atol=1e-12)
