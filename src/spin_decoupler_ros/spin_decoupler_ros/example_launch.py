"""The launch description both examples share: an agent node and a training node in one
namespace, the run ending when training ends. Imported by ``launch/*.launch.py`` only
(it needs ROS 2 launch, which the nodes themselves do not)."""

from __future__ import annotations

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.events.process import ProcessExited
from launch.launch_context import LaunchContext
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

PACKAGE = "spin_decoupler_ros"


class TrainerFailed(RuntimeError):
    """Raised from the trainer's exit handler: ``ros2 launch`` then ends with exit code 1
    (its service turns an exception in an event handler into a failed launch)."""


def end_with_the_trainer(trainer: Node) -> RegisterEventHandler:
    """When the trainer exits the experiment is over: shut the launch down, and fail it
    when the trainer failed (a refused option, a crash), so that a script or CI job that
    runs ``ros2 launch`` sees it. Ctrl-C (exit code 130 after the trainer's own summary)
    and success end it as they are."""

    def on_exit(event: ProcessExited, context: LaunchContext) -> list[EmitEvent]:
        if event.returncode not in (0, 130, -2):
            raise TrainerFailed(f"{event.action.name} exited with code {event.returncode}: the run failed")
        return [EmitEvent(event=Shutdown(reason="the trainer ended"))]

    return RegisterEventHandler(OnProcessExit(target_action=trainer, on_exit=on_exit))


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
            end_with_the_trainer(trainer),  # (the experiment is over: stop the agent too)
        ]
    )
