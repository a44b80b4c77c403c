"""The RL side of the Panda pipeline: the trainer (SB3 through the decoupler). Start it
where the learner runs, with the agent side (panda_agent.launch.py) up on the robot's
computer in the same ROS_DOMAIN_ID; launch ends when training ends.

    ros2 launch franka_agent panda_rl.launch.py total_timesteps:=15000
    ros2 launch franka_agent panda_rl.launch.py resume:=runs/panda_reach/<run>   # after a crash
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.launch_context import LaunchContext
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from franka_agent.launch_arguments import config_and_namespace
from spin_decoupler_ros.example_launch import end_with_the_trainer

_OVERRIDES = {
    "total_timesteps": int,
    "algorithm": str,
    "seed": int,
    "run_dir": str,
    "num_agents": int,
    "checkpoint_every": int,
    "resume": str,
    "robot": str,
}


def _trainer(context: LaunchContext) -> list[object]:
    overrides = {}
    for name, kind in _OVERRIDES.items():
        value = LaunchConfiguration(name).perform(context)
        if value:
            overrides[name] = kind(value)
    if "total_timesteps" in overrides:  # a budget given is trained whole, as ./ws main --total-timesteps
        overrides["stop_at_success"] = 0.0
    trainer = Node(
        package="franka_agent",
        executable="panda_trainer",
        name="panda_trainer",
        namespace=LaunchConfiguration("namespace"),
        parameters=[LaunchConfiguration("config").perform(context), overrides],
        output="screen",
    )
    return [trainer, end_with_the_trainer(trainer)]  # (the experiment is over; a failed trainer fails the launch)


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            *config_and_namespace(),
            DeclareLaunchArgument(
                "total_timesteps",
                default_value="",
                description="train exactly this many steps (empty: the config's budget, ending once its "
                "stop_at_success share of the last episodes succeeded)",
            ),
            DeclareLaunchArgument(
                "num_agents",
                default_value="",
                description="agents to train on at once, in /panda0, /panda1, ... (empty: the config's, 1)",
            ),
            DeclareLaunchArgument("algorithm", default_value="", description="sac or td3 (empty: the config's)"),
            DeclareLaunchArgument("seed", default_value="", description="seed (empty: the config's)"),
            DeclareLaunchArgument(
                "run_dir",
                default_value="",
                description="run folder (empty: a fresh dated panda_reach/<date-time> under $SPIN_DECOUPLER_RUNS, "
                "else the runs/ of the checkout the code runs from, else ~/.ros/spin_decoupler/runs; one holding a "
                "run is refused)",
            ),
            DeclareLaunchArgument(
                "checkpoint_every", default_value="", description="steps between checkpoints (empty: the config's)"
            ),
            DeclareLaunchArgument(
                "resume", default_value="", description="a run folder to go on with from its latest checkpoint"
            ),
            OpaqueFunction(function=_trainer),
        ]
    )
