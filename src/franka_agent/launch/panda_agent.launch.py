"""The agent side of the reach pipeline: the robot (MuJoCo mock or a real arm through its
driver) and the arm agent node. Start this on the robot's computer; start
panda_rl.launch.py wherever the learner runs (see README: two hosts).

    ros2 launch franka_agent panda_agent.launch.py                      # mock Panda
    ros2 launch franka_agent panda_agent.launch.py robot:=fr3           # mock FR3 (panda, fr3, ur5e, a file)
    ros2 launch franka_agent panda_agent.launch.py robot:=fr3 use_mock_hardware:=false robot_ip:=172.16.0.2
    ros2 launch franka_agent panda_agent.launch.py start_state:=inactive
    ros2 lifecycle set /panda/panda_agent activate                      # then, to serve the learner

``robot`` names the arm's profile (config/robots/, docs/robots.md). With
use_mock_hardware:=false this includes the profile's driver bring-up (for this ROS 2
distribution, or ``driver_release``) with that release's arguments, and spawns the
trajectory controller the agent commands with the settings the profile gives it (new
trajectories start from the commanded state). On the mock under any timing model but
wall, the mock and the agent run in one process (``sim_panda``,
franka_agent/sim_robot.py), as ``./ws main`` runs them.
"""

from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_context import LaunchContext
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.logging import launch_config
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from franka_agent.core.profile_file import load_profile
from franka_agent.launch_arguments import config_and_namespace
from franka_agent.robots import (
    driver_arguments,
    driver_release,
    jerk_capped_override,
    mock_recovery,
    require_real_robot_driver,
    robot_namespaces,
    robot_remaps,
    shares_one_process,
    sim_robot_args,
    timing_model_overrides,
    write_controller_settings,
)


def _driver(context: LaunchContext) -> list[object]:
    """On a real arm: the profile's driver bring-up, then its trajectory controller spawned
    with the settings the profile gives it."""
    if LaunchConfiguration("use_mock_hardware").perform(context).lower() == "true":
        return []
    robot_ip = LaunchConfiguration("robot_ip").perform(context)
    if not robot_ip:
        raise RuntimeError("robot_ip is required with use_mock_hardware:=false (e.g. robot_ip:=172.16.0.2)")
    profile = load_profile(LaunchConfiguration("robot").perform(context))
    driver = driver_release(profile, LaunchConfiguration("driver_release").perform(context))
    require_real_robot_driver(profile, driver.release)
    settings = write_controller_settings(profile, Path(launch_config.log_dir) / f"{profile.controller.name}.yaml")
    return [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([FindPackageShare(driver.package), "launch", driver.launch_file])
            ),
            launch_arguments=driver_arguments(driver, robot_ip).items(),
        ),
        Node(
            package="controller_manager",
            executable="spawner",
            arguments=[profile.controller.name, "--param-file", str(settings)],
            output="screen",
        ),
    ]


def _nodes(context: LaunchContext) -> list[Node]:
    mock = LaunchConfiguration("use_mock_hardware").perform(context).lower() == "true"
    config = LaunchConfiguration("config").perform(context)
    count = int(LaunchConfiguration("num_agents").perform(context))
    if count > 1 and not mock:
        raise RuntimeError("num_agents > 1 needs use_mock_hardware:=true (one launch per real robot, each namespaced)")
    robot = LaunchConfiguration("robot").perform(context)
    profile = load_profile(robot)
    agent_overrides: dict[str, object] = {
        "robot": robot,
        "use_sim_time": mock,
        "start_state": LaunchConfiguration("start_state").perform(context),
    }
    for name in ("rl_timestep", "control_rate"):
        value = LaunchConfiguration(name).perform(context)
        if value:
            agent_overrides[name] = float(value)
    mock_overrides: dict[str, object] = {
        "robot": robot,
        "speed_factor": float(LaunchConfiguration("sim_speed").perform(context)),
    }
    timing_agent, timing_mock = timing_model_overrides(LaunchConfiguration("timing_model").perform(context), mock=mock)
    agent_overrides.update(timing_agent)
    agent_overrides.update(jerk_capped_override(LaunchConfiguration("jerk_capped").perform(context), mock=mock))
    mock_overrides.update(timing_mock)
    # One robot: the agent in `namespace`, franka_ros2's topic names. Several mocks:
    # robot i and its agent in /panda<i>, every robot topic (and /clock) remapped there.
    namespaces = robot_namespaces(count) if count > 1 else [LaunchConfiguration("namespace").perform(context)]
    nodes = []
    for namespace in namespaces:
        remappings = list(robot_remaps(namespace, profile).items()) if count > 1 else []
        mock_namespace = namespace if count > 1 else ""
        recovery = mock_recovery(mock_namespace, profile) if mock else {}
        if mock and shares_one_process(timing_agent):
            # Each node's own values, in a file beside this launch's log (launch.log).
            suffix = namespace.replace("/", "_")
            params_file = Path(launch_config.log_dir) / f"sim_robot{suffix}.yaml"
            agent_params = {**agent_overrides, **recovery}
            args = sim_robot_args(
                Path(config), mock_namespace, agent_params, mock_overrides, params_file, namespace, robot=robot
            )
            nodes.append(Node(package="franka_agent", executable="sim_panda", ros_arguments=args[1:], output="screen"))
            continue
        nodes.append(
            Node(
                package="franka_agent",
                executable="panda_agent",
                name="panda_agent",
                namespace=namespace,
                parameters=[config, {**agent_overrides, **recovery}],
                remappings=remappings,
                output="screen",
            )
        )
        if mock:
            nodes.append(
                Node(
                    package="franka_agent",
                    executable="mock_hardware",
                    name="mock_hardware",
                    namespace=mock_namespace,
                    parameters=[config, mock_overrides],
                    remappings=remappings,
                    output="screen",
                )
            )
    return nodes


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "use_mock_hardware",
                default_value="true",
                description="true: a MuJoCo model of the arm stands in for it; false: the real arm via its driver",
            ),
            DeclareLaunchArgument(
                "robot_ip", default_value="", description="the arm's IP or hostname (required when not mock)"
            ),
            DeclareLaunchArgument(
                "driver_release",
                default_value="",
                description="real robot: the profile's driver release or distribution to bring up (empty: the one "
                "for $ROS_DISTRO, else the profile's first)",
            ),
            *config_and_namespace(),
            DeclareLaunchArgument(
                "num_agents",
                default_value="1",
                description="mock only: this many mock arms and agents, in /panda0, /panda1, ...",
            ),
            DeclareLaunchArgument(
                "rl_timestep", default_value="", description="seconds per RL step (empty: the config's)"
            ),
            DeclareLaunchArgument(
                "control_rate", default_value="", description="agent control loop, Hz (empty: the config's)"
            ),
            DeclareLaunchArgument(
                "sim_speed",
                default_value="1.0",
                description="mock only: simulated seconds per wall second (0: as fast as it can)",
            ),
            DeclareLaunchArgument(
                "timing_model",
                default_value="wall",
                description="mock only: how long the world runs on while the learner thinks (wall, none, "
                "fixed:<s>, lognormal:<median>,<p99>, replay:<steps.csv>; empty: replay of the reach learner's "
                "think times at real time; docs/time_models.md)",
            ),
            DeclareLaunchArgument(
                "jerk_capped",
                default_value="",
                description="cap the joint accelerations so that the controller's reference stays within the arm's "
                "jerk limits (empty: true on a real arm, the config's on the mock; docs/genuine_jtc.md)",
            ),
            DeclareLaunchArgument(
                "start_state",
                default_value="active",
                choices=["active", "inactive", "unconfigured"],
                description="the agent's lifecycle state at start; inactive: it holds the arm until an operator "
                "runs ros2 lifecycle set <namespace>/panda_agent activate",
            ),
            OpaqueFunction(function=_driver),
            OpaqueFunction(function=_nodes),
        ]
    )
