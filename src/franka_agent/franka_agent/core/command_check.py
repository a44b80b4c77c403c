"""What the mock hardware checks in every trajectory it receives, without ROS.

The Panda faults (or joint_trajectory_controller refuses) on commands outside its joint
position, velocity and acceleration limits; the task adds a workspace box. The mock
counts every such point, so tests can demand zero whatever the agent is sent.
"""

from __future__ import annotations

import numpy as np

from franka_agent.core import panda
from franka_agent.core.kinematics import PandaKinematics
from franka_agent.core.motion import WorkspaceBox
from franka_agent.core.trajectory import TIME_EPSILON, TrajectoryFollower, TrajectoryPoint

# A limit is violated when exceeded by more than this share (floating-point and
# interpolation slack, far below anything physical).
LIMIT_TOLERANCE = 1e-3
BOX_TOLERANCE = 1e-3  # m


def command_violations(
    points: list[TrajectoryPoint],
    start: float,
    now: float,
    follower: TrajectoryFollower,
    box: WorkspaceBox,
    kinematics: PandaKinematics,
) -> list[str]:
    """What is wrong with a trajectory timed from ``start`` arriving at ``now``, given the
    ``follower`` (the controller) before it takes over: one text per violation. The
    acceleration into each point is counted from the desired velocity the controller
    has when the trajectory arrives, as the controller will have to achieve it."""
    ahead = []
    t_previous = now - start
    for point in points:
        if point.time > t_previous + TIME_EPSILON:  # the controller drops the rest too
            ahead.append(point)
            t_previous = point.time
    if not ahead:
        return []
    tolerance = 1.0 + LIMIT_TOLERANCE
    found = []
    positions = np.array([point.positions for point in ahead])
    outside = np.any((positions < panda.LOWER - 1e-6) | (positions > panda.UPPER + 1e-6), axis=1)
    found += [f"position outside the joint limits: {np.round(q, 4)}" for q in positions[outside]]
    with_velocity = [point for point in ahead if point.velocities is not None]
    if with_velocity:
        # The acceleration into each point from the one before: from the desired velocity
        # the controller has when the trajectory arrives, for the first.
        times = np.array([now - start] + [point.time for point in with_velocity])
        velocities = np.array([follower.sample(now)[1]] + [point.velocities for point in with_velocity])
        too_fast = np.any(np.abs(velocities[1:]) > panda.MAX_VELOCITY * tolerance, axis=1)
        found += [f"velocity above the limits: {np.round(v, 4)}" for v in velocities[1:][too_fast]]
        accelerations = np.diff(velocities, axis=0) / np.diff(times)[:, None]
        too_hard = np.any(np.abs(accelerations) > panda.MAX_ACCELERATION * tolerance, axis=1)
        found += [f"acceleration above the limits: {np.round(a, 2)}" for a in accelerations[too_hard]]
    for q in positions:
        excess = box.excess(kinematics.tcp(q))
        if excess > BOX_TOLERANCE:
            found.append(f"TCP {excess * 1000:.1f} mm outside the workspace box")
    return found
