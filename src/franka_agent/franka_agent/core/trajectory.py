"""What joint_trajectory_controller does with a JointTrajectory, for the mock hardware.

A new trajectory replaces the current one and starts from the controller's current
desired state; its points are timed from the message's stamp (from its arrival when
the stamp is zero) and points already past are dropped; between points it interpolates
with cubic Hermite splines when points carry velocities (linearly when they do not),
and after the last point it holds that position. Sampled at the physics rate, it
gives the desired (q, v) the joint PID tracks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Points closer in time than this are one instant (float seconds from integer stamps
# differ in the last bits; a 1e-15 s segment would mean an infinite acceleration).
TIME_EPSILON = 1e-9


@dataclass(frozen=True)
class TrajectoryPoint:
    time: float  # seconds from the trajectory's start
    positions: np.ndarray
    velocities: np.ndarray | None = None


class TrajectoryFollower:
    """Desired joint state over time, from the latest trajectory received."""

    def __init__(self, q: np.ndarray) -> None:
        self._knot_times = np.zeros(1)
        self._knot_q = [np.asarray(q, dtype=np.float64).copy()]
        self._knot_v = [np.zeros_like(self._knot_q[0])]

    def hold(self, q: np.ndarray) -> None:
        """Forget any trajectory and hold ``q`` (e.g. after a reset)."""
        self.__init__(q)  # type: ignore[misc]

    def set_trajectory(self, now: float, points: list[TrajectoryPoint], start: float | None = None) -> None:
        """Replace the trajectory: from the desired state at ``now`` through ``points``,
        whose times count from ``start`` (``now`` if None)."""
        start = now if start is None else start
        q0, v0 = self.sample(now)
        times = [now]
        qs = [q0]
        vs: list[np.ndarray] = [v0]
        previous_t, previous_q = now, q0
        for point in points:
            t = start + point.time
            if t <= previous_t + TIME_EPSILON:
                continue  # already past (or not increasing): like JTC, keep only what lies ahead
            linear = (point.positions - previous_q) / (t - previous_t)
            v = linear if point.velocities is None else point.velocities
            times.append(t)
            qs.append(np.asarray(point.positions, dtype=np.float64))
            vs.append(np.asarray(v, dtype=np.float64))
            previous_t, previous_q = t, qs[-1]
        if points and points[-1].velocities is None and len(vs) > 1:
            vs[-1] = np.zeros_like(vs[-1])  # position-only trajectories end at rest
        self._knot_times = np.array(times)
        self._knot_q = qs
        self._knot_v = vs

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Desired (q, v) at time ``t``."""
        return sample_knots(self._knot_times, self._knot_q, self._knot_v, t)

    @property
    def end_time(self) -> float:
        return float(self._knot_times[-1])


def sample_knots(
    times: np.ndarray, positions: list[np.ndarray], velocities: list[np.ndarray], t: float
) -> tuple[np.ndarray, np.ndarray]:
    """(q, v) at ``t`` on the cubic Hermite spline through the knots, as
    joint_trajectory_controller samples it: held at the first knot before it, and at rest
    on the last one after it. (Exact for a reference that moves at constant acceleration
    between knots, as ``ArmMotion``'s does.)"""
    if t >= times[-1]:
        return positions[-1].copy(), np.zeros_like(positions[-1])
    if t <= times[0]:
        return positions[0].copy(), velocities[0].copy()
    i = int(np.searchsorted(times, t, side="right")) - 1
    h = times[i + 1] - times[i]
    s = (t - times[i]) / h
    p0, p1 = positions[i], positions[i + 1]
    m0, m1 = velocities[i] * h, velocities[i + 1] * h
    s2, s3 = s * s, s * s * s
    position = (2 * s3 - 3 * s2 + 1) * p0 + (s3 - 2 * s2 + s) * m0 + (-2 * s3 + 3 * s2) * p1 + (s3 - s2) * m1
    velocity = ((6 * s2 - 6 * s) * p0 + (3 * s2 - 4 * s + 1) * m0 + (-6 * s2 + 6 * s) * p1 + (3 * s2 - 2 * s) * m1) / h
    return position, velocity
