"""The whole reach pipeline on one machine: robot (mock or real), agent, and trainer.

    ros2 launch franka_agent panda_train.launch.py                       # MuJoCo mock Panda, flat out
    ros2 launch franka_agent panda_train.launch.py robot:=ur5e           # another arm's profile
    ros2 launch franka_agent panda_train.launch.py robot:=fr3 use_mock_hardware:=false robot_ip:=172.16.0.2

``robot`` selects the arm's profile for the agent, the mock, the task and the trainer;
``use_mock_hardware`` swaps the real arm (its driver) for the MuJoCo mock; nothing else
changes. Launch ends when training ends. ``./ws main`` starts the same processes where
ros2 launch is not installed.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution, ThisLaunchFileDir
from launch_ros.substitutions import FindPackageShare

_ARGUMENTS = {
    "robot": ("panda", "the arm's profile: panda, fr3, ur5e (config/robots/) or the path of a profile file"),
    "use_mock_hardware": ("true", "true: a MuJoCo model of the arm; false: the real arm via its profile's driver"),
    "robot_ip": ("", "the arm's IP or hostname (required when use_mock_hardware is false)"),
    "driver_release": ("", "real robot: the profile's driver release (empty: the one for $ROS_DISTRO)"),
    "rl_timestep": ("", "seconds per RL step (empty: the config's)"),
    "control_rate": ("", "agent control loop, Hz (empty: the config's)"),
    "sim_speed": ("0.0", "mock only: simulated seconds per wall second (0: as fast as the agent, in lockstep)"),
    "timing_model": (
        "",
        "how long the mock's world runs on while the learner thinks (docs/time_models.md); empty: on the mock, "
        "replay of this learner's think times at real time; on a real arm, wall",
    ),
    "jerk_capped": (
        "",
        "cap the joint accelerations within the arm's jerk limits (empty: true on a real arm, the config's on "
        "the mock)",
    ),
    "total_timesteps": (
        "",
        "train exactly this many steps (empty: the config's budget, ending once its stop_at_success share of the "
        "last episodes succeeded)",
    ),
    "algorithm": ("", "sac or td3 (empty: the config's)"),
    "seed": ("", "seed (empty: the config's)"),
    "run_dir": (
        "",
        "run folder (empty: a fresh dated panda_reach/<date-time> under $SPIN_DECOUPLER_RUNS, else the runs/ of "
        "the checkout the code runs from, else ~/.ros/spin_decoupler/runs; one holding a run is refused)",
    ),
    "checkpoint_every": ("", "steps between checkpoints (empty: the config's)"),
    "resume": ("", "a run folder to go on with from its latest checkpoint (give the run's other arguments again)"),
    "namespace": (
        "/panda",
        "one robot: the namespace of its agent and the trainer (the robot keeps its driver's names)",
    ),
    "start_state": ("active", "the agent's lifecycle state at start (inactive: the trainer waits for an activate)"),
    "num_agents": ("1", "mock only: mock arms and agents trained on at once, in /panda0, /panda1, ..."),
}


def generate_launch_description() -> LaunchDescription:
    declared = [
        DeclareLaunchArgument(name, default_value=default, description=description)
        for name, (default, description) in _ARGUMENTS.items()
    ]
    config = DeclareLaunchArgument(
        "config",
        default_value=PathJoinSubstitution([FindPackageShare("franka_agent"), "config", "panda_reach.yaml"]),
        description="parameters YAML for all nodes, keyed by node name",
    )

    def include(name: str, arguments: tuple[str, ...]) -> IncludeLaunchDescription:
        return IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution([ThisLaunchFileDir(), name])),
            launch_arguments={arg: LaunchConfiguration(arg) for arg in arguments}.items(),
        )

    agent_side = include(
        "panda_agent.launch.py",
        (
            "robot",
            "use_mock_hardware",
            "robot_ip",
            "driver_release",
            "config",
            "namespace",
            "rl_timestep",
            "control_rate",
            "sim_speed",
            "timing_model",
            "jerk_capped",
            "num_agents",
            "start_state",
        ),
    )
    rl_side = include(
        "panda_rl.launch.py",
        (
            "robot",
            "config",
            "namespace",
            "total_timesteps",
            "algorithm",
            "seed",
            "run_dir",
            "num_agents",
            "checkpoint_every",
            "resume",
        ),
    )
    return LaunchDescription([*declared, config, agent_side, rl_side])
