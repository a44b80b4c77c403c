"""The Panda's kinematics: the MuJoCo model against franka's home pose, gravity and the DH
reference, and the fast kinematics and Jacobian the control loop uses. No ROS."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from franka_agent.core import panda
from franka_agent.core.kinematics import PandaKinematics
from franka_agent.core.limits import WorkspaceBox
from franka_agent.core.panda_mjcf import EE_SITE, panda_mjcf

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

BOX = WorkspaceBox(np.array([0.2, -0.45, 0.05]), np.array([0.75, 0.45, 0.8]))


def test_home_pose_puts_the_hand_where_franka_says() -> None:
    np.testing.assert_allclose(panda.ee_position(panda.HOME), [0.3069, 0.0, 0.4869], atol=5e-4)


def test_mujoco_model_and_agent_kinematics_agree() -> None:
    model = mujoco.MjModel.from_xml_string(panda_mjcf())
    data = mujoco.MjData(model)
    assert [model.joint(i).name for i in range(model.njnt)] == list(panda.JOINT_NAMES)
    np.testing.assert_allclose(model.jnt_range, np.stack([panda.LOWER, panda.UPPER], axis=1))
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.uniform(panda.LOWER, panda.UPPER)
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        np.testing.assert_allclose(data.site(EE_SITE).xpos, panda.ee_position(q), atol=1e-9)


def test_mujoco_model_compensates_gravity_like_the_real_arm() -> None:
    model = mujoco.MjModel.from_xml_string(panda_mjcf())
    data = mujoco.MjData(model)
    data.qpos[:] = panda.HOME
    for _ in range(500):  # half a second with zero commanded torque
        mujoco.mj_step(model, data)
    np.testing.assert_allclose(data.qpos, panda.HOME, atol=1e-6)


def test_fast_kinematics_match_the_dh_reference() -> None:
    kinematics = PandaKinematics()
    rng = np.random.default_rng(2)
    for _ in range(20):
        q = rng.uniform(panda.LOWER, panda.UPPER)
        tcp, jacobian = kinematics.tcp_and_jacobian(q)
        reference_tcp, reference_jacobian = panda.ee_position_and_jacobian(q)
        np.testing.assert_allclose(tcp, reference_tcp, atol=1e-12)
        np.testing.assert_allclose(jacobian, reference_jacobian, atol=1e-12)
        frames = panda.joint_frames(q)
        _, distances = kinematics.axis_distances(q)
        expected = [np.linalg.norm(np.cross(f[:3, 2], tcp - f[:3, 3])) for f in frames[:7]]
        np.testing.assert_allclose(distances, expected, atol=1e-12)


def test_jacobian_matches_finite_differences() -> None:
    q = panda.HOME + 0.1
    _, jacobian = panda.ee_position_and_jacobian(q)
    eps = 1e-7
    numeric = np.stack(
        [
            (panda.ee_position(q + eps * np.eye(7)[i]) - panda.ee_position(q - eps * np.eye(7)[i])) / (2 * eps)
            for i in range(7)
        ],
        axis=1,
    )
    np.testing.assert_allclose(jacobian, numeric, atol=1e-6)
