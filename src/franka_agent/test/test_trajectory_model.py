"""The model of joint_trajectory_controller the mock runs: following, sampling and
replacing trajectories, the simulated clock, and the real controller's setting it
models (core/trajectory.py, core/sim.py). No ROS."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from franka_agent.core.command_check import DesiredStateMonitor
from franka_agent.core.limits import WorkspaceBox
from franka_agent.core.profile import BUILT_IN_PROFILES
from franka_agent.core.profile_file import load_profile
from franka_agent.core.sim import ArmSim
from franka_agent.core.trajectory import TrajectoryFollower, TrajectoryPoint

PANDA = load_profile("panda")

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

BOX = WorkspaceBox(np.array([0.2, -0.45, 0.05]), np.array([0.75, 0.45, 0.8]))


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
    follower = TrajectoryFollower(PANDA.home)
    measured = (PANDA.home + 0.1, np.full(7, 0.2)) if closed_loop else None
    follower.set_trajectory(arrival, points, stamp, measured)
    for holder in (follower, TrajectoryFollower(PANDA.home)):
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
            TrajectoryPoint(t * 1e-9, PANDA.home + 0.01 * (i + 1), np.zeros(7) if last else np.array(velocities))
        )
    runs = []
    for offset in (0, offset_ns):
        follower = TrajectoryFollower(PANDA.home)
        follower.set_trajectory(
            (offset + 10**8) * 1e-9, [TrajectoryPoint(0.05, PANDA.home - 0.02, np.zeros(7))], (offset + 10**8) * 1e-9
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
    q = np.array([PANDA.home + position * 0.5 for _, position, _ in rows])
    v = np.array([np.full(7, velocity) * PANDA.limits.velocity / 2.5 for _, _, velocity in rows])
    at_once, one_by_one = DesiredStateMonitor(PANDA.limits), DesiredStateMonitor(PANDA.limits)
    if not restarted:
        for monitor in (at_once, one_by_one):
            monitor.check(0.999, PANDA.home, np.zeros(7))
    found = at_once.check_many(ts, q, v)
    expected = [
        violation for t, q_row, v_row in zip(ts, q, v, strict=True) for violation in one_by_one.check(t, q_row, v_row)
    ]
    assert found == expected
    assert at_once.worst_acceleration_share == one_by_one.worst_acceleration_share
    assert at_once.check(ts[-1] + 0.001, PANDA.home, np.ones(7)) == one_by_one.check(
        ts[-1] + 0.001, PANDA.home, np.ones(7)
    )


def test_stepping_many_updates_at_once_moves_the_arm_as_one_at_a_time() -> None:
    """``ArmSim.step(n)`` computes the period's desired states at once: the arm moves
    exactly as when stepped one update at a time, along a smooth motion (no limit
    broken) and through a jump that breaks the acceleration limit."""
    at_once, one_by_one = ArmSim(PANDA), ArmSim(PANDA)
    for period in range(41):
        now = period * 0.01
        if period < 40:  # a smooth wave from rest: Hermite knots on q = HOME + 0.2 (1 - cos t)
            points = [
                TrajectoryPoint(lead, PANDA.home + 0.2 * (1 - np.cos(now + lead)), np.full(7, 0.2 * np.sin(now + lead)))
                for lead in (0.02, 0.05)
            ]
        else:
            points = [TrajectoryPoint(0.02, PANDA.home + 0.1, np.zeros(7))]
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
    sim = ArmSim(PANDA, physics_rate=1000.0)
    sim.step(54_321)
    assert sim.time_ns == 54_321_000_000
    assert ArmSim(PANDA, physics_rate=3000.0).timestep_ns == 333_333


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


@pytest.mark.parametrize("robot", BUILT_IN_PROFILES)
def test_the_real_arms_controller_is_configured_as_the_mock_models_it(robot: str, tmp_path: Path) -> None:
    """The mock starts a new trajectory from the commanded state (interpolate_from
    "desired"); the real joint_trajectory_controller does so only with the settings the
    profile gives its spawner (panda_agent.launch.py writes them with
    ``write_controller_settings``): ``open_loop_control`` on Humble's ros2_controllers,
    ``interpolate_from_desired_state`` from Jazzy's. Streaming from the measured state
    instead demands accelerations far beyond the limits (docs/timing.md)."""
    import yaml

    from franka_agent.robots import write_controller_settings

    profile = load_profile(robot)
    settings = yaml.safe_load(write_controller_settings(profile, tmp_path / "settings.yaml").read_text())
    parameters = settings["/**"]["ros__parameters"]
    for driver in profile.drivers:
        name = "open_loop_control" if driver.distro == "humble" else "interpolate_from_desired_state"
        assert parameters[name] is True, f"{robot} on {driver.release}: {name} is not set"
    assert ArmSim(profile).interpolate_from == "desired"
