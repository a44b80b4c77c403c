"""The first-order plant example: an agent node and an RL (training) node.

    ros2 launch spin_decoupler_ros first_order_plant.launch.py [total_timesteps:=3000]

Both nodes run in one namespace; the trainer's Episode client resolves the agent's
relative names (episode, step_command, ...) in it. Launch shuts down when training ends.
Where ``ros2 launch`` is not installed, ``python -m
spin_decoupler_ros.examples.first_order_plant.run`` starts the same two processes.
"""

from launch.actions import DeclareLaunchArgument, EmitEvent, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    namespace = LaunchConfiguration("namespace")
    config = LaunchConfiguration("config")
    agent = Node(
        package="spin_decoupler_ros",
        executable="first_order_plant_agent",
        namespace=namespace,
        parameters=[config],
        output="screen",
    )
    trainer = Node(
        package="spin_decoupler_ros",
        executable="first_order_plant_train",
        namespace=namespace,
        parameters=[
            config,
            {
                "total_timesteps": LaunchConfiguration("total_timesteps"),
                "run_dir": LaunchConfiguration("run_dir"),
            },
        ],
        output="screen",
    )
    return LaunchDescription(
        [
            DeclareLaunchArgument("namespace", default_value="/plant", description="namespace of both nodes"),
            DeclareLaunchArgument(
                "config",
                default_value=PathJoinSubstitution(
                    [FindPackageShare("spin_decoupler_ros"), "config", "first_order_plant.yaml"]
                ),
                description="parameters YAML for both nodes (keyed by node name)",
            ),
            DeclareLaunchArgument("total_timesteps", default_value="3000", description="SAC training steps"),
            DeclareLaunchArgument(
                "run_dir", default_value="runs/first_order_plant", description="where the results go"
            ),
            agent,
            trainer,
            # The experiment is over when the trainer exits: stop the agent too.
            RegisterEventHandler(OnProcessExit(target_action=trainer, on_exit=[EmitEvent(event=Shutdown())])),
        ]
    )
