"""Arms on a ROS graph: where each robot's topics and each agent live.

A driver (and so the mock and the agent) uses absolute names, its profile's: the
joint-state topics, the trajectory controller's command topic, and the simulated
``/clock``. One robot keeps those names, and its agent and trainer live in ``/panda``
(``SINGLE_AGENT_NAMESPACE``, whatever the arm), so the decoupler's own names
(``/panda/episode``, ``/panda/status``, ...) cannot collide with other software's on a
shared graph. For robot ``/panda1`` of several, every robot topic is remapped to
``/panda1/...`` in both its mock (or driver) and its agent, and both nodes run in
``/panda1``, where the RL side finds the agent's Episode action. Test: ``test_names.py``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from franka_agent.core.profile import DriverRelease, RobotProfile
from franka_agent.core.profile_file import load_profile
from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.core.naming import agent_namespaces, join_name
from spin_decoupler_ros.core.think_time import TimingModel
from spin_decoupler_ros.tools.paths import find_config
from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup, ros_args

# Think times of the reach task's SAC learner measured at real time (the mock at the
# wall's pace, as on the arm), steps after learning_starts: bench/main_job.py records them.
RECORDED_THINK_TIMES = "think_times_panda_sac.csv"


def require_real_robot_driver(profile: RobotProfile, release: str | None = None) -> None:
    """Fail with what to install when the real arm's driver package is missing, before a
    launch file includes it (launch would only say "package not found").

    Test: ``test_robots.py::test_a_missing_driver_is_named_with_the_release_to_install``."""
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    driver = profile.driver(release)
    try:
        get_package_share_directory(driver.package)
    except PackageNotFoundError:
        raise ParameterError(
            f"use_mock_hardware:=false needs '{driver.package}' from {driver.release} ({driver.notes}), the "
            f"driver of the {profile.name} on ROS 2 {driver.distro.capitalize()}, and it is not installed in this "
            f"ROS environment: build it into your workspace and source it, or run on the mock "
            f"(use_mock_hardware:=true)"
        ) from None


def driver_release(profile: RobotProfile, release: str = "") -> DriverRelease:
    """The driver release to bring the arm up with: the one named, else the one for this
    ROS 2 distribution ($ROS_DISTRO), else the profile's first."""
    if release:
        return profile.driver(release)
    distro = os.environ.get("ROS_DISTRO", "")
    return next((driver for driver in profile.drivers if driver.distro == distro), profile.drivers[0])


def driver_arguments(driver: DriverRelease, robot_ip: str) -> dict[str, str]:
    """The driver launch file's arguments: the profile's, ``$(find-pkg-share <package>)``
    resolved, and the robot's address."""
    from ament_index_python.packages import get_package_share_directory

    def resolve(value: str) -> str:
        return re.sub(r"\$\(find-pkg-share ([\w-]+)\)", lambda m: get_package_share_directory(m.group(1)), value)

    return {**{name: resolve(value) for name, value in driver.arguments.items()}, "robot_ip": robot_ip}


def write_controller_settings(profile: RobotProfile, path: Path) -> Path:
    """The settings the profile's trajectory controller is loaded with (the spawner's
    ``--param-file``), keyed ``/**``: Humble's spawner loads a file's ``/**`` entries and
    the controller's exact name, nothing else."""
    import yaml

    path.write_text(yaml.safe_dump({"/**": {"ros__parameters": dict(profile.controller.settings)}}, sort_keys=False))
    return path


SINGLE_AGENT_NAMESPACE = "/panda"


def agent_namespace(robot_namespace: str) -> str:
    """Where the agent of the robot in ``robot_namespace`` runs: ``/panda`` for the one
    robot that keeps franka_ros2's names, else the robot's own namespace."""
    return robot_namespace.rstrip("/") or SINGLE_AGENT_NAMESPACE


def robot_namespaces(count: int) -> list[str]:
    """``[""]`` for one robot (franka_ros2's own names), else ``/panda0`` ... ``/panda{count-1}``."""
    if count < 1:
        raise ValueError(f"the number of robots must be at least 1, got {count}")
    return [""] if count == 1 else agent_namespaces(count, prefix="/panda")


def robot_topics(profile: RobotProfile) -> tuple[str, ...]:
    """The absolute names of one robot: its joint states, its controller's commands, the
    simulated clock, and where it has them its robot state and recovery's action and
    services."""
    states = profile.joint_states
    names = [states.merged_topic, states.topic, profile.controller.command_topic, "/clock"]
    if profile.stop.kind == "franka_robot_state":
        manager = profile.recovery.controller_manager.rstrip("/")
        names += [
            profile.stop.topic,
            profile.recovery.agent_parameter.partition(":")[2],
            f"{manager}/set_hardware_component_state",
            f"{manager}/switch_controller",
        ]
    return tuple(dict.fromkeys(names))


def robot_remaps(namespace: str, profile: RobotProfile) -> dict[str, str]:
    """Remappings that move one robot's topics under ``namespace`` (none for the root)."""
    namespace = namespace.rstrip("/")
    if not namespace:
        return {}
    return {topic: f"{namespace}{topic}" for topic in robot_topics(profile)}


def mock_recovery(mock_namespace: str, profile: RobotProfile) -> dict[str, object]:
    """The agent's ``recovery`` parameter for a mock in ``mock_namespace``: the profile's
    own where the mock offers it (a Franka's three steps, where franka_msgs and
    controller_manager_msgs are installed), else the mock's ``~/error_recovery`` service
    (a real arm's is its profile's: docs/robot_stops.md)."""
    from importlib.util import find_spec

    if profile.stop.kind == "franka_robot_state" and all(
        find_spec(package) is not None for package in ("franka_msgs", "controller_manager_msgs")
    ):
        return {"recovery": profile.recovery.agent_parameter}
    return {"recovery": f"trigger:{mock_namespace.rstrip('/')}/mock_hardware/error_recovery"}


def default_timing_model(*, mock: bool) -> str:
    """The training default: on the mock, the think times this learner showed at real
    time, replayed (the timing the arm would see, whatever the CPU's speed and load); on a
    real arm, ``wall``: its time is what it is."""
    if not mock:
        return "wall"
    return f"replay:{find_config(RECORDED_THINK_TIMES, package='franka_agent')}"


def jerk_capped_override(value: str, *, mock: bool) -> dict[str, object]:
    """The agent's ``jerk_capped`` from a launch argument: "true"/"false" as given; empty,
    by the robot: on a real arm true, since its uncapped commands step the controller's
    reference acceleration within one update, beyond the arm's jerk limit (a Franka stops
    with a reflex; docs/genuine_jtc.md), and on the mock what the config says (off by
    default: the arm moves faster and learns more). Raises ParameterError otherwise
    (test_robots.py::test_a_real_arm_is_jerk_capped_unless_told_otherwise)."""
    text = value.strip().lower()
    if text in ("true", "false"):
        return {"jerk_capped": text == "true"}
    if text:
        raise ParameterError(f"jerk_capped must be true, false or empty (by the robot), got {value!r}")
    return {} if mock else {"jerk_capped": True}


def timing_model_overrides(timing_model: str, *, mock: bool) -> tuple[dict[str, object], dict[str, object]]:
    """(agent, mock) parameters for a timing model (docs/time_models.md; empty: the
    default, ``default_timing_model``). Under any model but ``wall`` the agent stops
    commanding where the world waits for the learner, and the mock, in lockstep with no
    timeout, waits with it. Raises ParameterError for a malformed model, or any model but
    ``wall`` on a real robot."""
    timing_model = timing_model or default_timing_model(mock=mock)
    model = TimingModel.parse(timing_model)
    if not model.simulated:
        return {}, {}
    if not mock:
        raise ParameterError(
            f"timing_model '{model.describe()}' is refused on a real Panda: its time is what it is; use 'wall'"
        )
    return {"timing_model": timing_model}, {"lockstep": True, "lockstep_timeout": 0.0}


SIM_ROBOT_MODULE = "franka_agent.sim_robot"


def shares_one_process(agent_timing: Mapping[str, object]) -> bool:
    """Whether a mock and its agent run in one process (``sim_robot.py``) unless told
    otherwise, from the agent's ``timing_model_overrides``: under a simulated timing model,
    whose run does not depend on the layout and is quicker in one; under ``wall``, two, as
    a real arm and its agent do not share their time (docs/panda.md, "One process or two").
    ``start_mock_robots`` and ``panda_agent.launch.py`` both follow it."""
    return bool(agent_timing)


def sim_robot_args(
    config: Path,
    namespace: str,
    agent_params: Mapping[str, object],
    mock_params: Mapping[str, object],
    params_file: Path,
    agent_ns: str | None = None,
    robot: str = "panda",
) -> list[str]:
    """``--ros-args`` for the robot in ``namespace`` as one process (``sim_robot.py``), its
    agent in ``agent_ns`` (default: ``agent_namespace``): the config, then ``params_file``
    (written here) giving each node its own values under its full name, and each node's
    namespace as a node-prefixed remap (a plain ``-p`` or ``__ns`` would reach both)."""
    import yaml

    agent_ns = agent_ns or agent_namespace(namespace)
    sections = {
        join_name(namespace, "mock_hardware"): {"ros__parameters": {"robot": robot, **mock_params}},
        join_name(agent_ns, "panda_agent"): {"ros__parameters": {"robot": robot, **agent_params}},
    }
    params_file.write_text(yaml.safe_dump(sections, sort_keys=False))
    args = ros_args(params_files=[config, params_file], remaps=robot_remaps(namespace, load_profile(robot)))
    if namespace.rstrip("/"):
        args += ["-r", f"mock_hardware:__ns:={namespace.rstrip('/')}"]
    return [*args, "-r", f"panda_agent:__ns:={agent_ns}"]


def start_mock_robots(
    group: ProcessGroup,
    config: Path,
    count: int,
    *,
    sim_speed: float,
    log_dir: Path,
    agent_params: Mapping[str, object] | None = None,
    mock_params: Mapping[str, object] | None = None,
    timing_model: str = "wall",
    one_process: bool | None = None,
    ready_timeout: float = 60.0,
    robot: str = "panda",
) -> list[str]:
    """Start ``count`` (MuJoCo mock, Panda agent) pairs, each robot in its namespace and
    its agent in ``agent_namespace`` of it, and wait until all run; return the agents'
    namespaces (where the RL side finds them). The agents run on the mocks' simulated
    time unless ``agent_params`` sets ``use_sim_time`` false, under ``timing_model``
    (``timing_model_overrides``). Each pair is one process (``sim_robot.py``) with
    ``one_process``, by default under any timing model but ``wall`` (where the run does
    not depend on it), else two. ``robot`` is the arm's profile (a name or a path). Raises
    RuntimeError with the log of a node that did not start."""
    profile = load_profile(robot)
    timing_agent, timing_mock = timing_model_overrides(timing_model, mock=True)
    if one_process is None:
        one_process = shares_one_process(timing_agent)
    agent_params = {**timing_agent, **(agent_params or {})}
    mock_params = {**timing_mock, **(mock_params or {})}
    namespaces = robot_namespaces(count)
    started: list[tuple[NodeProcess, str]] = []
    for namespace in namespaces:
        suffix = namespace.replace("/", "_")
        agent_overrides = {"use_sim_time": True, **mock_recovery(namespace, profile), **agent_params}
        mock_overrides = {"speed_factor": sim_speed, **mock_params}
        if one_process:
            pair = NodeProcess(
                SIM_ROBOT_MODULE,
                sim_robot_args(
                    config,
                    namespace,
                    agent_overrides,
                    mock_overrides,
                    log_dir / f"sim_robot{suffix}.yaml",
                    robot=robot,
                ),
                log_path=log_dir / f"sim_robot{suffix}.log",
                label=f"sim_robot{suffix}",
            )
            group.start(pair)
            started += [(pair, "mock arm ready"), (pair, "agent ready")]
            continue
        common = {"namespace": namespace or None, "params_files": [config], "remaps": robot_remaps(namespace, profile)}
        agent_overrides = {"robot": robot, **agent_overrides}
        mock_overrides = {"robot": robot, **mock_overrides}
        mock = NodeProcess(
            "franka_agent.mock.mock_hardware_node",
            ros_args(params=mock_overrides, **common),  # type: ignore[arg-type]
            log_path=log_dir / f"mock_hardware{suffix}.log",
            label=f"mock_hardware{suffix}",
        )
        agent = NodeProcess(
            "franka_agent.panda_agent_node",
            ros_args(params=agent_overrides, **{**common, "namespace": agent_namespace(namespace)}),  # type: ignore[arg-type]
            log_path=log_dir / f"panda_agent{suffix}.log",
            label=f"panda_agent{suffix}",
        )
        started += [(group.start(mock), "mock arm ready"), (group.start(agent), "agent ready")]
    for process, text in started:
        if not process.wait_for_log(text, timeout=ready_timeout):
            raise RuntimeError(f"{process.name} did not start; its log:\n{process.log_text()}")
    return [agent_namespace(namespace) for namespace in namespaces]


def read_limit_violations(namespaces: Sequence[str], timeout: float = 10.0) -> dict[str, int | None]:
    """Each mock's latched count of limit violations (``<namespace>/mock_hardware/
    limit_violations``), keyed by namespace ("/" for the root); None where none came."""
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import UInt64

    from spin_decoupler_ros.rl.client import init_private_context

    context = init_private_context()
    counts: dict[str, int | None] = {namespace or "/": None for namespace in namespaces}
    try:
        node = Node("limit_violation_reader", context=context)
        latched = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        for namespace in namespaces:
            key = namespace or "/"
            topic = join_name(namespace, "mock_hardware/limit_violations")

            def keep(msg: UInt64, key: str = key) -> None:
                counts[key] = int(msg.data)

            node.create_subscription(UInt64, topic, keep, latched)
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + timeout
        while None in counts.values() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        node.destroy_node()
    finally:
        context.try_shutdown()
    return counts
