"""The launch description both examples share: an agent node and a training node in one
namespace, the run ending when training ends. Imported by ``launch/*.launch.py`` only
(it needs ROS 2 launch, which the nodes themselves do not)."""

from __future__ import annotations

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

PACKAGE = "spin_decoupler_ros"


def example_launch_description(
    example: str, *, namespace: str, total_timesteps: int, algorithm: str
) -> LaunchDescription:
    """Nodes ``<example>_agent`` and ``<example>_train`` with ``config/<example>.yaml``."""
    config = LaunchConfiguration("config")
    agent = Node(
        package=PACKAGE,
        executable=f"{example}_agent",
        namespace=LaunchConfiguration("namespace"),
        parameters=[config, {"timing_model": LaunchConfiguration("timing_model")}],
        output="screen",
    )
    trainer = Node(
        package=PACKAGE,
        executable=f"{example}_train",
        namespace=LaunchConfiguration("namespace"),
        parameters=[
            config,
            {
                "total_timesteps": LaunchConfiguration("total_timesteps"),
                # a string even when empty (empty: a fresh dated folder)
                "run_dir": ParameterValue(LaunchConfiguration("run_dir"), value_type=str),
            },
        ],
        output="screen",
    )
    return LaunchDescription(
        [
            DeclareLaunchArgument("namespace", default_value=namespace, description="namespace of both nodes"),
            DeclareLaunchArgument(
                "config",
                default_value=PathJoinSubstitution([FindPackageShare(PACKAGE), "config", f"{example}.yaml"]),
                description="parameters YAML for both nodes (keyed by node name)",
            ),
            DeclareLaunchArgument(
                "total_timesteps", default_value=str(total_timesteps), description=f"{algorithm} training steps"
            ),
            DeclareLaunchArgument(
                "run_dir",
                default_value="",
                description=f"where the results go (empty: a fresh dated runs/{example}/<date-time>)",
            ),
            DeclareLaunchArgument(
                "timing_model",
                default_value="wall",
                description="how long the agent's world runs on while the learner thinks: wall, none, fixed:<s>, "
                "lognormal:<median>,<p99>, replay:<steps.csv> (docs/time_models.md)",
            ),
            agent,
            trainer,
            # The experiment is over when the trainer exits: stop the agent too.
            RegisterEventHandler(OnProcessExit(target_action=trainer, on_exit=[EmitEvent(event=Shutdown())])),
        ]
    )
