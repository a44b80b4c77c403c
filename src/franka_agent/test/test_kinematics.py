"""Each arm's kinematics: the MuJoCo model built from its profile against the profile's
numpy chain, published reference poses and gravity, and the fast kinematics and Jacobian
the control loop uses. No ROS."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from franka_agent.core.arm_mjcf import EE_SITE, arm_mjcf
from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.profile import BUILT_IN_PROFILES, RobotProfile
from franka_agent.core.profile_file import load_profile

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

PROFILES = [load_profile(name) for name in BUILT_IN_PROFILES]

# Franka's modified DH table for the Panda and the FR3 (a, d, alpha per joint; flange
# 0.107 m, the hand's TCP 0.1034 m beyond), applied as RotX(alpha) TransX(a) RotZ(q)
# TransZ(d): an independent reference for the profiles' URDF-style joint origins.
FRANKA_DH = np.array(
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


def franka_dh_tcp(q: np.ndarray) -> np.ndarray:
    transform = np.eye(4)
    for (a, d, alpha), angle in zip(FRANKA_DH, q, strict=True):
        ca, sa, cq, sq = np.cos(alpha), np.sin(alpha), np.cos(angle), np.sin(angle)
        transform = transform @ np.array(
            [[cq, -sq, 0.0, a], [sq * ca, cq * ca, -sa, -sa * d], [sq * sa, cq * sa, ca, ca * d], [0, 0, 0, 1]]
        )
    return transform[:3, 3] + transform[:3, 2] * (0.107 + 0.1034)


@pytest.mark.parametrize("name", ["panda", "fr3"])
def test_the_franka_profiles_match_frankas_dh_table(name: str) -> None:
    profile = load_profile(name)
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.uniform(profile.limits.lower, profile.limits.upper)
        np.testing.assert_allclose(profile.tcp_position(q), franka_dh_tcp(q), atol=1e-12)
    np.testing.assert_allclose(profile.tcp_position(profile.home), [0.3069, 0.0, 0.4869], atol=5e-4)


def test_the_ur5e_profile_matches_universal_robots_published_kinematics() -> None:
    """At zero, UR's base frame puts tool0 at (-a2 - a3, -d4 - d6, d1 - d5) =
    (0.8172, -0.2329, 0.0628) turned half a turn about z into base_link (REP-103); the
    tool's z then points along base_link's +y, and the TCP is 15 cm further."""
    profile = load_profile("ur5e")
    np.testing.assert_allclose(profile.tcp_position(np.zeros(6)), [0.8172, 0.2329 + 0.15, 0.0628], atol=1e-6)
    # Elbow up, wrist down (the home pose): the tool points straight down.
    frames = profile.joint_frames(profile.home)
    np.testing.assert_allclose(frames[-1][:3, 2], [0.0, 0.0, -1.0], atol=1e-6)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_mujoco_model_and_profile_kinematics_agree(profile: RobotProfile) -> None:
    model = mujoco.MjModel.from_xml_string(arm_mjcf(profile))
    data = mujoco.MjData(model)
    assert [model.joint(i).name for i in range(model.njnt)] == list(profile.joint_names)
    np.testing.assert_allclose(model.jnt_range, np.stack([profile.limits.lower, profile.limits.upper], axis=1))
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.uniform(profile.limits.lower, profile.limits.upper)
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        np.testing.assert_allclose(data.site(EE_SITE).xpos, profile.tcp_position(q), atol=1e-9)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_mujoco_model_compensates_gravity_like_the_real_arm(profile: RobotProfile) -> None:
    model = mujoco.MjModel.from_xml_string(arm_mjcf(profile))
    data = mujoco.MjData(model)
    data.qpos[:] = profile.home
    for _ in range(500):  # half a second with zero commanded torque
        mujoco.mj_step(model, data)
    np.testing.assert_allclose(data.qpos, profile.home, atol=1e-6)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_fast_kinematics_match_the_profile_chain(profile: RobotProfile) -> None:
    kinematics = ArmKinematics(profile)
    rng = np.random.default_rng(2)
    for _ in range(20):
        q = rng.uniform(profile.limits.lower, profile.limits.upper)
        tcp, jacobian = kinematics.tcp_and_jacobian(q)
        frames = profile.joint_frames(q)
        np.testing.assert_allclose(tcp, frames[-1][:3, 3], atol=1e-9)
        axes = [np.cross(f[:3, 2], tcp - f[:3, 3]) for f in frames[:-1]]
        np.testing.assert_allclose(jacobian, np.stack(axes, axis=1), atol=1e-9)
        _, distances = kinematics.axis_distances(q)
        np.testing.assert_allclose(distances, [np.linalg.norm(axis) for axis in axes], atol=1e-9)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_jacobian_matches_finite_differences(profile: RobotProfile) -> None:
    q = profile.home + 0.1
    _, jacobian = ArmKinematics(profile).tcp_and_jacobian(q)
    eps = 1e-7
    step = np.eye(profile.dof) * eps
    numeric = np.stack(
        [
            (profile.tcp_position(q + step[i]) - profile.tcp_position(q - step[i])) / (2 * eps)
            for i in range(profile.dof)
        ],
        axis=1,
    )
    np.testing.assert_allclose(jacobian, numeric, atol=1e-6)
