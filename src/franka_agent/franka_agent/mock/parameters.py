"""The mock arm's parameters, declared on its node (``ros2 param describe`` shows each).
``robot`` names the arm's profile, which gives the defaults of everything arm-specific."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rclpy.node import Node

from franka_agent.core.limits import WorkspaceBox
from franka_agent.core.profile import RobotProfile
from franka_agent.core.profile_file import load_profile
from franka_agent.core.sim import INTERPOLATE_FROM
from spin_decoupler_ros.params import declare_bool, declare_float, declare_float_list, declare_int, declare_str


@dataclass(frozen=True)
class MockParameters:
    """What the mock was started with (see MockArmHardware's module docstring)."""

    profile: RobotProfile
    physics_rate: float
    publish_rate: float
    speed_factor: float
    lockstep: bool
    lockstep_timeout: float
    realtime_priority: int
    joint_states_rate: float
    allow_nonzero_velocity_at_trajectory_end: bool
    violation_log: str
    reset_noise: float
    p_gains: list[float]
    d_gains: list[float]
    box: WorkspaceBox
    interpolate_from: str


def declare_mock_parameters(node: Node) -> MockParameters:
    """Declare the mock's parameters on ``node`` and read them."""
    profile = load_profile(declare_str(node, "robot", "panda", "the arm's profile: panda, fr3, ur5e or a file's path"))
    physics_rate = declare_float(
        node, "physics_rate", 1000.0, "physics and joint PD rate", unit="Hz", low=100.0, high=10000.0
    )
    publish_rate = declare_float(
        node,
        "publish_rate",
        500.0,
        "joint state and /clock rate, simulated time",
        unit="Hz",
        low=1.0,
        high=physics_rate,
    )
    speed_factor = declare_float(
        node,
        "speed_factor",
        1.0,
        "simulated seconds per wall second; 0 runs as fast as it can",
        low=0.0,
        high=1000.0,
    )
    lockstep = declare_bool(
        node, "lockstep", True, "never simulate past the first point of the latest command (see the docstring)"
    )
    lockstep_timeout = declare_float(
        node,
        "lockstep_timeout",
        0.2,
        "wall time to wait for a command before simulating on; 0: wait however long it takes (an agent "
        "under a timing model, whose world waits for the learner)",
        unit="s",
        low=0.0,
        high=60.0,
    )
    realtime_priority = declare_int(
        node,
        "realtime_priority",
        0,
        "SCHED_FIFO priority for the mock's executor and DDS receive threads, as a robot's controller "
        "runs; 0 keeps normal scheduling",
        low=0,
        high=99,
    )
    joint_states_rate = declare_float(
        node,
        "joint_states_rate",
        min(profile.joint_states.merged_rate, publish_rate),
        "rate of the merged joint states (the profile's merged_topic and rate, at most publish_rate; "
        "franka_ros2's /joint_states: 30 Hz)",
        unit="Hz",
        low=1.0,
        high=publish_rate,
    )
    allow_nonzero_velocity_at_trajectory_end = declare_bool(
        node,
        "allow_nonzero_velocity_at_trajectory_end",
        False,
        "accept trajectories that end moving (joint_trajectory_controller: true in Humble, false since Jazzy)",
    )
    violation_log = declare_str(
        node,
        "violation_log",
        "",
        "append a JSON line per limit violation (the command's stamp, its arrival on both clocks, "
        "the point, demanded and planned values) to this file; empty: off",
    )
    reset_noise = declare_float(
        node, "reset_noise", 0.0, "uniform noise added to home on ~/reset", unit="rad", low=0.0, high=0.5
    )
    p_gains = declare_float_list(
        node, "p_gains", list(profile.controller.p_gains), "joint PD stiffness (Nm/rad; the profile's by default)"
    )
    d_gains = declare_float_list(
        node, "d_gains", list(profile.controller.d_gains), "joint PD damping (Nm s/rad; the profile's by default)"
    )
    low = declare_float_list(
        node, "workspace_low", list(profile.workspace_low), "workspace box lower corner (m; the profile's by default)"
    )
    high = declare_float_list(
        node, "workspace_high", list(profile.workspace_high), "workspace box upper corner (m; the profile's by default)"
    )

    interpolate_from = declare_str(
        node,
        "interpolate_from",
        "desired",
        "where a new trajectory starts: the desired state (joint_trajectory_controller with "
        "interpolate_from_desired_state / open_loop_control, as the robot profile's controller settings set it) "
        "or the measured one (its default)",
        choices=INTERPOLATE_FROM,
    )
    return MockParameters(
        profile=profile,
        physics_rate=physics_rate,
        publish_rate=publish_rate,
        speed_factor=speed_factor,
        lockstep=lockstep,
        lockstep_timeout=lockstep_timeout,
        realtime_priority=realtime_priority,
        joint_states_rate=joint_states_rate,
        allow_nonzero_velocity_at_trajectory_end=allow_nonzero_velocity_at_trajectory_end,
        violation_log=violation_log,
        reset_noise=reset_noise,
        p_gains=p_gains,
        d_gains=d_gains,
        box=WorkspaceBox(np.array(low), np.array(high)),
        interpolate_from=interpolate_from,
    )
