"""The arm agent's parameters, declared on its node (``ros2 param describe`` shows each),
and the controller they make (docs/nodes.md lists them). ``robot`` names the arm's
profile, which gives the defaults of everything arm-specific."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rclpy.node import Node

from franka_agent.core.controller import DEFAULT_COMMAND_LEAD, ArmController, lead_periods_for
from franka_agent.core.limits import MotionLimits, WorkspaceBox
from franka_agent.core.motion import (
    ACTION_MODES,
    CARTESIAN_ACCELERATION,
    CARTESIAN_ACCELERATION_JERK_CAPPED,
    MAX_EE_STEP,
)
from franka_agent.core.profile import RobotProfile
from franka_agent.core.profile_file import load_profile
from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.params import declare_bool, declare_float, declare_float_list, declare_int, declare_str


@dataclass(frozen=True)
class PandaParameters:
    """What the arm agent was configured with, and its controller."""

    profile: RobotProfile
    controller: ArmController
    box: WorkspaceBox
    command_lead_ns: int  # command_lead in whole control periods
    reset_timeout: float
    state_timeout: float
    joint_states_topic: str
    stop_window: float
    recovery_name: str
    recovery_timeout: float
    command_topic: str


def declare_panda_parameters(node: Node, control_period_ns: int) -> PandaParameters:
    """Declare the arm agent's parameters on ``node``, check them against each other
    (ParameterError naming the one to change) and make the controller."""
    profile = load_profile(declare_str(node, "robot", "panda", "the arm's profile: panda, fr3, ur5e or a file's path"))
    mode = declare_str(node, "action_mode", "ee_delta", "what an action means", choices=ACTION_MODES)
    limits = MotionLimits(
        profile,
        velocity_fraction=declare_float(
            node, "velocity_fraction", 0.5, "share of the arm's velocity limits", low=0.01, high=1.0
        ),
        acceleration_fraction=declare_float(
            node, "acceleration_fraction", 0.5, "share of the arm's acceleration limits", low=0.01, high=1.0
        ),
        joint_margin=declare_float(
            node, "joint_margin", 0.05, "distance kept from the joint limits", unit="rad", low=0.0, high=0.4
        ),
        jerk_capped=declare_bool(
            node,
            "jerk_capped",
            False,
            "cap the joint accelerations so that a full reversal in one controller update stays within the "
            "arm's jerk limits (the controller's reference then does: docs/genuine_jtc.md; the arm is 2-4x slower)",
        ),
    )
    low = declare_float_list(
        node, "workspace_low", list(profile.workspace_low), "workspace box lower corner (m; the profile's by default)"
    )
    high = declare_float_list(
        node, "workspace_high", list(profile.workspace_high), "workspace box upper corner (m; the profile's by default)"
    )
    margin = declare_float(
        node, "workspace_margin", 0.02, "targets stay this far inside the box", unit="m", low=0.0, high=0.2
    )
    try:
        box = WorkspaceBox(np.array(low), np.array(high))
        box.shrunk(margin)
    except ValueError as exc:
        raise ParameterError(f"workspace parameters: {exc}") from None
    motion_options = {
        "box_margin": margin,
        "max_ee_step": declare_float(
            node, "max_ee_step", MAX_EE_STEP, "largest TCP move per axis per step", unit="m", low=0.001, high=0.2
        ),
        "max_joint_step": declare_float(
            node, "max_joint_step", 0.15, "largest joint move per step", unit="rad", low=0.001, high=0.5
        ),
        "cartesian_speed": declare_float(
            node, "cartesian_speed", 0.3, "TCP speed limit per axis", unit="m/s", low=0.01, high=1.7
        ),
        "cartesian_acceleration": declare_float(
            node,
            "cartesian_acceleration",
            CARTESIAN_ACCELERATION_JERK_CAPPED if limits.jerk_capped else CARTESIAN_ACCELERATION,
            "TCP acceleration limit per axis",
            unit="m/s^2",
            low=0.1,
            high=13.0,
        ),
    }
    reset_noise = declare_float(
        node, "reset_noise", 0.1, "noise added to home at each reset (seeded)", unit="rad", low=0.0, high=0.5
    )
    reset_timeout = declare_float(
        node, "reset_timeout", 15.0, "longest a reset may take", unit="s", low=0.1, high=600.0
    )
    state_timeout = declare_float(
        node, "state_timeout", 0.5, "oldest joint state still usable", unit="s", low=0.001, high=60.0
    )
    command_lead = declare_float(
        node,
        "command_lead",
        DEFAULT_COMMAND_LEAD,
        "how far ahead commands are planned (rounded up to whole control periods): more than the worst "
        "lateness of a command at the joint controller; a new action takes hold this much after it arrives",
        unit="s",
        low=0.0,
        high=1.0,
    )
    lead_periods = lead_periods_for(command_lead, control_period_ns)
    command_lead_ns = lead_periods * control_period_ns
    trajectory_points = declare_int(
        node, "trajectory_points", 3, "planned points per command, before the braking tail", low=2, high=50
    )
    joint_states_topic = declare_str(
        node, "joint_states_topic", profile.joint_states.topic, "joint state input (the profile's by default)"
    )
    stop_window = declare_float(
        node,
        "stop_window",
        0.1,
        "joint states still for this long (their stamps) while the commands move: the robot stopped on its "
        "own; 0 turns the check off",
        unit="s",
        low=0.0,
        high=5.0,
    )
    recovery_name = declare_str(
        node,
        "recovery",
        profile.recovery.agent_parameter,
        "what the next reset calls after a stop (the profile's by default): none (a person must act), "
        "trigger:<std_srvs/Trigger service> or franka_action:<franka_msgs ErrorRecovery action> "
        "(docs/robot_stops.md)",
    )
    recovery_timeout = declare_float(
        node, "recovery_timeout", 10.0, "longest the robot's error recovery may take", unit="s", low=0.1, high=300.0
    )
    command_topic = declare_str(
        node,
        "command_topic",
        profile.controller.command_topic,
        "the trajectory controller's command topic (the profile's by default)",
    )
    controller = ArmController(
        mode,
        limits,
        box,
        control_period_ns,
        lead_periods=lead_periods,
        trajectory_points=trajectory_points,
        reset_noise=reset_noise,
        **motion_options,
    )
    return PandaParameters(
        profile=profile,
        controller=controller,
        box=box,
        command_lead_ns=command_lead_ns,
        reset_timeout=reset_timeout,
        state_timeout=state_timeout,
        joint_states_topic=joint_states_topic,
        stop_window=stop_window,
        recovery_name=recovery_name,
        recovery_timeout=recovery_timeout,
        command_topic=command_topic,
    )
