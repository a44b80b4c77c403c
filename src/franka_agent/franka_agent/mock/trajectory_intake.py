"""What the mock's joint trajectory controller accepts of a JointTrajectory, and why it
refuses the rest, as joint_trajectory_controller does (ros2_controllers 2.23.0 and
4.42.1: its message checks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from trajectory_msgs.msg import JointTrajectory

from franka_agent.core.trajectory import TrajectoryPoint


@dataclass(frozen=True)
class Refusal:
    """Why a trajectory was refused; ``violation`` names the limit it broke, if any (the
    agent must never send it)."""

    text: str
    violation: str | None = None


def accepted_points(
    msg: JointTrajectory, joint_names: Sequence[str], allow_ending_moving: bool
) -> list[TrajectoryPoint] | Refusal:
    """The trajectory's points in the order of the arm's ``joint_names``, or why it is refused."""
    try:
        order = [list(msg.joint_names).index(name) for name in joint_names]
    except ValueError:
        return Refusal(f"rejected a trajectory for joints {list(msg.joint_names)}: expected {list(joint_names)}")
    dof = len(joint_names)
    points = []
    for point in msg.points:
        positions = np.asarray(point.positions, dtype=np.float64)
        velocities = np.asarray(point.velocities, dtype=np.float64)
        if positions.size != dof or velocities.size not in (0, dof):
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
