"""What the mock's joint trajectory controller accepts of a JointTrajectory, and why it
refuses the rest, as joint_trajectory_controller does (ros2_controllers 2.23.0 and
4.42.1: its message checks)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from trajectory_msgs.msg import JointTrajectory

from franka_agent.core import panda
from franka_agent.core.trajectory import TrajectoryPoint


@dataclass(frozen=True)
class Refusal:
    """Why a trajectory was refused; ``violation`` names the limit it broke, if any (the
    agent must never send it)."""

    text: str
    violation: str | None = None


def accepted_points(msg: JointTrajectory, allow_ending_moving: bool) -> list[TrajectoryPoint] | Refusal:
    """The trajectory's points in panda_joint1..7 order, or why it is refused."""
    try:
        order = [list(msg.joint_names).index(name) for name in panda.JOINT_NAMES]
    except ValueError:
        return Refusal(f"rejected a trajectory for joints {list(msg.joint_names)}: expected {list(panda.JOINT_NAMES)}")
    points = []
    for point in msg.points:
        positions = np.asarray(point.positions, dtype=np.float64)
        velocities = np.asarray(point.velocities, dtype=np.float64)
        if positions.size != panda.DOF or velocities.size not in (0, panda.DOF):
            return Refusal("rejected a trajectory: a point has the wrong number of values")
        if not (np.all(np.isfinite(positions)) and np.all(np.isfinite(velocities))):
            return Refusal("rejected a trajectory with NaN or inf values", "NaN or inf in a commanded point")
        t = point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
        points.append(TrajectoryPoint(t, positions[order], velocities[order] if velocities.size else None))
    ends_moving = bool(points) and points[-1].velocities is not None and np.any(points[-1].velocities != 0.0)
    if ends_moving and not allow_ending_moving:
        # What joint_trajectory_controller does (its default since Jazzy): a trajectory
        # that ends moving would leave the arm holding a moving reference.
        return Refusal(
            "rejected a trajectory whose last point has a non-zero velocity",
            "a trajectory ending with a non-zero velocity",
        )
    return points
