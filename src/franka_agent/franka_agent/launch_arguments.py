"""Launch arguments both sides of the reach pipeline declare alike (imported by the
launch files only: it needs ROS 2 launch, which the nodes do not)."""

from __future__ import annotations

from launch.actions import DeclareLaunchArgument
from launch.substitutions import PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

from franka_agent.robots import SINGLE_AGENT_NAMESPACE


def config_and_namespace() -> list[DeclareLaunchArgument]:
    """``robot`` (the arm's profile), ``config`` (the parameters YAML) and ``namespace``
    (one robot's agent: /panda)."""
    return [
        DeclareLaunchArgument(
            "robot",
            default_value="panda",
            description="the arm's profile: panda, fr3, ur5e (config/robots/) or the path of a profile file",
        ),
        DeclareLaunchArgument(
            "config",
            default_value=PathJoinSubstitution([FindPackageShare("franka_agent"), "config", "panda_reach.yaml"]),
            description="parameters YAML, keyed by node name",
        ),
        DeclareLaunchArgument(
            "namespace",
            default_value=SINGLE_AGENT_NAMESPACE,
            description="one robot: the namespace of its agent and trainer (the robot keeps its driver's names); "
            "several: ignored, robot i and its agent in /panda<i>",
        ),
    ]
