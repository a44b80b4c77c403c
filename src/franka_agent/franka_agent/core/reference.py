"""A joint reference that chases a goal within limits, and how a reference brakes to rest.

- ``ReferenceGenerator``: a reference (position, velocity) in any number of dimensions
  that chases a goal within position, velocity and acceleration bounds, never
  overshooting the goal per axis (so it never leaves the span between its start and its
  goal, which is what keeps commands inside the limits).
- ``braking_knots``: the tail every command ends with, each joint braking to rest
  within its acceleration limit, so that a joint controller which hears nothing more
  brings the arm to rest smoothly (and newer joint_trajectory_controllers, which refuse
  trajectories that end moving, accept it).
- ``braking_path``, ``braking_tcps``, ``rest_to_rest_path``: where the joints and the
  hand pass on those moves, for the guards that keep the hand in the box.

Pure numpy, no ROS.
"""

from __future__ import annotations

import numpy as np

from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.limits import Bounds, MotionLimits

# Shares of the longest stop the box guard checks too: eighths (quarters let the hand out
# by 0.5 mm on the longer stops of jerk-capped accelerations, core/limits.py;
# test_motion.py::test_braking_from_any_state_the_box_guard_accepts_stays_in_the_box).
BRAKING_CHECKS = np.arange(1, 8) / 8.0


class ReferenceGenerator:
    """A reference (x, v) that chases a goal within ``Bounds``.

    Each ``step(dt)`` picks, per axis, the fastest next velocity from which it can still
    stop on the goal and short of the position bounds, and moves towards it by at most
    ``a dt``. So an axis never passes its goal while heading for it, and a new goal is
    taken up from wherever the reference is, without a jump.
    """

    def __init__(self, bounds: Bounds, start: np.ndarray) -> None:
        self.bounds = bounds
        self.q = np.clip(np.asarray(start, dtype=np.float64), bounds.lower, bounds.upper)
        self.v = np.zeros_like(self.q)
        self.goal = self.q.copy()

    def reset(self, start: np.ndarray) -> None:
        """Restart at rest from ``start``."""
        self.q = np.clip(np.asarray(start, dtype=np.float64), self.bounds.lower, self.bounds.upper)
        self.v = np.zeros_like(self.q)
        self.goal = self.q.copy()

    def set_goal(self, goal: np.ndarray) -> None:
        self.goal = np.clip(goal, self.bounds.lower, self.bounds.upper)

    def stop(self) -> None:
        """Brake as hard as allowed and hold where it comes to rest."""
        self.set_goal(self.q + self.v * np.abs(self.v) / (2 * self.bounds.acceleration))

    def step(self, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Advance by ``dt`` seconds; return the new (x, v)."""
        self.q, self.v = self.advance(self.q, self.v, dt)
        return self.q, self.v

    def settled(self, position_tolerance: float = 1e-3, velocity_tolerance: float = 1e-2) -> bool:
        return bool(
            np.all(np.abs(self.goal - self.q) < position_tolerance) and np.all(np.abs(self.v) < velocity_tolerance)
        )

    def advance(self, q: np.ndarray, v: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """One step from (q, v) towards the goal, as a pure function."""
        if dt <= 0.0:
            return q, v
        bounds = self.bounds
        a = bounds.acceleration
        distance = self.goal - q
        direction = np.sign(distance)
        desired = direction * np.minimum(self._stoppable(np.abs(distance), v * direction, a, dt), bounds.velocity)
        # Never head for a position bound faster than it can be stopped short of.
        desired = np.minimum(desired, self._stoppable(bounds.upper - q, v, a, dt))
        desired = np.maximum(desired, -self._stoppable(q - bounds.lower, -v, a, dt))
        new_v = v + np.clip(desired - v, -a * dt, a * dt)
        new_q = q + 0.5 * (v + new_v) * dt
        # An axis that would pass its goal while slow enough to stop within this step
        # stops: at rest where braking at a constant rate takes it, so that every step is
        # one of constant acceleration, which is what the joint controller's cubic
        # interpolation between the points sent reproduces (a step that stopped dead on
        # the goal instead, moving nowhere while its velocity fell, made that spline
        # overshoot and come back: up to 4x the acceleration limit;
        # test_motion.py::test_every_reference_step_is_one_of_constant_acceleration).
        passed = np.sign(self.goal - new_q) != direction
        arrived = passed & (np.abs(v) <= a * dt)
        new_q = np.where(arrived, q + 0.5 * v * dt, new_q)
        new_v = np.where(arrived, 0.0, new_v)
        return np.clip(new_q, bounds.lower, bounds.upper), np.clip(new_v, -bounds.velocity, bounds.velocity)

    @staticmethod
    def _stoppable(room: np.ndarray, speed_towards: np.ndarray, a: np.ndarray, dt: float) -> np.ndarray:
        """Largest next velocity towards an obstacle ``room`` away, given the velocity now,
        from which braking at ``a`` stops within the room (trapezoidal steps of ``dt``):
        v' <= sqrt(2 a room - a dt v + (a dt)^2) - a dt."""
        radicand = 2.0 * a * np.maximum(room, 0.0) - a * dt * speed_towards + (a * dt) ** 2
        return np.sqrt(np.maximum(radicand, 0.0)) - a * dt


def braking_path(q: np.ndarray, v: np.ndarray, limits: MotionLimits, times: np.ndarray) -> np.ndarray:
    """Where the joints are ``times`` (s, one row each) into braking from (q, v): every
    joint slows at its acceleration limit and rests where it stops."""
    speed = np.abs(v)
    stop = speed / limits.acceleration
    elapsed = np.minimum(np.asarray(times)[:, None], stop[None, :])
    travel = speed * elapsed - 0.5 * limits.acceleration * elapsed**2
    return np.clip(q + np.sign(v) * travel, limits.lower, limits.upper)


def braking_knots(q: np.ndarray, v: np.ndarray, limits: MotionLimits) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """How the reference (q, v) brakes to rest: every joint slows at its acceleration
    limit until it stops. Returned as knots (ns after (q, v), q, v), one at each joint's
    stopping time, so that between knots every joint either brakes at a constant rate or
    rests: cubic interpolation through them, which is what a joint trajectory controller
    does, is then the braking exactly. At most one knot per joint; none at rest.

    Joint-wise braking is what ``ArmMotion`` keeps viable at every step (it never plans a
    state from which it would leave the workspace box or the joint limits)."""
    speed = np.abs(v)
    moving = speed > 0.0
    if not np.any(moving):
        return []
    # Whole nanoseconds, rounded up (and at least a microsecond, so no segment is too short
    # to interpolate): each joint decelerates a hair under its limit.
    stop_ns = np.where(moving, np.maximum(np.ceil(speed / limits.acceleration * 1e9), 1000.0), 0.0)
    deceleration = np.where(moving, speed / np.maximum(stop_ns, 1.0) * 1e9, 0.0)
    direction = np.where(moving, np.sign(v), 0.0)
    # (Sorted and deduplicated by hand: np.unique imports numpy.ma on its first call,
    # 24 ms that once made an agent's first command arrive after its own planned points.)
    times_ns = np.sort(stop_ns[moving])
    times_ns = times_ns[np.concatenate(([True], np.diff(times_ns) > 0.0))]
    elapsed = np.minimum(times_ns[:, None], stop_ns[None, :]) * 1e-9  # each joint brakes until it stops
    still_braking = stop_ns[None, :] > times_ns[:, None]
    velocities = np.where(still_braking, direction * (speed - deceleration * elapsed), 0.0)
    positions = np.clip(q + direction * (speed * elapsed - 0.5 * deceleration * elapsed**2), limits.lower, limits.upper)
    return [(int(t_ns), positions[i], velocities[i]) for i, t_ns in enumerate(times_ns)]


def rest_to_rest_path(
    q: np.ndarray, goal: np.ndarray, limits: MotionLimits, samples: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the joints pass on a joint move from rest at ``q`` to rest at ``goal``, each
    joint on its own time-optimal profile within its limits, as ``ReferenceGenerator``
    moves them (so not along a straight joint-space line): times (s), configurations and
    velocities (one per row), ``samples`` evenly in time, then one where each joint arrives."""
    distance = np.abs(goal - q)
    a, top = limits.acceleration, limits.velocity
    peak = np.minimum(np.sqrt(distance * a), top)  # a joint too close to reach top speed
    ramp = peak / a
    arrival = np.where(peak > 0.0, distance / np.maximum(peak, 1e-12) + ramp, 0.0)
    t = np.concatenate((np.linspace(0.0, arrival.max(), samples), arrival))[:, None]
    braking = np.clip(t - (arrival - ramp), 0.0, ramp)
    covered = 0.5 * a * np.minimum(t, ramp) ** 2 + peak * np.clip(t - ramp, 0.0, arrival - 2 * ramp)
    covered += peak * braking - 0.5 * a * braking**2
    speed = np.clip(np.minimum(a * np.minimum(t, ramp), peak - a * braking), 0.0, None)
    direction = np.sign(goal - q)
    return t[:, 0], q + direction * np.minimum(covered, distance), direction * speed


def braking_tcps(kinematics: ArmKinematics, q: np.ndarray, v: np.ndarray, limits: MotionLimits) -> np.ndarray:
    """Where the TCP passes if the joints brake now from (q, v), as ``braking_knots``
    commands it (each joint at its own limit, stopping at its own time, so not along a
    straight line): now, where each joint stops, and at eighths of the longest stop (one
    row each; the box guard's test holds the path between them within 0.3 mm, where five
    points of the straight line missed it by up to 3.4 mm)."""
    speed = np.abs(v)
    if not np.any(speed):
        return kinematics.tcp(q)[None, :]
    stop = speed / limits.acceleration
    times = np.concatenate((stop[speed > 0.0], stop.max() * BRAKING_CHECKS))
    return np.array([kinematics.tcp(q), *(kinematics.tcp(p) for p in braking_path(q, v, limits, times))])
