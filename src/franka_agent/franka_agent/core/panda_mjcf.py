"""A MuJoCo model of the Panda written from Franka's published parameters.

Kinematics from the modified DH table in ``core.panda`` (so the agent's kinematics
and the simulated arm agree to the micrometre), link masses, centres of mass and
inertias from the identified Panda dynamics (Gaz et al., RA-L 2019, as in
franka_description), reflected rotor inertias as joint armature, and the Franka Hand
as one rigid body. Capsules stand in for the meshes: no asset is downloaded.

Arm bodies carry ``gravcomp="1"``: like the real Panda, whose torque interface takes
torques *without* gravity, the simulated arm has gravity compensated for it.
"""

from __future__ import annotations

import numpy as np

from franka_agent.core import panda

# Per link 1..7: mass (kg), centre of mass (m, link frame), inertia about it
# (ixx, iyy, izz, ixy, ixz, iyz; kg m^2).
LINK_INERTIALS = [
    (4.970684, (0.003875, 0.002081, -0.1750), (0.70337, 0.70661, 0.009117, -0.000139, 0.006772, 0.019169)),
    (0.646926, (-0.003141, -0.02872, 0.003495), (0.007962, 0.02811, 0.025995, -0.003925, 0.010254, 0.000704)),
    (3.228604, (0.027518, 0.039252, -0.066502), (0.037242, 0.036155, 0.01083, -0.004761, -0.011396, -0.012805)),
    (3.587895, (-0.05317, 0.104419, 0.027454), (0.025853, 0.019552, 0.028323, 0.007796, -0.001332, 0.008641)),
    (1.225946, (-0.011953, 0.041065, -0.038437), (0.035549, 0.029474, 0.008627, -0.002117, -0.004037, 0.000229)),
    (1.666555, (0.060149, -0.014117, -0.010517), (0.001964, 0.004354, 0.005433, 0.000109, -0.001158, 0.000341)),
    (0.735522, (0.010517, -0.004252, 0.061597), (0.012516, 0.010027, 0.004815, -0.000428, -0.001196, -0.000741)),
]
HAND_INERTIAL = (0.73, (-0.01, 0.0, 0.03), (0.001, 0.0025, 0.0017, 0.0, 0.0, 0.0))
# Reflected rotor inertia per joint (kg m^2), as Franka gives it for its arms.
ARMATURE = (0.605721456, 0.605721456, 0.462474144, 0.462474144, 0.205544064, 0.205544064, 0.205544064)
JOINT_DAMPING = (0.5, 0.5, 0.5, 0.5, 0.2, 0.2, 0.2)  # Nm s/rad: a little joint friction

EE_SITE = "ee"


def _vec(values: tuple[float, ...] | np.ndarray) -> str:
    return " ".join(f"{v:.9g}" for v in values)


def panda_mjcf(timestep: float = 0.001) -> str:
    """The MJCF text of the Panda on a floor, with one torque motor per joint."""
    bodies = []
    for i, ((a, d, alpha), (mass, com, inertia)) in enumerate(zip(panda.DH, LINK_INERTIALS, strict=True)):
        # Body frame = RotX(alpha) TransX(a) TransZ(d) from the parent; the hinge is its z axis.
        pos = (a, -np.sin(alpha) * d, np.cos(alpha) * d)
        quat = (np.cos(alpha / 2), np.sin(alpha / 2), 0.0, 0.0)
        name = panda.JOINT_NAMES[i]
        bodies.append(
            f'<body name="{panda.ARM_ID}_link{i + 1}" pos="{_vec(pos)}" quat="{_vec(quat)}" gravcomp="1">'
            f'<joint name="{name}" axis="0 0 1" range="{panda.LOWER[i]:.9g} {panda.UPPER[i]:.9g}" '
            f'armature="{ARMATURE[i]:.9g}" damping="{JOINT_DAMPING[i]:.9g}"/>'
            f'<inertial pos="{_vec(com)}" mass="{mass:.9g}" fullinertia="{_vec(inertia)}"/>'
            f'<geom type="sphere" size="0.06" rgba="0.95 0.95 0.95 1"/>'
        )
    mass, com, inertia = HAND_INERTIAL
    hand = (
        f'<body name="{panda.ARM_ID}_hand" pos="0 0 {panda.FLANGE_OFFSET}" '
        f'quat="{_vec((np.cos(-np.pi / 8), 0.0, 0.0, np.sin(-np.pi / 8)))}" gravcomp="1">'
        f'<inertial pos="{_vec(com)}" mass="{mass}" fullinertia="{_vec(inertia)}"/>'
        '<geom type="box" size="0.03 0.1 0.03" pos="0 0 0.05" rgba="0.95 0.95 0.95 1"/>'
        f'<site name="{EE_SITE}" pos="0 0 {panda.HAND_TCP_OFFSET}" size="0.01"/>'
        "</body>"
    )
    chain = "".join(bodies) + hand + "</body>" * len(bodies)
    motors = "".join(
        f'<motor name="{name}_motor" joint="{name}" ctrlrange="{-effort:g} {effort:g}"/>'
        for name, effort in zip(panda.JOINT_NAMES, panda.MAX_EFFORT, strict=True)
    )
    return (
        '<mujoco model="panda">'
        '<compiler angle="radian" autolimits="true"/>'
        f'<option timestep="{timestep:.9g}" integrator="implicitfast" gravity="0 0 -9.81"/>'
        # No contacts: the agent keeps the hand in its workspace box, above the table.
        '<default><geom contype="0" conaffinity="0"/></default>'
        "<worldbody>"
        '<geom name="floor" type="plane" size="2 2 0.1" rgba="0.3 0.3 0.3 1"/>'
        f'<body name="{panda.ARM_ID}_link0">'
        '<inertial pos="-0.041018 -0.00014 0.049974" mass="0.629769" '
        'fullinertia="0.00315 0.00388 0.004285 8.2904e-07 0.00015 8.2299e-06"/>'
        '<geom type="cylinder" size="0.08 0.05" pos="0 0 0.05" rgba="0.95 0.95 0.95 1"/>'
        f"{chain}"
        "</body>"
        "</worldbody>"
        f"<actuator>{motors}</actuator>"
        "</mujoco>"
    )
