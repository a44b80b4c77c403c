"""The Franka Emika Panda as numbers: joint names, limits, home pose, kinematics.

Values from Franka's published documentation for the Panda (FER), as franka_ros2
v0.1.0 uses them; kinematics from Franka's modified (Craig) Denavit-Hartenberg table.
Pure numpy: the agent uses it for its observation and inverse kinematics, the mock
for its MuJoCo model, and the tests for checking both against each other.
"""

from __future__ import annotations

import numpy as np

ARM_ID = "panda"
JOINT_NAMES = tuple(f"{ARM_ID}_joint{i}" for i in range(1, 8))
DOF = 7

# Joint limits (rad, rad/s, rad/s^2, rad/s^3, Nm).
LOWER = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
UPPER = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
MAX_VELOCITY = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])
MAX_ACCELERATION = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
MAX_JERK = np.array([7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0])
MAX_EFFORT = np.array([87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])

# franka_ros2's home ("ready") pose.
HOME = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])

# Modified DH: per joint (a, d, alpha), applied as RotX(alpha) TransX(a) RotZ(q) TransZ(d).
DH = np.array(
    [
        [0.0, 0.333, 0.0],
        [0.0, 0.0, -np.pi / 2],
        [0.0, 0.316, np.pi / 2],
        [0.0825, 0.0, np.pi / 2],
        [-0.0825, 0.384, -np.pi / 2],
        [0.0, 0.0, np.pi / 2],
        [0.088, 0.0, np.pi / 2],
    ]
)
FLANGE_OFFSET = 0.107  # m along link 7's z
HAND_TCP_OFFSET = 0.1034  # m from the flange to the Franka Hand's TCP
EE_OFFSET = FLANGE_OFFSET + HAND_TCP_OFFSET


def _dh_transform(a: float, d: float, alpha: float, q: float) -> np.ndarray:
    ca, sa, cq, sq = np.cos(alpha), np.sin(alpha), np.cos(q), np.sin(q)
    return np.array(
        [
            [cq, -sq, 0.0, a],
            [sq * ca, cq * ca, -sa, -sa * d],
            [sq * sa, cq * sa, ca, ca * d],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def joint_frames(q: np.ndarray) -> list[np.ndarray]:
    """Base-frame transforms of the 7 joint frames and, last, the end effector (TCP)."""
    frames = []
    transform = np.eye(4)
    for (a, d, alpha), angle in zip(DH, q, strict=True):
        transform = transform @ _dh_transform(a, d, alpha, angle)
        frames.append(transform)
    ee = transform.copy()
    ee[:3, 3] = transform[:3, 3] + transform[:3, 2] * EE_OFFSET
    frames.append(ee)
    return frames


def ee_position(q: np.ndarray) -> np.ndarray:
    """Position of the hand's TCP (m, base frame)."""
    return joint_frames(q)[-1][:3, 3].copy()


def ee_position_and_jacobian(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TCP position and its 3x7 position Jacobian (m/rad)."""
    frames = joint_frames(q)
    p = frames[-1][:3, 3]
    jacobian = np.empty((3, DOF))
    for i in range(DOF):
        axis = frames[i][:3, 2]
        jacobian[:, i] = np.cross(axis, p - frames[i][:3, 3])
    return p.copy(), jacobian
