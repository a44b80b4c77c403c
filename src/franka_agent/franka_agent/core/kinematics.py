"""Fast arm kinematics: MuJoCo's C routines on the model built from the robot profile.

``RobotProfile.joint_frames`` computes the same with numpy (the reference the tests
compare against);
this is 20-60x faster (1.5 us for the TCP, 2.6 us with its Jacobian), which matters
in a control loop that evaluates kinematics a dozen times a period.
"""

from __future__ import annotations

import mujoco
import numpy as np

from franka_agent.core.arm_mjcf import EE_SITE, arm_mjcf
from franka_agent.core.limits import MotionLimits
from franka_agent.core.profile import RobotProfile


class ArmKinematics:
    """TCP position, its Jacobian, and the joint axes, for a joint configuration.

    Not thread-safe (it owns one MjData); every ArmMotion has its own.
    """

    def __init__(self, profile: RobotProfile) -> None:
        self.profile = profile
        self.model = mujoco.MjModel.from_xml_string(arm_mjcf(profile))
        self.data = mujoco.MjData(self.model)
        self._site = self.model.site(EE_SITE).id
        self._jacobian = np.zeros((3, self.model.nv))

    def tcp(self, q: np.ndarray) -> np.ndarray:
        """TCP position (m, base frame)."""
        self.data.qpos[:] = q
        mujoco.mj_kinematics(self.model, self.data)
        return self.data.site_xpos[self._site].copy()

    def tcp_and_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """TCP position and its 3 x dof position Jacobian (m/rad)."""
        self.data.qpos[:] = q
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        mujoco.mj_jacSite(self.model, self.data, self._jacobian, None, self._site)
        return self.data.site_xpos[self._site].copy(), self._jacobian.copy()

    def axis_distances(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """TCP position, and its distance (m) from each joint's axis."""
        self.data.qpos[:] = q
        mujoco.mj_kinematics(self.model, self.data)
        tcp = self.data.site_xpos[self._site].copy()
        offsets = tcp - self.data.xanchor
        return tcp, np.linalg.norm(np.cross(self.data.xaxis, offsets), axis=1)


def solve_ik(
    kinematics: ArmKinematics,
    q_from: np.ndarray,
    target: np.ndarray,
    limits: MotionLimits,
    damping: float = 0.05,
    iterations: int = 1,
    posture: np.ndarray | None = None,
    posture_gain: float = 0.05,
) -> np.ndarray:
    """Joints near ``q_from`` that move the TCP towards ``target``: damped least squares,
    with a null-space pull towards ``posture`` (the profile's home pose by default),
    clipped to the joint limits."""
    if posture is None:
        posture = kinematics.profile.home
    q = q_from.copy()
    for _ in range(iterations):
        position, jacobian = kinematics.tcp_and_jacobian(q)
        jjt = jacobian @ jacobian.T + (damping**2) * np.eye(3)
        pseudo_inverse = jacobian.T @ np.linalg.inv(jjt)
        null_space = np.eye(kinematics.profile.dof) - pseudo_inverse @ jacobian
        q = q + pseudo_inverse @ (target - position) + posture_gain * null_space @ (posture - q)
        q = np.clip(q, limits.lower, limits.upper)
    return q
