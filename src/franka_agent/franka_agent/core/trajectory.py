"""What joint_trajectory_controller does with a JointTrajectory, for the mock hardware.

The rule, read from ros2_controllers' ``joint_trajectory_controller`` (``src/
joint_trajectory_controller.cpp``: ``validate_trajectory_msg``, ``update``;
``src/trajectory.cpp``: ``Trajectory::sample``, ``interpolate_between_points``), the same
in release 2.23.0 (Humble, what franka_ros2 v0.1.0 runs) and 4.42.1 (Jazzy):

- On arrival, a trajectory with a non-zero stamp that ends before the controller's
  time is refused (Jazzy: stamp + the last point's ``time_from_start``; Humble sums
  every point's ``time_from_start``, a bug that accepts more). Otherwise it replaces
  the current one at the next controller update.
- Its points are timed from its stamp (from that first update when the stamp is zero).
  At that first update the controller takes a "point before the trajectory": the
  state it is in at that instant. By default that is the *measured* state; with
  ``open_loop_control`` (Humble) or ``interpolate_from_desired_state`` (Jazzy) it is the
  desired state it last commanded, which is how this project configures it
  (the robot profile's controller settings) and the mock's default (``interpolate_from``).
- Sampled at time t: before the first point, the cubic Hermite spline from the point
  before to the first point; from the first point on, the segment of the message's own
  points that contains t, *without* any connection to what came before: a trajectory
  whose first points are already past on arrival makes the desired state jump onto it.
  Between points it is cubic Hermite when both carry velocities, linear otherwise; after
  the last point it holds that point.

``TrajectoryFollower`` does exactly that (``command_check.DesiredStateMonitor`` checks
what it commands, update by update).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

import numpy as np

# Times are whole nanoseconds inside, as stamps and the simulator's clock are: what the
# controller commands then depends only on times relative to the trajectory, never on
# where the clock stands (floats of absolute seconds round differently at every offset,
# and seeded simulated runs would part in the last bit:
# test_trajectory_model.py::test_the_desired_state_does_not_depend_on_where_the_clock_stands).
# Points closer in time than this are one instant.
SAME_INSTANT_NS = 1


@overload
def seconds_to_whole_ns(t: float) -> int: ...
@overload
def seconds_to_whole_ns(t: np.ndarray) -> np.ndarray: ...
def seconds_to_whole_ns(t: float | np.ndarray) -> int | np.ndarray:
    """Seconds to whole nanoseconds (an array to int64): exactly ``ns`` back from
    ``ns * 1e-9`` while ``ns`` is below 1e15 (11 days of the simulator's clock, which
    starts at zero), the bound the hypothesis test's offsets reach."""
    if isinstance(t, np.ndarray):
        return np.rint(t * 1e9).astype(np.int64)
    return round(t * 1e9)


@dataclass(frozen=True)
class TrajectoryPoint:
    time: float  # seconds from the trajectory's start
    positions: np.ndarray
    velocities: np.ndarray | None = None


class TrajectoryFollower:
    """The desired joint state over time, as joint_trajectory_controller samples it from
    the latest trajectory accepted (see the module's docstring). Times in and out are
    seconds; inside they are whole nanoseconds (see ``SAME_INSTANT_NS``)."""

    def __init__(self, q: np.ndarray) -> None:
        self.hold(q)

    def hold(self, q: np.ndarray) -> None:
        """Forget any trajectory and hold ``q`` at rest (e.g. after a reset)."""
        q = np.asarray(q, dtype=np.float64).copy()
        self._before_ns = 0
        self._before: tuple[np.ndarray, np.ndarray | None] = (q, np.zeros_like(q))
        self._times_ns = np.zeros(0, dtype=np.int64)
        self._q: list[np.ndarray] = []
        self._v: list[np.ndarray | None] = []
        self._knots: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # for sample_many

    def ends_before(self, now: float, points: list[TrajectoryPoint], start: float | None) -> bool:
        """Whether the controller refuses a trajectory arriving at ``now``: stamped (a
        ``start``), and its last point already past."""
        if start is None or not points:
            return False
        return seconds_to_whole_ns(start) + seconds_to_whole_ns(points[-1].time) < seconds_to_whole_ns(now)

    def set_trajectory(
        self,
        now: float,
        points: list[TrajectoryPoint],
        start: float | None = None,
        measured: tuple[np.ndarray, np.ndarray] | None = None,
        before_time: float | None = None,
    ) -> bool:
        """Take a trajectory arriving at ``now`` whose points count from ``start`` (None:
        from now, a zero stamp). The point before it is the desired state now, or
        ``measured`` (the controller's default, closed-loop start, or the state a release
        starts from: ``ArmSim.command``), at ``before_time`` (None: now). Returns False,
        keeping the current trajectory, when the controller would refuse it."""
        if not points or self.ends_before(now, points, start):
            return False
        before = measured if measured is not None else self.sample(now)
        now_ns = seconds_to_whole_ns(now)
        start_ns = now_ns if start is None else seconds_to_whole_ns(start)
        self._before_ns = now_ns if before_time is None else seconds_to_whole_ns(before_time)
        self._before = (np.asarray(before[0], dtype=np.float64).copy(), np.asarray(before[1], dtype=np.float64).copy())
        self._times_ns = np.array([start_ns + seconds_to_whole_ns(point.time) for point in points], dtype=np.int64)
        self._q = [np.asarray(point.positions, dtype=np.float64) for point in points]
        self._v = [
            None if point.velocities is None else np.asarray(point.velocities, dtype=np.float64) for point in points
        ]
        # Knot 0 is the point before the trajectory and knot j + 1 its point j: segment 0
        # leads to the first point, segment j + 1 is the message's own segment j.
        velocities = [self._before[1], *self._v]
        self._knots = (
            None
            if any(v is None for v in velocities)
            else (
                np.concatenate(([self._before_ns], self._times_ns)),
                np.array([self._before[0], *self._q]),
                np.array(velocities),
            )
        )
        return True

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Desired (q, v) at time ``t`` (not before the trajectory arrived)."""
        times = self._times_ns
        t_ns = seconds_to_whole_ns(t)
        if times.size == 0 or t_ns < times[0]:
            if times.size == 0:
                return self._before[0].copy(), np.zeros_like(self._before[0])
            return _interpolate(self._before_ns, *self._before, int(times[0]), self._q[0], self._v[0], t_ns)
        if t_ns >= times[-1]:
            last_v = self._v[-1]
            return self._q[-1].copy(), (np.zeros_like(self._q[-1]) if last_v is None else last_v.copy())
        i = int(np.searchsorted(times, t_ns, side="right")) - 1
        return _interpolate(
            int(times[i]), self._q[i], self._v[i], int(times[i + 1]), self._q[i + 1], self._v[i + 1], t_ns
        )

    def sample_many(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``sample`` at each of the ascending times ``ts``, as rows: the same numbers,
        with the arithmetic done once for all rows (the mock samples every physics step
        of a control period at once).
        (test_trajectory_model.py::test_sampling_many_updates_at_once_gives_what_sampling_each_gives)"""
        times = self._times_ns
        if times.size == 0:
            q = np.broadcast_to(self._before[0], (ts.size, self._before[0].size)).copy()
            return q, np.zeros_like(q)
        if self._knots is None:  # linear segments: rare, taken one by one
            return self._sample_each(ts)
        knot_ns, knots_q, knots_v = self._knots
        ts_ns = seconds_to_whole_ns(np.asarray(ts, dtype=np.float64))
        # ``searchsorted`` on the points alone: the point before may lie after the first.
        after = np.searchsorted(times, ts_ns, side="right")
        segment = np.minimum(after, times.size - 1)
        held = after == times.size  # at or past the last point: held there
        t0 = knot_ns[segment]
        h_ns = knot_ns[segment + 1] - t0
        if np.any(h_ns[~held] <= SAME_INSTANT_NS):  # points at one instant: taken one by one
            return self._sample_each(ts)
        with np.errstate(divide="ignore", invalid="ignore"):  # (rows held are overwritten)
            s = np.minimum(np.maximum((ts_ns - t0) / h_ns, 0.0), 1.0)[:, None]
            q, v = hermite(
                knots_q[segment],
                knots_v[segment],
                knots_q[segment + 1],
                knots_v[segment + 1],
                (h_ns * 1e-9)[:, None],
                s,
            )
        if np.any(held):
            q[held] = self._q[-1]
            v[held] = 0.0 if self._v[-1] is None else self._v[-1]
        return q, v

    def _sample_each(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        samples = [self.sample(float(t)) for t in ts]
        return np.array([q for q, _ in samples]), np.array([v for _, v in samples])

    def planned_acceleration(self, t: float) -> tuple[str, np.ndarray]:
        """For reports: the segment that holds ``t`` ("before the first point", or the
        index of its first point) and the mean acceleration its ends plan."""
        times = self._times_ns
        t_ns = seconds_to_whole_ns(t)
        if times.size == 0:
            return "holding", np.zeros_like(self._before[0])
        if t_ns < times[0]:
            name, (t0, v0), (t1, v1) = (
                "before the first point",
                (self._before_ns, self._before[1]),
                (int(times[0]), self._v[0]),
            )
        elif t_ns >= times[-1]:
            return "after the last point", np.zeros_like(self._q[-1])
        else:
            i = int(np.searchsorted(times, t_ns, side="right")) - 1
            name, (t0, v0), (t1, v1) = str(i), (int(times[i]), self._v[i]), (int(times[i + 1]), self._v[i + 1])
        if v0 is None or v1 is None or t1 - t0 <= SAME_INSTANT_NS:
            return name, np.zeros_like(self._q[0])
        return name, (v1 - v0) / ((t1 - t0) * 1e-9)


def _interpolate(
    t0_ns: int,
    q0: np.ndarray,
    v0: np.ndarray | None,
    t1_ns: int,
    q1: np.ndarray,
    v1: np.ndarray | None,
    t_ns: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One segment as ``interpolate_between_points`` does it: cubic Hermite when both ends
    carry velocities, linear otherwise."""
    h_ns = t1_ns - t0_ns
    if h_ns <= SAME_INSTANT_NS:
        return q1.copy(), (np.zeros_like(q1) if v1 is None else v1.copy())
    h = h_ns * 1e-9
    s = min(max((t_ns - t0_ns) / h_ns, 0.0), 1.0)
    if v0 is None or v1 is None:
        return q0 + s * (q1 - q0), (q1 - q0) / h
    return hermite(q0, v0, q1, v1, h, s)


def hermite(
    p0: np.ndarray, v0: np.ndarray, p1: np.ndarray, v1: np.ndarray, h: float | np.ndarray, s: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(q, v) at the share ``s`` of a cubic Hermite segment of ``h`` seconds (or, with
    columns of ``h`` and ``s``, one row per segment)."""
    m0, m1 = v0 * h, v1 * h
    s2, s3 = s * s, s * s * s
    position = (2 * s3 - 3 * s2 + 1) * p0 + (s3 - 2 * s2 + s) * m0 + (-2 * s3 + 3 * s2) * p1 + (s3 - s2) * m1
    velocity = ((6 * s2 - 6 * s) * p0 + (3 * s2 - 4 * s + 1) * m0 + (-6 * s2 + 6 * s) * p1 + (3 * s2 - 2 * s) * m1) / h
    return position, velocity


def sample_knots(
    times: np.ndarray, positions: list[np.ndarray], velocities: list[np.ndarray], t: float
) -> tuple[np.ndarray, np.ndarray]:
    """(q, v) at ``t`` on the cubic Hermite spline through the knots (all with velocities):
    held at the first knot before it, at rest on the last one after it. (Exact for a
    reference that moves at constant acceleration between knots, as ``ArmMotion``'s does.)"""
    if t >= times[-1]:
        return positions[-1].copy(), np.zeros_like(positions[-1])
    if t <= times[0]:
        return positions[0].copy(), velocities[0].copy()
    i = int(np.searchsorted(times, t, side="right")) - 1
    h = times[i + 1] - times[i]
    return hermite(positions[i], velocities[i], positions[i + 1], velocities[i + 1], h, (t - times[i]) / h)
