"""A robot profile: everything arm-specific, read from one YAML file per arm.

Joint names, the published joint limits (each with its source), the kinematic chain
(URDF joint origins, so the manufacturer's description figures go in as they are), the
link dynamics the mock simulates, the home pose, the workspace and target boxes, the
trajectory controller (its topic, gains and the settings it needs), the joint-state
topics and rates, the driver's bring-up per release, the stop surface and the recovery.
The code reads all of this from the profile; nothing else names an arm's joints, topics
or limits (``test_profiles.py::test_no_module_names_an_arms_joints_or_topics``).

Profiles live in ``config/robots/<name>.yaml``; a path to a file works too
(``profile_file.load_profile`` reads one). Pure Python and numpy, no ROS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from spin_decoupler_ros.core.errors import ParameterError

PROFILE_FOLDER = "robots"
BUILT_IN_PROFILES = ("panda", "fr3", "ur5e")
STOP_SURFACES = ("still_joint_states", "franka_robot_state", "ur_robot_mode")


class ProfileError(ParameterError):
    """A robot profile that is missing a field or holds a value that cannot be right."""


@dataclass(frozen=True)
class Origin:
    """A fixed transform as URDF writes it: translation (m), then roll-pitch-yaw (rad,
    fixed axes X, Y, Z)."""

    xyz: np.ndarray
    rpy: np.ndarray

    def matrix(self) -> np.ndarray:
        """The 4x4 homogeneous transform."""
        transform = np.eye(4)
        transform[:3, :3] = rpy_matrix(self.rpy)
        transform[:3, 3] = self.xyz
        return transform

    def quaternion(self) -> np.ndarray:
        """(w, x, y, z), as MuJoCo takes it."""
        return matrix_quaternion(rpy_matrix(self.rpy))


def rpy_matrix(rpy: np.ndarray) -> np.ndarray:
    """URDF's rotation: Rz(yaw) Ry(pitch) Rx(roll)."""
    roll, pitch, yaw = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_quaternion(rotation: np.ndarray) -> np.ndarray:
    """The unit quaternion (w, x, y, z) of a rotation matrix, w >= 0."""
    m = rotation
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0.0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = np.array([0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s])
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = np.array([(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s])
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = np.array([(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = np.array([(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s])
    q /= np.linalg.norm(q)
    return q if q[0] >= 0.0 else -q


@dataclass(frozen=True)
class JointLimits:
    """The arm's published joint limits (rad, rad/s, rad/s^2, rad/s^3, Nm)."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray
    effort: np.ndarray


@dataclass(frozen=True)
class Inertial:
    """A body's mass (kg), centre of mass (m) and inertia about it
    (ixx, iyy, izz, ixy, ixz, iyz; kg m^2), optionally in a frame turned by ``rpy``."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray
    rpy: np.ndarray


@dataclass(frozen=True)
class Dynamics:
    """What the mock simulates beyond kinematics: link inertials, reflected rotor
    inertia (armature) and joint friction per joint; the base and the tool."""

    base: Inertial
    links: tuple[Inertial, ...]
    tool: Inertial
    armature: np.ndarray
    damping: np.ndarray
    gravity_compensated: bool  # the effort interface takes torques without gravity


@dataclass(frozen=True)
class Controller:
    """The trajectory controller the agent commands: its name, the topic it reads, the
    interface it commands, its gains (the mock's PD), and the parameters it must be
    loaded with for the agent's stream of short trajectories."""

    name: str
    command_topic: str
    interface: str
    p_gains: np.ndarray
    d_gains: np.ndarray
    settings: Mapping[str, Any]


@dataclass(frozen=True)
class JointStates:
    """Where the joint states are: the controller-rate topic the agent reads and the
    merged, slower one (franka_ros2's joint_state_publisher), each with its rate (Hz)."""

    topic: str
    rate: float
    merged_topic: str
    merged_rate: float


@dataclass(frozen=True)
class DriverRelease:
    """How one release of the driver brings the real arm up."""

    release: str
    distro: str
    package: str
    launch_file: str
    arguments: Mapping[str, str]
    activate: tuple[str, ...]  # commands that make the trajectory controller active
    notes: str


@dataclass(frozen=True)
class StopSurface:
    """What tells that the arm stopped itself: ``still_joint_states`` (the joint states
    stay still while commanded to move), ``franka_robot_state`` (``robot_mode`` on the
    robot state topic), ``ur_robot_mode`` (the driver's safety mode topic)."""

    kind: str
    topic: str
    stopped_modes: tuple[int, ...]


@dataclass(frozen=True)
class Recovery:
    """How the arm comes back after such a stop: the agent's ``recovery`` parameter for
    the real arm, the steps in words for the docs, and where a three-step Franka recovery
    (``franka_hardware:<action>``) finds controller_manager and the hardware component."""

    agent_parameter: str
    steps: tuple[str, ...]
    controller_manager: str = "/controller_manager"
    hardware_component: str = ""


@dataclass(frozen=True)
class RobotProfile:
    name: str
    description: str
    joint_names: tuple[str, ...]
    limits: JointLimits
    limit_sources: Mapping[str, str]
    home: np.ndarray
    base: Origin
    joints: tuple[Origin, ...]  # each joint's origin in its parent link; it turns about its z
    flange: Origin  # the tool's mount in the last link
    tcp: np.ndarray  # the tool centre point in the tool's frame (m)
    kinematics_source: str
    dynamics: Dynamics
    workspace_low: np.ndarray
    workspace_high: np.ndarray
    target_low: np.ndarray
    target_high: np.ndarray
    controller: Controller
    joint_states: JointStates
    drivers: tuple[DriverRelease, ...]
    stop: StopSurface
    recovery: Recovery
    path: Path | None = field(default=None, compare=False)

    @property
    def dof(self) -> int:
        return len(self.joint_names)

    def joint_frames(self, q: np.ndarray) -> list[np.ndarray]:
        """Base-frame transforms of every joint frame and, last, the TCP's: numpy, the
        reference the MuJoCo model is checked against (``test_profiles.py``)."""
        frames = []
        transform = self.base.matrix()
        for origin, angle in zip(self.joints, q, strict=True):
            turn = np.eye(4)
            c, s = np.cos(angle), np.sin(angle)
            turn[:2, :2] = [[c, -s], [s, c]]
            transform = transform @ origin.matrix() @ turn
            frames.append(transform)
        tcp = transform @ self.flange.matrix()
        tcp[:3, 3] = tcp[:3, :3] @ self.tcp + tcp[:3, 3]
        frames.append(tcp)
        return frames

    def tcp_position(self, q: np.ndarray) -> np.ndarray:
        """Position of the TCP (m, base frame)."""
        return self.joint_frames(q)[-1][:3, 3].copy()

    def driver(self, release: str | None = None) -> DriverRelease:
        """The driver release named (by its ``release`` or its ``distro``), else the first."""
        if release is None:
            return self.drivers[0]
        for driver in self.drivers:
            if release in (driver.release, driver.distro):
                return driver
        known = ", ".join(f"{d.release} ({d.distro})" for d in self.drivers)
        raise ProfileError(f"robot profile '{self.name}' has no driver release '{release}'; it has {known}")
