"""The Panda's kinematics, the motion limiter, the action mapping and the trajectory
follower: pure numpy (and MuJoCo for the model check), no ROS."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import mujoco
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from franka_agent.core import panda
from franka_agent.core.command_check import DesiredStateMonitor
from franka_agent.core.homing import HOMING_NEXT, Homing, homing_may_go, joint_route_search
from franka_agent.core.kinematics import PandaKinematics
from franka_agent.core.limits import MotionLimits, WorkspaceBox
from franka_agent.core.motion import ArmMotion
from franka_agent.core.panda_mjcf import EE_SITE, panda_mjcf
from franka_agent.core.reference import ReferenceGenerator, braking_knots, rest_to_rest_path
from franka_agent.core.sim import PandaSim
from franka_agent.core.trajectory import TrajectoryFollower, TrajectoryPoint, sample_knots

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

BOX = WorkspaceBox(np.array([0.2, -0.45, 0.05]), np.array([0.75, 0.45, 0.8]))


def test_home_pose_puts_the_hand_where_franka_says() -> None:
    np.testing.assert_allclose(panda.ee_position(panda.HOME), [0.3069, 0.0, 0.4869], atol=5e-4)


def test_mujoco_model_and_agent_kinematics_agree() -> None:
    model = mujoco.MjModel.from_xml_string(panda_mjcf())
    data = mujoco.MjData(model)
    assert [model.joint(i).name for i in range(model.njnt)] == list(panda.JOINT_NAMES)
    np.testing.assert_allclose(model.jnt_range, np.stack([panda.LOWER, panda.UPPER], axis=1))
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.uniform(panda.LOWER, panda.UPPER)
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        np.testing.assert_allclose(data.site(EE_SITE).xpos, panda.ee_position(q), atol=1e-9)


def test_mujoco_model_compensates_gravity_like_the_real_arm() -> None:
    model = mujoco.MjModel.from_xml_string(panda_mjcf())
    data = mujoco.MjData(model)
    data.qpos[:] = panda.HOME
    for _ in range(500):  # half a second with zero commanded torque
        mujoco.mj_step(model, data)
    np.testing.assert_allclose(data.qpos, panda.HOME, atol=1e-6)


def test_fast_kinematics_match_the_dh_reference() -> None:
    kinematics = PandaKinematics()
    rng = np.random.default_rng(2)
    for _ in range(20):
        q = rng.uniform(panda.LOWER, panda.UPPER)
        tcp, jacobian = kinematics.tcp_and_jacobian(q)
        reference_tcp, reference_jacobian = panda.ee_position_and_jacobian(q)
        np.testing.assert_allclose(tcp, reference_tcp, atol=1e-12)
        np.testing.assert_allclose(jacobian, reference_jacobian, atol=1e-12)
        frames = panda.joint_frames(q)
        _, distances = kinematics.axis_distances(q)
        expected = [np.linalg.norm(np.cross(f[:3, 2], tcp - f[:3, 3])) for f in frames[:7]]
        np.testing.assert_allclose(distances, expected, atol=1e-12)


def test_jacobian_matches_finite_differences() -> None:
    q = panda.HOME + 0.1
    _, jacobian = panda.ee_position_and_jacobian(q)
    eps = 1e-7
    numeric = np.stack(
        [
            (panda.ee_position(q + eps * np.eye(7)[i]) - panda.ee_position(q - eps * np.eye(7)[i])) / (2 * eps)
            for i in range(7)
        ],
        axis=1,
    )
    np.testing.assert_allclose(jacobian, numeric, atol=1e-6)


def _check_limits(limits: MotionLimits, qs: np.ndarray, vs: np.ndarray, dt: float) -> None:
    assert np.all(qs >= limits.lower - 1e-12) and np.all(qs <= limits.upper + 1e-12)
    assert np.all(np.abs(vs) <= limits.velocity + 1e-12)
    accelerations = np.abs(np.diff(vs, axis=0)) / dt
    assert np.all(accelerations <= limits.acceleration * (1 + 1e-9))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), dt=st.sampled_from([0.002, 0.01]))
def test_reference_never_exceeds_position_velocity_or_acceleration_limits(seed: int, dt: float) -> None:
    rng = np.random.default_rng(seed)
    limits = MotionLimits()
    reference = ReferenceGenerator(limits.joints, panda.HOME)
    qs, vs = [reference.q], [reference.v]
    for _ in range(60):  # adversarial goals: anywhere, even outside the limits, switched often
        reference.set_goal(rng.uniform(panda.LOWER - 1.0, panda.UPPER + 1.0))
        for _ in range(int(rng.integers(1, 15))):
            q, v = reference.step(dt)
            qs.append(q)
            vs.append(v)
    _check_limits(limits, np.array(qs), np.array(vs), dt)


def test_reference_reaches_its_goal_without_overshoot() -> None:
    limits = MotionLimits()
    reference = ReferenceGenerator(limits.joints, panda.HOME)
    goal = panda.HOME + np.array([0.3, -0.2, 0.25, 0.2, -0.3, 0.15, 0.4])
    reference.set_goal(goal)
    low, high = np.minimum(panda.HOME, goal), np.maximum(panda.HOME, goal)
    for _ in range(500):
        q, _ = reference.step(0.01)
        assert np.all(q >= low - 1e-9) and np.all(q <= high + 1e-9)
    assert reference.settled()
    np.testing.assert_allclose(reference.q, goal, atol=1e-9)


def test_stop_brakes_within_acceleration_limits_and_holds() -> None:
    limits = MotionLimits()
    reference = ReferenceGenerator(limits.joints, panda.HOME)
    reference.set_goal(panda.HOME + 1.0)
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
            arm = ArmMotion("ee_delta", MotionLimits(acceleration_fraction=1.0), BOX, panda.HOME)
            start = panda.ee_position(arm.q)
            action = np.zeros(3)
            action[axis] = sign
            for _ in range(6):  # six RL steps of 0.1 s at 100 Hz
                arm.act(action)
                for _ in range(10):
                    arm.step(0.01)
            moved = panda.ee_position(arm.q) - start
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
    limits = MotionLimits(acceleration_fraction=1.0)
    arm = ArmMotion(mode, limits, BOX, panda.HOME)
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
            assert BOX.contains(panda.ee_position(q), tolerance=1e-4), panda.ee_position(q)
    _check_limits(limits, np.array(qs), np.array(vs), 0.01)


def test_trajectory_follower_interpolates_and_holds_the_last_point() -> None:
    follower = TrajectoryFollower(np.zeros(7))
    follower.set_trajectory(
        10.0,
        [TrajectoryPoint(0.1, np.full(7, 0.1), np.full(7, 1.0)), TrajectoryPoint(0.2, np.full(7, 0.2), np.zeros(7))],
    )
    q, v = follower.sample(10.1)
    np.testing.assert_allclose(q, 0.1)
    np.testing.assert_allclose(v, 1.0)
    q, v = follower.sample(11.0)
    np.testing.assert_allclose(q, 0.2)
    np.testing.assert_allclose(v, 0.0)


def test_a_new_trajectory_starts_from_the_current_desired_state() -> None:
    follower = TrajectoryFollower(np.zeros(7))
    follower.set_trajectory(0.0, [TrajectoryPoint(1.0, np.ones(7), np.zeros(7))])
    before = follower.sample(0.5)
    follower.set_trajectory(0.5, [TrajectoryPoint(1.0, -np.ones(7), np.zeros(7))])
    after = follower.sample(0.5)
    np.testing.assert_allclose(after[0], before[0])
    np.testing.assert_allclose(after[1], before[1])


@st.composite
def _trajectories(draw: st.DrawFn) -> tuple[float, list[TrajectoryPoint], float | None, bool]:
    """(arrival, points, stamp, closed loop): stamps from before the arrival (the first
    points already past) to after it; velocities on every point, or on none."""
    arrival = draw(st.floats(0.0, 1.0))
    count = draw(st.integers(1, 4))
    gaps = draw(st.lists(st.sampled_from([0.0, 1e-10, 0.001, 0.003, 0.01]), min_size=count, max_size=count))
    with_velocities = draw(st.booleans())
    elements = st.floats(-2.0, 2.0)
    points, t = [], 0.0
    for gap in gaps:
        t += gap
        q = np.array(draw(st.lists(elements, min_size=7, max_size=7)))
        v = np.array(draw(st.lists(elements, min_size=7, max_size=7))) if with_velocities else None
        points.append(TrajectoryPoint(t, q, v))
    stamp = draw(st.one_of(st.none(), st.floats(arrival - 0.01, arrival + 0.01)))
    return arrival, points, stamp, draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(trajectory=_trajectories(), first=st.floats(0.0, 0.02), count=st.integers(1, 12))
def test_sampling_many_updates_at_once_gives_what_sampling_each_gives(
    trajectory: tuple[float, list[TrajectoryPoint], float | None, bool], first: float, count: int
) -> None:
    """The mock samples a control period's physics updates at once: the same numbers to
    the bit as one update at a time, before, along and after a trajectory."""
    arrival, points, stamp, closed_loop = trajectory
    follower = TrajectoryFollower(panda.HOME)
    measured = (panda.HOME + 0.1, np.full(7, 0.2)) if closed_loop else None
    follower.set_trajectory(arrival, points, stamp, measured)
    for holder in (follower, TrajectoryFollower(panda.HOME)):
        ts = (np.arange(count) + round((arrival + first) * 1000)) * 1_000_000 * 1e-9
        q, v = holder.sample_many(ts)
        for row, t in enumerate(ts):
            q_one, v_one = holder.sample(float(t))
            assert np.array_equal(q[row], q_one) and np.array_equal(v[row], v_one), (row, t)


@settings(max_examples=200, deadline=None)
@given(
    arrival_ns=st.integers(0, 10**9),
    stamp_after_ns=st.one_of(st.none(), st.integers(-(10**7), 10**7)),
    gaps_ns=st.lists(st.sampled_from([1_000_000, 3_000_000, 10_000_000]), min_size=1, max_size=4),
    velocities=st.lists(st.floats(-2.0, 2.0), min_size=7, max_size=7),
    offset_ns=st.integers(1, 10**15),
)
@example(0, 0, [10_000_000, 10_000_000], [0.5] * 7, 1_796_351_991_000_000_000 % 10**15)
def test_the_desired_state_does_not_depend_on_where_the_clock_stands(
    arrival_ns: int, stamp_after_ns: int | None, gaps_ns: list[int], velocities: list[float], offset_ns: int
) -> None:
    """The same trajectory, arriving and sampled at the same times relative to it, gives
    the same desired states to the bit at any clock offset: a seeded simulated run then
    repeats whenever its clock started (core/trajectory.py: SAME_INSTANT_NS)."""
    points, t = [], 0
    for i, gap in enumerate(gaps_ns):
        t += gap
        last = i == len(gaps_ns) - 1
        points.append(
            TrajectoryPoint(t * 1e-9, panda.HOME + 0.01 * (i + 1), np.zeros(7) if last else np.array(velocities))
        )
    runs = []
    for offset in (0, offset_ns):
        follower = TrajectoryFollower(panda.HOME)
        follower.set_trajectory(
            (offset + 10**8) * 1e-9, [TrajectoryPoint(0.05, panda.HOME - 0.02, np.zeros(7))], (offset + 10**8) * 1e-9
        )
        stamp = None if stamp_after_ns is None else (offset + 10**8 + arrival_ns + stamp_after_ns) * 1e-9
        follower.set_trajectory((offset + 10**8 + arrival_ns) * 1e-9, points, stamp)
        ts = (offset + 10**8 + arrival_ns + np.arange(0, t + 2_000_000, 1_000_000)) * 1e-9
        runs.append(follower.sample_many(ts))
    (q, v), (q_shifted, v_shifted) = runs
    assert np.array_equal(q, q_shifted) and np.array_equal(v, v_shifted)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.floats(0.0, 0.003), st.floats(-3.0, 3.0), st.floats(-3.0, 3.0)), min_size=1, max_size=12
    ),
    restarted=st.booleans(),
)
def test_checking_many_updates_at_once_finds_what_checking_each_finds(
    rows: list[tuple[float, float, float]], restarted: bool
) -> None:
    """The same violations, worst acceleration and state for what follows, whether a
    period's updates are checked at once or one by one (limits broken or not)."""
    ts = np.cumsum([gap for gap, _, _ in rows]) + 1.0
    q = np.array([panda.HOME + position * 0.5 for _, position, _ in rows])
    v = np.array([np.full(7, velocity) * panda.MAX_VELOCITY / 2.5 for _, _, velocity in rows])
    at_once, one_by_one = DesiredStateMonitor(), DesiredStateMonitor()
    if not restarted:
        for monitor in (at_once, one_by_one):
            monitor.check(0.999, panda.HOME, np.zeros(7))
    found = at_once.check_many(ts, q, v)
    expected = [
        violation for t, q_row, v_row in zip(ts, q, v, strict=True) for violation in one_by_one.check(t, q_row, v_row)
    ]
    assert found == expected
    assert at_once.worst_acceleration_share == one_by_one.worst_acceleration_share
    assert at_once.check(ts[-1] + 0.001, panda.HOME, np.ones(7)) == one_by_one.check(
        ts[-1] + 0.001, panda.HOME, np.ones(7)
    )


def test_stepping_many_updates_at_once_moves_the_arm_as_one_at_a_time() -> None:
    """``PandaSim.step(n)`` computes the period's desired states at once: the arm moves
    exactly as when stepped one update at a time, along a smooth motion (no limit
    broken) and through a jump that breaks the acceleration limit."""
    at_once, one_by_one = PandaSim(), PandaSim()
    for period in range(41):
        now = period * 0.01
        if period < 40:  # a smooth wave from rest: Hermite knots on q = HOME + 0.2 (1 - cos t)
            points = [
                TrajectoryPoint(lead, panda.HOME + 0.2 * (1 - np.cos(now + lead)), np.full(7, 0.2 * np.sin(now + lead)))
                for lead in (0.02, 0.05)
            ]
        else:
            points = [TrajectoryPoint(0.02, panda.HOME + 0.1, np.zeros(7))]
        for sim in (at_once, one_by_one):
            sim.command(points, now)
        at_once.step(10)
        for _ in range(10):
            one_by_one.step(1)
        assert np.array_equal(at_once.data.qpos, one_by_one.data.qpos)
        assert np.array_equal(at_once.data.qvel, one_by_one.data.qvel)
        if period == 39:
            assert at_once.violations == [] and 0 < at_once.monitor.worst_acceleration_share < 1
    assert at_once.violations == one_by_one.violations != []
    assert at_once.monitor.worst_acceleration_share == one_by_one.monitor.worst_acceleration_share


def test_simulated_time_is_whole_nanoseconds_that_never_drift() -> None:
    """Stamps and sim-time timers live on a nanosecond grid; a float sum of timesteps
    once put the mock's clock 1 ns short of the agent's next tick (a 0.2 s stall)."""
    sim = PandaSim(physics_rate=1000.0)
    sim.step(54_321)
    assert sim.time_ns == 54_321_000_000
    assert PandaSim(physics_rate=3000.0).timestep_ns == 333_333


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1.1, 1.1), min_size=7, max_size=7))
@example([5.643352760916792e-25, 2.568622938704645e-05, 0.0, 0.0, 0.0, 2.568622938704645e-05, 0.0])
def test_braking_knots_stop_every_joint_at_its_limit_and_interpolate_exactly(velocity: list[float]) -> None:
    limits = MotionLimits(acceleration_fraction=0.8)
    v = np.array(velocity)
    knots = braking_knots(panda.HOME, v, limits)
    if not np.any(v):
        assert knots == []
        return
    assert len(knots) <= 7
    times = np.array([0.0, *(t_ns * 1e-9 for t_ns, _, _ in knots)])
    positions = [panda.HOME, *(q for _, q, _ in knots)]
    velocities = [v, *(knot_v for _, _, knot_v in knots)]
    np.testing.assert_array_equal(velocities[-1], 0.0)  # exactly: a controller refuses "almost"
    # Each joint stops where braking at its limit stops it, no further.
    np.testing.assert_allclose(positions[-1] - panda.HOME, v * np.abs(v) / (2 * limits.acceleration), atol=1e-9)
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
    kinematics = PandaKinematics()
    knots = braking_knots(q, v, limits)
    times = np.array([0.0, *(t_ns * 1e-9 for t_ns, _, _ in knots)])
    positions, velocities = [q, *(k[1] for k in knots)], [v, *(k[2] for k in knots)]
    path = [sample_knots(times, positions, velocities, t)[0] for t in np.linspace(0.0, times[-1], 100)]
    return max(box.excess(kinematics.tcp(p)) for p in positions), max(box.excess(kinematics.tcp(p)) for p in path)


def test_braking_from_any_state_the_box_guard_accepts_stays_in_the_box() -> None:
    """The guard accepts a reference state only if braking from it keeps the TCP inside
    the workspace box, and every command ends with that braking. At the edge of what it
    accepts (the fastest state along a random direction, from a hand a centimetre inside
    a face), neither the knots sent nor the path between them may leave the box; they
    keep 0.7 mm of the millimetre the guard keeps (what it does not check, between the
    points it does, strays less). When the guard checked a straight joint-space line
    instead of each joint braking to its own stop, it missed the path by up to 3.4 mm."""
    limits = MotionLimits(velocity_fraction=0.5, acceleration_fraction=0.8)
    motion = ArmMotion("joint_delta", limits, BOX, panda.HOME)
    guard = BOX.shrunk(0.001)
    kinematics = PandaKinematics()
    rng = np.random.default_rng(0)
    checked = 0
    while checked < 500:
        outside = np.clip(panda.HOME + rng.uniform(-1.2, 1.2, 7), limits.lower, limits.upper)
        if guard.excess(kinematics.tcp(outside)) == 0.0:
            continue
        low, high = 0.0, 1.0  # along the line from home: where the hand is 1 cm inside
        for _ in range(30):
            middle = 0.5 * (low + high)
            q = panda.HOME + middle * (outside - panda.HOME)
            low, high = (middle, high) if motion.state_of(q, np.zeros(7)).risk <= -0.01 else (low, middle)
        q = panda.HOME + low * (outside - panda.HOME)
        v = _edge_of_acceptance(motion, q, rng.uniform(-1.0, 1.0, 7) * limits.velocity)
        assert _braking_excess(q, v, limits, BOX.shrunk(0.0007)) == (0.0, 0.0), (q, v)
        checked += 1


def test_the_box_guard_refuses_the_state_a_fuzz_run_sent_out_of_the_box() -> None:
    """The planned state (mid-reset, the hand moving along a face) whose braking knots
    reached 1.7 mm outside the box in a fuzz run: the guard must not accept it."""
    limits = MotionLimits(velocity_fraction=0.5, acceleration_fraction=0.8)
    q = np.array([-0.32512609530734770, 1.325096925125874, -2.165330398225298, -1.244955730776564,
                  -2.3302450870966616, 0.9529408622439629, 1.2356562996939526])  # fmt: skip
    v = np.array([0.7983666848635346, -0.5331098752091731, 1.0836149850925978, -0.01821922001075789,
                  0.8511237888663226, 0.3426209350195976, -0.22449559365101796])  # fmt: skip
    knots_excess, _ = _braking_excess(q, v, limits)
    assert knots_excess > 0.0015
    assert ArmMotion("joint_delta", limits, BOX, q).state_of(q, v).risk > 0.0


def test_the_joint_move_checked_for_routes_is_the_one_the_reference_takes() -> None:
    limits = MotionLimits(velocity_fraction=0.5, acceleration_fraction=0.8)
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = np.clip(panda.HOME + rng.uniform(-1.0, 1.0, 7), limits.lower, limits.upper)
        goal = np.clip(panda.HOME + rng.uniform(-1.0, 1.0, 7), limits.lower, limits.upper)
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
    limits = MotionLimits(velocity_fraction=0.5, acceleration_fraction=0.8)
    kinematics = PandaKinematics()
    box = BOX.shrunk(0.01)
    home = panda.HOME.copy()
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
    limits = MotionLimits()
    kinematics = PandaKinematics()
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
    motion = ArmMotion(mode, MotionLimits(), BOX, panda.HOME)
    for _ in range(int(rng.integers(10, 60))):
        size = motion.action_size
        motion.act(rng.choice([-1.0, 1.0], size=size) if rng.random() < 0.5 else rng.uniform(-1.0, 1.0, size))
        for _ in range(int(rng.integers(5, 25))):
            motion.step(0.01)
    goal = panda.HOME + rng.uniform(-0.1, 0.1, panda.DOF)
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
            motion = ArmMotion("joint_delta", MotionLimits(), BOX, panda.HOME)
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
    motion = TracedMotion("joint_delta", MotionLimits(), BOX, panda.HOME + 0.3)
    assert settle_home(motion, panda.HOME) is not None
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
    motion = TracedMotion(mode, MotionLimits(), BOX, panda.HOME)
    for _ in range(int(rng.integers(5, 30))):
        motion.act(rng.uniform(-1.0, 1.0, motion.action_size))
        for _ in range(int(rng.integers(5, 25))):
            motion.step(0.01)
    motion.transitions.clear()
    assert settle_home(motion, panda.HOME + rng.uniform(-0.1, 0.1, panda.DOF)) is not None
    phases = [b for _, b in motion.transitions]
    assert phases[0] is Homing.STOP and phases[-1] is Homing.IDLE and motion.homing is Homing.IDLE
    assert all(homing_may_go(a, b) for a, b in motion.transitions)


def test_a_trajectory_that_ends_before_it_arrives_is_refused_and_the_old_one_kept() -> None:
    """joint_trajectory_controller's validate_trajectory_msg: a stamped trajectory whose
    last point is past is refused (ros2_controllers 2.23.0 and 4.42.1)."""
    follower = TrajectoryFollower(np.zeros(7))
    assert follower.set_trajectory(0.0, [TrajectoryPoint(1.0, np.ones(7), np.zeros(7))], start=0.0)
    late = [TrajectoryPoint(0.1, -np.ones(7), np.zeros(7))]
    assert not follower.set_trajectory(0.5, late, start=0.3)  # ended at 0.4
    np.testing.assert_allclose(follower.sample(1.0)[0], 1.0)
    assert follower.set_trajectory(0.5, late, start=None)  # a zero stamp: timed from arrival


def test_a_trajectory_arriving_after_its_first_point_jumps_onto_its_own_segment() -> None:
    """Trajectory::sample: from the first point on, the segment that holds the time, with
    no connection to the point before: the desired state jumps (the old follower
    smoothed this over, which made late commands look safer than they are)."""
    follower = TrajectoryFollower(np.zeros(7))
    points = [TrajectoryPoint(0.01, np.full(7, 0.1), np.zeros(7)), TrajectoryPoint(0.02, np.full(7, 0.2), np.zeros(7))]
    assert follower.set_trajectory(1.015, points, start=1.0)
    q, _ = follower.sample(1.015)
    np.testing.assert_allclose(q, 0.15)  # half-way along its own segment, not from 0


def test_before_its_first_point_a_trajectory_starts_from_the_point_before() -> None:
    """The desired state at arrival by default here (interpolate_from_desired_state), or
    the measured one (the controller's own default)."""
    follower = TrajectoryFollower(np.zeros(7))
    point = [TrajectoryPoint(0.1, np.ones(7), np.zeros(7))]
    follower.set_trajectory(0.0, point, start=0.0, measured=(np.full(7, 0.5), np.zeros(7)))
    np.testing.assert_allclose(follower.sample(0.0)[0], 0.5)
    np.testing.assert_allclose(follower.sample(0.05)[0], 0.75)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), mode=st.sampled_from(["ee_delta", "joint_delta"]))
def test_every_reference_step_is_one_of_constant_acceleration(seed: int, mode: str) -> None:
    """Consecutive reference states (q0, v0) -> (q1, v1), h apart, move by (v0 + v1) h / 2:
    then the cubic Hermite spline the joint controller draws between the points sent is
    the reference itself, with its acceleration (v1 - v0) / h. A step that breaks this
    by e makes the spline's acceleration 6 e / h^2 larger somewhere."""
    rng = np.random.default_rng(seed)
    motion = ArmMotion(mode, MotionLimits(acceleration_fraction=0.8), BOX, panda.HOME)
    dt = 0.01
    for _ in range(300):
        event = rng.random()
        if event < 0.1:
            motion.act(rng.choice([-1.0, 1.0], size=motion.action_size) * rng.uniform(0.0, 1.0))
        elif event < 0.12:
            motion.stop()
        elif event < 0.13:
            motion.move_home(panda.HOME + rng.uniform(-0.1, 0.1, panda.DOF))
        q0, v0 = motion.q.copy(), motion.v.copy()
        q1, v1 = motion.step(dt)
        np.testing.assert_allclose(q1 - q0, 0.5 * (v0 + v1) * dt, atol=1e-12)


def test_the_real_arms_controller_is_configured_as_the_mock_models_it() -> None:
    """The mock starts a new trajectory from the commanded state (interpolate_from
    "desired"); the real joint_trajectory_controller does so only with the setting
    panda_agent.launch.py gives its spawner. Streaming from the measured state instead
    demands accelerations far beyond the limits (docs/timing.md)."""
    import yaml

    from spin_decoupler_ros.tools.paths import find_config

    settings = yaml.safe_load(find_config("panda_jtc.yaml", package="franka_agent").read_text())
    assert settings["/**"]["ros__parameters"]["open_loop_control"] is True
    assert PandaSim().interpolate_from == "desired"
    launch_text = (Path(__file__).resolve().parents[1] / "launch" / "panda_agent.launch.py").read_text()
    assert '"--param-file"' in launch_text and '"panda_jtc.yaml"' in launch_text
