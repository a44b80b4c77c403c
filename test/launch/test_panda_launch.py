"""launch/panda_*.launch.py: the mock/real switch selects the right nodes.

Skipped where ROS 2 launch is not installed; test/integration/test_panda.py checks the
same switch without launch (the main job's process set, and its refusal to drive a real
arm without franka_ros2).
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from types import ModuleType

import pytest
from helpers import isolated_ros_environment

launch_pytest = pytest.importorskip("launch_pytest", reason="ROS 2 launch (launch_pytest) is not installed")

from launch import LaunchContext, LaunchDescription  # noqa: E402
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, SetEnvironmentVariable  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_ros.actions import Node  # noqa: E402

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


@pytest.mark.parametrize("mock", ["true", "false"])
def test_switch_selects_mock_or_franka_bringup(mock: str) -> None:
    module = load("panda_agent.launch.py")
    arguments = {"use_mock_hardware": mock}
    if mock == "false":
        arguments["robot_ip"] = "172.16.0.2"
    context = context_with(**arguments)
    nodes = module._nodes(context)
    executables = {str(node.node_executable) for node in nodes}
    assert executables == ({"panda_agent", "mock_hardware"} if mock == "true" else {"panda_agent"})
    real_only = [
        e for e in module.generate_launch_description().entities if isinstance(e, (IncludeLaunchDescription, Node))
    ]
    assert real_only and all(e.condition.evaluate(context) == (mock == "false") for e in real_only)


def test_num_agents_starts_a_namespaced_mock_and_agent_per_robot() -> None:
    from launch.utilities import perform_substitutions

    module = load("panda_agent.launch.py")
    context = context_with(num_agents="3")

    def text(value: object) -> str:
        return value if isinstance(value, str) else perform_substitutions(context, value)  # type: ignore[arg-type]

    placed = []
    for node in module._nodes(context):
        namespace = text(node._Node__node_namespace)
        placed.append((str(node.node_executable), namespace))
        remapped = {text(src): text(dst) for src, dst in node._Node__remappings}
        # Every robot topic, and the mock's clock, under the robot's namespace.
        assert remapped["/clock"] == f"{namespace}/clock"
        assert remapped["/joint_states"] == f"{namespace}/joint_states"
    assert sorted(placed) == sorted((exe, f"/panda{i}") for i in range(3) for exe in ("mock_hardware", "panda_agent"))


def test_several_agents_need_mock_hardware() -> None:
    module = load("panda_agent.launch.py")
    with pytest.raises(RuntimeError, match="num_agents > 1 needs use_mock_hardware:=true"):
        module._nodes(context_with(use_mock_hardware="false", robot_ip="172.16.0.2", num_agents="2"))


def test_real_hardware_needs_a_robot_ip() -> None:
    module = load("panda_agent.launch.py")
    with pytest.raises(RuntimeError, match="robot_ip is required"):
        module._require_robot_ip(context_with(use_mock_hardware="false"))


@launch_pytest.fixture
def mock_pipeline() -> LaunchDescription:
    isolation = [SetEnvironmentVariable(k, v) for k, v in isolated_ros_environment().items()]
    return LaunchDescription(
        [
            *isolation,
            IncludeLaunchDescription(PythonLaunchDescriptionSource(str(LAUNCH / "panda_agent.launch.py"))),
            launch_pytest.actions.ReadyToTest(),
        ]
    )


@pytest.mark.launch(fixture=mock_pipeline)
def test_mock_agent_side_comes_up_and_serves_an_episode() -> None:
    from spin_decoupler_ros.rl import RLClient

    deadline = time.monotonic() + 60
    while True:
        try:
            client = RLClient(connect_timeout=5)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
    with client:
        names = {name for name, _ in client.node.get_node_names_and_namespaces()}
        assert {"mock_hardware", "panda_agent"} <= names
        assert client.reset(seed=0).observation.shape == (17,)
        assert client.step([0.0, 0.0, 0.0]).seq == 1
