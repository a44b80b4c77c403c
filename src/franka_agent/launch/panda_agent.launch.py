"""The agent side of the Panda pipeline: the robot (MuJoCo mock or a real Panda through
franka_ros2) and the Panda agent node. Start this on the robot's computer; start
panda_rl.launch.py wherever the learner runs (see README: two hosts).

    ros2 launch franka_agent panda_agent.launch.py                      # mock hardware
    ros2 launch franka_agent panda_agent.launch.py use_mock_hardware:=false robot_ip:=172.16.0.2
    ros2 launch franka_agent panda_agent.launch.py start_state:=inactive
    ros2 lifecycle set /panda/panda_agent activate                      # then, to serve the learner

With use_mock_hardware:=false this includes franka_bringup's franka.launch.py
(franka_ros2 v0.1.0, the release that drives a Panda) and spawns its
joint_trajectory_controller, the controller the agent commands, with
config/panda_jtc.yaml (new trajectories start from the commanded state). On the mock under
any timing model but wall, the mock and the agent run in one process (``sim_panda``,
franka_agent/sim_robot.py), as ``./ws main`` runs them.
"""

from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.conditions import UnlessCondition
from launch.launch_context import LaunchContext
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.logging import launch_config
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from franka_agent.launch_arguments import config_and_namespace
from franka_agent.robots import (
    mock_recovery,
    require_real_robot_driver,
    robot_namespaces,
    robot_remaps,
    shares_one_process,
    sim_robot_args,
    timing_model_overrides,
)


def _require_robot_ip(context: LaunchContext) -> list[object]:
    mock = LaunchConfiguration("use_mock_hardware").perform(context).lower() == "true"
    if not mock and not LaunchConfiguration("robot_ip").perform(context):
        raise RuntimeError("robot_ip is required with use_mock_hardware:=false (e.g. robot_ip:=172.16.0.2)")
    if not mock:
        require_real_robot_driver()
    return []


def _nodes(context: LaunchContext) -> list[Node]:
    mock = LaunchConfiguration("use_mock_hardware").perform(context).lower() == "true"
    config = LaunchConfiguration("config").perform(context)
    count = int(LaunchConfiguration("num_agents").perform(context))
    if count > 1 and not mock:
        raise RuntimeError("num_agents > 1 needs use_mock_hardware:=true (one launch per real robot, each namespaced)")
    agent_overrides: dict[str, object] = {
        "use_sim_time": mock,
        "start_state": LaunchConfiguration("start_state").perform(context),
    }
    for name in ("rl_timestep", "control_rate"):
        value = LaunchConfiguration(name).perform(context)
        if value:
            agent_overrides[name] = float(value)
    mock_overrides: dict[str, object] = {"speed_factor": float(LaunchConfiguration("sim_speed").perform(context))}
    timing_agent, timing_mock = timing_model_overrides(LaunchConfiguration("timing_model").perform(context), mock=mock)
    agent_overrides.update(timing_agent)
    mock_overrides.update(timing_mock)
    # One robot: the agent in `namespace`, franka_ros2's topic names. Several mocks:
    # robot i and its agent in /panda<i>, every robot topic (and /clock) remapped there.
    namespaces = robot_namespaces(count) if count > 1 else [LaunchConfiguration("namespace").perform(context)]
    nodes = []
    for namespace in namespaces:
        remappings = list(robot_remaps(namespace).items()) if count > 1 else []
        mock_namespace = namespace if count > 1 else ""
        recovery = mock_recovery(mock_namespace) if mock else {}
        if mock and shares_one_process(timing_agent):
            # Each node's own values, in a file beside this launch's log (launch.log).
            suffix = namespace.replace("/", "_")
            params_file = Path(launch_config.log_dir) / f"sim_robot{suffix}.yaml"
            agent_params = {**agent_overrides, **recovery}
            args = sim_robot_args(Path(config), mock_namespace, agent_params, mock_overrides, params_file, namespace)
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
    use_mock_hardware = LaunchConfiguration("use_mock_hardware")
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "use_mock_hardware",
                default_value="true",
                description="true: a MuJoCo Panda stands in for the robot; false: a real Panda via franka_ros2",
            ),
            DeclareLaunchArgument(
                "robot_ip", default_value="", description="the Panda's IP or hostname (required when not mock)"
            ),
            DeclareLaunchArgument(
                "load_gripper", default_value="true", description="real robot: load the Franka Hand (franka_gripper)"
            ),
            DeclareLaunchArgument("use_rviz", default_value="false", description="real robot: start RViz"),
            *config_and_namespace(),
            DeclareLaunchArgument(
                "num_agents",
                default_value="1",
                description="mock only: this many mock Pandas and agents, in /panda0, /panda1, ...",
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
                "start_state",
                default_value="active",
                choices=["active", "inactive", "unconfigured"],
                description="the agent's lifecycle state at start; inactive: it holds the arm until an operator "
                "runs ros2 lifecycle set <namespace>/panda_agent activate",
            ),
            OpaqueFunction(function=_require_robot_ip),
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(
                    PathJoinSubstitution([FindPackageShare("franka_bringup"), "launch", "franka.launch.py"])
                ),
                launch_arguments={
                    "robot_ip": LaunchConfiguration("robot_ip"),
                    "load_gripper": LaunchConfiguration("load_gripper"),
                    "use_fake_hardware": "false",
                    "use_rviz": LaunchConfiguration("use_rviz"),
                }.items(),
                condition=UnlessCondition(use_mock_hardware),
            ),
            Node(
                package="controller_manager",
                executable="spawner",
                # Start each new trajectory from the commanded state (config/panda_jtc.yaml).
                arguments=[
                    "joint_trajectory_controller",
                    "--param-file",
                    PathJoinSubstitution([FindPackageShare("franka_agent"), "config", "panda_jtc.yaml"]),
                ],
                output="screen",
                condition=UnlessCondition(use_mock_hardware),
            ),
            OpaqueFunction(function=_nodes),
        ]
    )
