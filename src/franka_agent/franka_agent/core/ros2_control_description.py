"""A robot description and controller parameters for ros2_control, from a robot profile.

What the genuine joint_trajectory_controller check (``bench/genuine_jtc.py``) loads into
ros2_control's controller_manager: a URDF whose ``<ros2_control>`` tag names a hardware
component and gives each of the profile's joints the command interface its controller
uses (position or effort) and the position and velocity states; and the controller's
parameters as the profile's ``controller`` says (its name, interface, gains and settings)
on top of one distribution's defaults (``DISTRO_DEFAULTS``).

The URDF carries the profile's kinematic chain and limits, with ros2_control's own joint
limiters off (``<limits enable="false"/>``): the check measures what the controller
commands, not what a limiter would make of it. Pure Python, no ROS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import quoteattr

import numpy as np

from franka_agent.core.profile import Origin, RobotProfile

# Where a trajectory controller parameter's default differs between the releases the
# profiles name: ros2_controllers 2.x (Humble, joint_trajectory_controller_parameters.yaml
# at 2.54.0) and 4.x (Jazzy, at 4.42.1). The rest of 2.x's differences are gains' fields
# the profiles leave at zero (i_clamp) and a publish rate (state_publish_rate) 4.x dropped.
DISTRO_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "humble": {"allow_nonzero_velocity_at_trajectory_end": True},
    "jazzy": {"allow_nonzero_velocity_at_trajectory_end": False},
}
CONTROLLER_TYPE = "joint_trajectory_controller/JointTrajectoryController"
BROADCASTER = "joint_state_broadcaster"
BROADCASTER_TYPE = "joint_state_broadcaster/JointStateBroadcaster"


def _origin(origin: Origin) -> str:
    xyz = " ".join(f"{v:.9g}" for v in origin.xyz)
    rpy = " ".join(f"{v:.9g}" for v in origin.rpy)
    return f'<origin xyz="{xyz}" rpy="{rpy}"/>'


def robot_description(
    profile: RobotProfile,
    *,
    plugin: str,
    hardware_parameters: Mapping[str, str],
    joint_parameters: Sequence[Mapping[str, float]] | None = None,
    start: Sequence[float] | np.ndarray | None = None,
) -> str:
    """The URDF for ros2_control: the profile's chain and limits, and a ``<ros2_control>``
    system running ``plugin`` with ``hardware_parameters``; each joint gets its
    ``joint_parameters`` (e.g. its inertia) and starts at ``start`` (the home pose)."""
    interface = profile.controller.interface
    if interface not in ("position", "effort"):
        raise ValueError(f"profile {profile.name!r}: controller interface {interface!r} is neither position nor effort")
    names = profile.joint_names
    start = profile.home if start is None else start
    joint_parameters = joint_parameters or [{} for _ in names]
    if len(start) != len(names) or len(joint_parameters) != len(names):
        raise ValueError(f"profile {profile.name!r} has {len(names)} joints: give a start and parameters for each")
    limits = profile.limits
    lines = [f"<robot name={quoteattr(profile.name)}>", '  <link name="base"/>']
    parent = "base"
    for index, (name, origin) in enumerate(zip(names, profile.joints, strict=True)):
        child = f"link{index + 1}"
        lines += [
            f'  <link name="{child}"/>',
            f'  <joint name={quoteattr(name)} type="revolute">',
            f'    <parent link="{parent}"/><child link="{child}"/>',
            f'    {_origin(origin)}<axis xyz="0 0 1"/>',
            f'    <limit lower="{limits.lower[index]:.9g}" upper="{limits.upper[index]:.9g}"'
            f' velocity="{limits.velocity[index]:.9g}" effort="{limits.effort[index]:.9g}"/>',
            "  </joint>",
        ]
        parent = child
    lines += [f'  <ros2_control name={quoteattr(profile.name + "_system")} type="system">', "    <hardware>"]
    lines.append(f"      <plugin>{plugin}</plugin>")
    lines += [f"      <param name={quoteattr(key)}>{value}</param>" for key, value in hardware_parameters.items()]
    lines.append("    </hardware>")
    for name, position, parameters in zip(names, start, joint_parameters, strict=True):
        lines += [
            f"    <joint name={quoteattr(name)}>",
            '      <limits enable="false"/>',
            f'      <command_interface name="{interface}"/>',
            '      <state_interface name="position">',
            f'        <param name="initial_value">{position:.12g}</param>',
            "      </state_interface>",
            '      <state_interface name="velocity"/>',
        ]
        lines += [f"      <param name={quoteattr(key)}>{value:.9g}</param>" for key, value in parameters.items()]
        lines.append("    </joint>")
    lines += ["  </ros2_control>", "</robot>"]
    return "\n".join(lines) + "\n"


def controller_parameters(
    profile: RobotProfile, distro: str, *, update_rate: int = 1000
) -> dict[str, dict[str, dict[str, Any]]]:
    """ROS parameters (a params file's content) for the controller_manager, the profile's
    trajectory controller on ``distro``'s defaults and a joint_state_broadcaster at the
    profile's joint-state rate."""
    if distro not in DISTRO_DEFAULTS:
        raise ValueError(f"distro {distro!r}: choose from {sorted(DISTRO_DEFAULTS)}")
    controller = profile.controller
    settings: dict[str, Any] = {
        "joints": list(profile.joint_names),
        "command_interfaces": [controller.interface],
        "state_interfaces": ["position", "velocity"],
        **DISTRO_DEFAULTS[distro],
        **dict(controller.settings),
    }
    if controller.interface == "effort":
        settings["gains"] = {
            name: {"p": float(p), "d": float(d), "i": 0.0}
            for name, p, d in zip(profile.joint_names, controller.p_gains, controller.d_gains, strict=True)
        }
    return {
        "controller_manager": {
            "ros__parameters": {
                "update_rate": update_rate,
                controller.name: {"type": CONTROLLER_TYPE},
                BROADCASTER: {"type": BROADCASTER_TYPE},
            }
        },
        controller.name: {"ros__parameters": settings},
        BROADCASTER: {"ros__parameters": {"update_rate": round(profile.joint_states.rate)}},
    }
