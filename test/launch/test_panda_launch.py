"""launch/panda_*.launch.py: the mock/real switch selects the right nodes, each robot
gets its namespace, and every process exits cleanly when launch shuts down. Public
launch and launch_pytest APIs only.

Skipped where ROS 2 launch is not installed; test/integration/test_panda.py checks the
same switch without launch (the main job's process set, and its refusal to drive a real
arm without franka_ros2).
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from spin_decoupler_ros.tools.isolation import isolated_ros_environment

launch_pytest = pytest.importorskip("launch_pytest", reason="ROS 2 launch (launch_pytest) is not installed")

from launch import LaunchContext, LaunchDescription  # noqa: E402
from launch.actions import (  # noqa: E402
    DeclareLaunchArgument,
    IncludeLaunchDescription,
    SetEnvironmentVariable,
)
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_ros.actions import Node  # noqa: E402
from process_exits import Exits, all_exited_cleanly, noting_exits  # noqa: E402

LAUNCH = Path(__file__).resolve().parents[2] / "launch"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, LAUNCH / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def context_with(**arguments: str) -> LaunchContext:
    module = load("panda_agent.launch.py")
    context = LaunchContext()
    for entity in module.generate_launch_description().entities:
        if isinstance(entity, DeclareLaunchArgument) and entity.default_value is not None:
            context.launch_configurations[entity.name] = "".join(s.perform(context) for s in entity.default_value)
    context.launch_configurations.update(arguments)
    return context


def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *packages: str) -> None:
    """An ament index at ``tmp_path`` that lists ``packages`` (a driver "installed")."""
    index = tmp_path / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    for package in packages:
        (index / package).touch()
        (tmp_path / "share" / package).mkdir()
    monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path}:{os.environ.get('AMENT_PREFIX_PATH', '')}")


@pytest.mark.parametrize("mock", ["true", "false"])
def test_switch_selects_mock_or_the_profiles_driver(mock: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = load("panda_agent.launch.py")
    arguments = {"use_mock_hardware": mock, "robot": "fr3", "driver_release": "jazzy"}
    if mock == "false":
        arguments["robot_ip"] = "172.16.0.2"
        installed(tmp_path, monkeypatch, "franka_bringup", "franka_fr3_moveit_config")
    context = context_with(**arguments)
    nodes = module._nodes(context)
    executables = {str(node.node_executable) for node in nodes}
    assert executables == ({"panda_agent", "mock_hardware"} if mock == "true" else {"panda_agent"})
    driver = module._driver(context)
    if mock == "true":
        assert driver == []
        return
    include, spawner = driver
    assert isinstance(include, IncludeLaunchDescription) and isinstance(spawner, Node)

    def text(substitutions: Any) -> str:
        if isinstance(substitutions, str):
            return substitutions
        return "".join(part.perform(context) for part in substitutions)

    given = {text(name): text(value) for name, value in include.launch_arguments}
    assert given["robot_type"] == "fr3" and given["robot_ip"] == "172.16.0.2"
    moveit_config = tmp_path / "share" / "franka_fr3_moveit_config"
    assert given["controllers_yaml"] == str(moveit_config / "config" / "fr3_ros_controllers.yaml")


@pytest.mark.parametrize(
    ("timing_model", "executables"),
    [("none", ["sim_panda"]), ("wall", ["mock_hardware", "panda_agent"])],
)
def test_a_simulated_timing_model_runs_each_mock_and_its_agent_in_one_process(
    timing_model: str, executables: list[str]
) -> None:
    """As ./ws main does (robots.start_mock_robots): one sim_panda per robot under a
    simulated timing model, two processes under wall. Each sim_panda's node-keyed
    parameters go to a file beside the launch's own log, not to a temporary folder."""
    from launch.logging import launch_config

    module = load("panda_agent.launch.py")
    nodes = module._nodes(context_with(timing_model=timing_model, num_agents="2"))
    found = sorted(str(node.node_executable) for node in nodes)
    assert found == sorted(executables * 2)
    written = [Path(launch_config.log_dir) / f"sim_robot_panda{i}.yaml" for i in range(2)]
    try:
        assert [path.exists() for path in written] == [timing_model != "wall"] * 2
        if timing_model != "wall":
            assert "/panda1/mock_hardware:" in written[1].read_text()
    finally:
        for path in written:
            path.unlink(missing_ok=True)


def test_several_agents_need_mock_hardware() -> None:
    module = load("panda_agent.launch.py")
    with pytest.raises(RuntimeError, match="num_agents > 1 needs use_mock_hardware:=true"):
        module._nodes(context_with(use_mock_hardware="false", robot_ip="172.16.0.2", num_agents="2"))


def test_real_hardware_needs_a_robot_ip() -> None:
    module = load("panda_agent.launch.py")
    with pytest.raises(RuntimeError, match="robot_ip is required"):
        module._driver(context_with(use_mock_hardware="false"))


def test_real_hardware_without_its_driver_names_the_release_to_install() -> None:
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    from spin_decoupler_ros.core.errors import ParameterError

    for driver in ("franka_bringup", "ur_robot_driver"):
        try:
            get_package_share_directory(driver)
            pytest.skip(f"{driver} is installed here")
        except PackageNotFoundError:
            pass
    module = load("panda_agent.launch.py")
    with pytest.raises(ParameterError, match=r"'franka_bringup' from franka_ros2 v0\.1\.0"):
        module._driver(context_with(use_mock_hardware="false", robot_ip="172.16.0.2"))
    with pytest.raises(ParameterError, match=r"'ur_robot_driver' from ur_robot_driver"):
        module._driver(context_with(use_mock_hardware="false", robot_ip="172.16.0.2", robot="ur5e"))


def agent_side(exits: Exits, **arguments: str) -> LaunchDescription:
    """panda_agent.launch.py with ``arguments``, in a domain of its own, noting how each process exits."""
    isolation = [SetEnvironmentVariable(k, v) for k, v in isolated_ros_environment().items()]
    return LaunchDescription(
        [
            *isolation,
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(str(LAUNCH / "panda_agent.launch.py")),
                launch_arguments=arguments.items(),
            ),
            noting_exits(exits),
            launch_pytest.actions.ReadyToTest(),
        ]
    )


@pytest.fixture
def exits() -> Exits:
    return []


@launch_pytest.fixture
def mock_pipeline(exits: Exits) -> LaunchDescription:
    return agent_side(exits)


@launch_pytest.fixture
def three_mock_robots(exits: Exits) -> LaunchDescription:
    return agent_side(exits, num_agents="3")


def graph_reader() -> tuple[Any, Any]:
    from rclpy.node import Node as RclpyNode

    from spin_decoupler_ros.rl.client import init_private_context

    context = init_private_context()
    return context, RclpyNode("graph_reader", context=context)


@pytest.mark.launch(fixture=three_mock_robots)
def test_num_agents_starts_a_namespaced_mock_and_agent_per_robot(exits: Exits):  # type: ignore[no-untyped-def]
    """Each robot's mock and agent in /panda<i>, with every robot topic and the mock's clock there."""
    context, node = graph_reader()
    try:
        expected = {(name, f"/panda{i}") for i in range(3) for name in ("mock_hardware", "panda_agent")}
        deadline = time.monotonic() + 90
        while not expected <= set(node.get_node_names_and_namespaces()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert expected <= set(node.get_node_names_and_namespaces())
        deadline = time.monotonic() + 30
        wanted = {f"/panda{i}/{topic}" for i in range(3) for topic in ("clock", "joint_states", "franka/joint_states")}
        while not wanted <= {name for name, _ in node.get_topic_names_and_types()} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert wanted <= {name for name, _ in node.get_topic_names_and_types()}
        assert node.count_publishers("/clock") == 0  # no mock left on the root's clock
    finally:
        node.destroy_node()
        context.try_shutdown()
    yield
    assert all_exited_cleanly(exits, 6), exits


@pytest.mark.launch(fixture=mock_pipeline)
def test_mock_agent_side_comes_up_and_serves_an_episode(exits: Exits):  # type: ignore[no-untyped-def]
    from spin_decoupler_ros.rl import RLClient

    deadline = time.monotonic() + 60
    while True:
        try:
            client = RLClient("/panda", connect_timeout=5)  # one robot's agent: /panda
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
    with client:
        names = {name for name, _ in client.node.get_node_names_and_namespaces()}
        assert {"mock_hardware", "panda_agent"} <= names
        assert client.reset(seed=0).observation.shape == (17,)
        assert client.step([0.0, 0.0, 0.0]).seq == 1
    yield
    # After launch shut them down: every process stopped cleanly.
    assert all_exited_cleanly(exits, 2), exits
