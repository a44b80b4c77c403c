"""What the mock hardware checks, without ROS.

The arm faults (or joint_trajectory_controller refuses) on commands outside its joint
position, velocity and acceleration limits; the task adds a workspace box. Two checks:

- ``DesiredStateMonitor``: the desired state the controller commands at every update
  (what ``TrajectoryFollower`` samples, as joint_trajectory_controller does): joint
  positions and velocities within the limits, and the change of the desired velocity
  from one update to the next within the acceleration limits. This is what the
  controller really commands, whatever the messages said: a trajectory that arrives
  after its first points makes the desired state jump, and the jump is counted here.
- ``command_violations``: the TCP of every point of a trajectory inside the box.

The mock counts every violation, so tests can demand zero whatever the agent is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.limits import WorkspaceBox
from franka_agent.core.profile import JointLimits
from franka_agent.core.trajectory import TrajectoryPoint

# A limit is violated when exceeded by more than this share (floating-point and
# interpolation slack, far below anything physical).
LIMIT_TOLERANCE = 1e-3
BOX_TOLERANCE = 1e-3  # m
POSITION_TOLERANCE = 1e-6  # rad


@dataclass(frozen=True)
class Violation:
    """One limit broken: what, when (s, the controller's time), and the values."""

    kind: str  # "position" | "velocity" | "acceleration" | "box"
    text: str
    time: float = 0.0
    values: list[float] = field(default_factory=list)


class DesiredStateMonitor:
    """Checks the desired (q, v) a joint controller commands, one update after another."""

    def __init__(self, limits: JointLimits) -> None:
        self.limits = limits
        self._last: tuple[float, np.ndarray] | None = None
        self._tolerance = 1.0 + LIMIT_TOLERANCE
        self.worst_acceleration_share = 0.0  # the largest |a| / limit seen, for reports

    def restart(self) -> None:
        """Forget the last update (the arm was placed somewhere: no motion between)."""
        self._last = None

    def check(self, t: float, q: np.ndarray, v: np.ndarray) -> list[Violation]:
        found = []
        if np.any((q < self.limits.lower - POSITION_TOLERANCE) | (q > self.limits.upper + POSITION_TOLERANCE)):
            found.append(Violation("position", f"position outside the joint limits: {np.round(q, 4)}", t, list(q)))
        if np.any(np.abs(v) > self.limits.velocity * self._tolerance):
            found.append(Violation("velocity", f"velocity above the limits: {np.round(v, 4)}", t, list(v)))
        last = self._last
        self._last = (t, v.copy())
        if last is not None and t > last[0]:
            a = (v - last[1]) / (t - last[0])
            share = float(np.max(np.abs(a) / self.limits.acceleration))
            self.worst_acceleration_share = max(self.worst_acceleration_share, share)
            if share > self._tolerance:
                found.append(Violation("acceleration", f"acceleration above the limits: {np.round(a, 2)}", t, list(a)))
        return found

    def check_many(self, ts: np.ndarray, q: np.ndarray, v: np.ndarray) -> list[Violation]:
        """``check`` on each row, one update after another: the same findings and state,
        with the arithmetic done once for all rows where none breaks a limit (the usual
        case). (test_trajectory_model.py::test_checking_many_updates_at_once_finds_what_checking_each_finds)"""
        if ts.size == 0:
            return []
        last = self._last
        # (No update before the first after a restart: its "previous" is itself, unmoved.)
        previous_t = np.concatenate(([ts[0] if last is None else last[0]], ts[:-1]))
        previous_v = np.vstack((v[:1] if last is None else last[1][None, :], v[:-1]))
        moved = ts > previous_t
        with np.errstate(divide="ignore", invalid="ignore"):
            a = (v - previous_v) / (ts - previous_t)[:, None]
            shares = np.max(np.abs(a) / self.limits.acceleration, axis=1)[moved]
        if (
            np.any((q < self.limits.lower - POSITION_TOLERANCE) | (q > self.limits.upper + POSITION_TOLERANCE))
            or np.any(np.abs(v) > self.limits.velocity * self._tolerance)
            or np.any(shares > self._tolerance)
        ):
            found = []
            for t, q_row, v_row in zip(ts, q, v, strict=True):
                found += self.check(float(t), q_row, v_row)
            return found
        if shares.size:
            self.worst_acceleration_share = max(self.worst_acceleration_share, float(np.max(shares)))
        self._last = (float(ts[-1]), v[-1].copy())
        return []


def command_violations(points: list[TrajectoryPoint], box: WorkspaceBox, kinematics: ArmKinematics) -> list[Violation]:
    """The points of a trajectory whose TCP lies outside ``box``."""
    found = []
    for point in points:
        excess = box.excess(kinematics.tcp(point.positions))
        if excess > BOX_TOLERANCE:
            found.append(
                Violation(
                    "box", f"TCP {excess * 1000:.1f} mm outside the workspace box", point.time, list(point.positions)
                )
            )
    return found
