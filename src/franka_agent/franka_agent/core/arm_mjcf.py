"""A MuJoCo model of an arm written from its robot profile.

Kinematics from the profile's joint origins (so the agent's kinematics and the simulated
arm agree to the micrometre), link masses, centres of mass and inertias, reflected rotor
inertias as joint armature, and the tool as one rigid body. Spheres and boxes stand in
for the meshes: no asset is downloaded.

Arm bodies carry ``gravcomp="1"`` where the profile says the arm's effort interface
takes torques without gravity (the Franka arms), or its own servo carries its weight.
"""

from __future__ import annotations

import numpy as np

from franka_agent.core.profile import Inertial, Origin, RobotProfile

EE_SITE = "ee"


def _vec(values: tuple[float, ...] | np.ndarray) -> str:
    return " ".join(f"{v:.9g}" for v in values)


def _inertial(inertial: Inertial) -> str:
    if np.any(inertial.rpy):
        quat = Origin(np.zeros(3), inertial.rpy).quaternion()
        return (
            f'<inertial pos="{_vec(inertial.com)}" quat="{_vec(quat)}" mass="{inertial.mass:.9g}" '
            f'diaginertia="{_vec(inertial.inertia[:3])}"/>'
        )
    return f'<inertial pos="{_vec(inertial.com)}" mass="{inertial.mass:.9g}" fullinertia="{_vec(inertial.inertia)}"/>'


def arm_mjcf(profile: RobotProfile, timestep: float = 0.001) -> str:
    """The MJCF text of the arm on a floor, with one torque motor per joint."""
    dynamics = profile.dynamics
    gravcomp = ' gravcomp="1"' if dynamics.gravity_compensated else ""
    bodies = []
    for i, (origin, name) in enumerate(zip(profile.joints, profile.joint_names, strict=True)):
        bodies.append(
            f'<body name="link{i + 1}" pos="{_vec(origin.xyz)}" quat="{_vec(origin.quaternion())}"{gravcomp}>'
            f'<joint name="{name}" axis="0 0 1" range="{profile.limits.lower[i]:.9g} {profile.limits.upper[i]:.9g}" '
            f'armature="{dynamics.armature[i]:.9g}" damping="{dynamics.damping[i]:.9g}"/>'
            f"{_inertial(dynamics.links[i])}"
            f'<geom type="sphere" size="0.06" rgba="0.95 0.95 0.95 1"/>'
        )
    tool = (
        f'<body name="tool" pos="{_vec(profile.flange.xyz)}" quat="{_vec(profile.flange.quaternion())}"{gravcomp}>'
        f"{_inertial(dynamics.tool)}"
        '<geom type="box" size="0.03 0.1 0.03" pos="0 0 0.05" rgba="0.95 0.95 0.95 1"/>'
        f'<site name="{EE_SITE}" pos="{_vec(profile.tcp)}" size="0.01"/>'
        "</body>"
    )
    chain = "".join(bodies) + tool + "</body>" * len(bodies)
    motors = "".join(
        f'<motor name="{name}_motor" joint="{name}" ctrlrange="{-effort:g} {effort:g}"/>'
        for name, effort in zip(profile.joint_names, profile.limits.effort, strict=True)
    )
    return (
        f'<mujoco model="{profile.name}">'
        '<compiler angle="radian" autolimits="true"/>'
        f'<option timestep="{timestep:.9g}" integrator="implicitfast" gravity="0 0 -9.81"/>'
        # No contacts: the agent keeps the tool in its workspace box, above the table.
        '<default><geom contype="0" conaffinity="0"/></default>'
        "<worldbody>"
        '<geom name="floor" type="plane" size="2 2 0.1" rgba="0.3 0.3 0.3 1"/>'
        f'<body name="base" pos="{_vec(profile.base.xyz)}" quat="{_vec(profile.base.quaternion())}">'
        f"{_inertial(dynamics.base)}"
        '<geom type="cylinder" size="0.08 0.05" pos="0 0 0.05" rgba="0.95 0.95 0.95 1"/>'
        f"{chain}"
        "</body>"
        "</worldbody>"
        f"<actuator>{motors}</actuator>"
        "</mujoco>"
    )
