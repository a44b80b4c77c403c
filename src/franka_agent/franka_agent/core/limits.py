"""The limits the agent's commands keep: the workspace box for the tool's TCP and a share
of the arm's joint limits (from its robot profile).

Pure numpy, no ROS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from franka_agent.core.profile import RobotProfile


@dataclass(frozen=True)
class WorkspaceBox:
    """An axis-aligned box (m, base frame) for the TCP."""

    low: np.ndarray
    high: np.ndarray

    def __post_init__(self) -> None:
        low = np.asarray(self.low, dtype=np.float64)
        high = np.asarray(self.high, dtype=np.float64)
        if low.shape != (3,) or high.shape != (3,) or np.any(low >= high):
            raise ValueError(f"workspace box needs low < high in x, y, z; got {low} and {high}")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    def contains(self, point: np.ndarray, tolerance: float = 0.0) -> bool:
        return bool(np.all(point >= self.low - tolerance) and np.all(point <= self.high + tolerance))

    def clip(self, point: np.ndarray) -> np.ndarray:
        return np.clip(point, self.low, self.high)

    def shrunk(self, margin: float) -> WorkspaceBox:
        if np.any(self.high - self.low <= 2 * margin):
            raise ValueError(f"workspace box is too small for a {margin} m margin")
        return WorkspaceBox(self.low + margin, self.high - margin)

    def excess(self, point: np.ndarray) -> float:
        """How far (m) outside the box a point is (or the farthest of several, one per
        row); 0 inside."""
        return float(np.max(np.maximum(self.low - point, point - self.high).clip(min=0.0)))


@dataclass(frozen=True)
class Bounds:
    """Per-axis position bounds and speed and acceleration limits of a reference."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray


@dataclass(frozen=True)
class MotionLimits:
    """The joint limits the agent's commands keep: a share of the arm's, plus a margin.

    :param profile: the arm, whose published limits these are shares of.
    :param velocity_fraction: share of the arm's joint velocity limits used.
    :param acceleration_fraction: share of its acceleration limits.
    :param jerk_capped: also never more than half the jerk limit times the controller's
        update period. The commands are segments of constant acceleration, so the
        acceleration steps at every point, and the arm's controller takes that step
        within one of its updates (1 kHz on a Franka, 500 Hz on a UR): capped, a full
        reversal, 2 a, in one update period stays within the jerk limit, as
        bench/genuine_jtc.py measured on the genuine joint_trajectory_controller's
        reference (test_profiles.py). It slows the arms 2-4x: 2.5 rad/s^2 on the FR3.
    :param joint_margin: distance (rad) kept from every joint's position limits.
    """

    profile: RobotProfile
    velocity_fraction: float = 0.5
    acceleration_fraction: float = 0.5
    joint_margin: float = 0.05
    jerk_capped: bool = False
    joints: Bounds = field(init=False)

    def __post_init__(self) -> None:
        for name in ("velocity_fraction", "acceleration_fraction"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {value}")
        if not 0.0 <= self.joint_margin < 0.5:
            raise ValueError(f"joint_margin must be in [0, 0.5) rad, got {self.joint_margin}")
        arm = self.profile.limits
        joints = Bounds(
            arm.lower + self.joint_margin,
            arm.upper - self.joint_margin,
            arm.velocity * self.velocity_fraction,
            np.minimum(arm.acceleration * self.acceleration_fraction, self.jerk_cap),
        )
        object.__setattr__(self, "joints", joints)

    @property
    def dof(self) -> int:
        return self.profile.dof

    @property
    def lower(self) -> np.ndarray:
        return self.joints.lower

    @property
    def upper(self) -> np.ndarray:
        return self.joints.upper

    @property
    def velocity(self) -> np.ndarray:
        return self.joints.velocity

    @property
    def acceleration(self) -> np.ndarray:
        return self.joints.acceleration

    @property
    def jerk_cap(self) -> np.ndarray:
        """The largest joint accelerations whose full reversal in one controller update
        stays within the arm's jerk limits (infinite unless ``jerk_capped``)."""
        if not self.jerk_capped:
            return np.full(self.profile.dof, np.inf)
        return self.profile.limits.jerk / (2.0 * self.update_rate)

    @property
    def update_rate(self) -> float:
        """The arm's controller's update rate (Hz): its drivers publish the joint states
        at every update."""
        return float(self.profile.joint_states.rate)
