"""core/ros2_control_description.py: what the genuine controller check loads into ros2_control."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from franka_agent.core.profile import BUILT_IN_PROFILES
from franka_agent.core.profile_file import load_profile
from franka_agent.core.ros2_control_description import (
    DISTRO_DEFAULTS,
    controller_parameters,
    robot_description,
)

pytestmark = pytest.mark.core

PLUGIN = "spin_decoupler_check_hardware/RecordedJoints"


def find(element: ET.Element, path: str) -> ET.Element:
    found = element.find(path)
    assert found is not None, f"no {path} in {ET.tostring(element, encoding='unicode')[:200]}"
    return found


def value(element: ET.Element, path: str, attribute: str | None = None) -> str:
    found = find(element, path)
    text = found.text if attribute is None else found.get(attribute)
    assert text is not None, (path, attribute)
    return text


@pytest.mark.parametrize("robot", BUILT_IN_PROFILES)
def test_the_description_gives_every_joint_its_controllers_interface_and_starts_it_home(robot: str) -> None:
    profile = load_profile(robot)
    inertias = [{"inertia": 0.1 * (i + 1)} for i in range(len(profile.joint_names))]
    urdf = ET.fromstring(
        robot_description(profile, plugin=PLUGIN, hardware_parameters={"record": "/r.bin"}, joint_parameters=inertias)
    )
    chain = urdf.findall("joint")
    assert [j.get("name") for j in chain] == list(profile.joint_names)
    for joint, low, high in zip(chain, profile.limits.lower, profile.limits.upper, strict=True):
        assert float(value(joint, "limit", "lower")) == pytest.approx(low)
        assert float(value(joint, "limit", "upper")) == pytest.approx(high)
    system = find(urdf, "ros2_control")
    assert value(system, "hardware/plugin") == PLUGIN
    assert value(system, "hardware/param[@name='record']") == "/r.bin"
    joints = system.findall("joint")
    assert [j.get("name") for j in joints] == list(profile.joint_names)
    for joint, home, parameters in zip(joints, profile.home, inertias, strict=True):
        assert [c.get("name") for c in joint.findall("command_interface")] == [profile.controller.interface]
        assert [s.get("name") for s in joint.findall("state_interface")] == ["position", "velocity"]
        assert float(value(joint, "state_interface/param[@name='initial_value']")) == pytest.approx(home)
        assert float(value(joint, "param[@name='inertia']")) == pytest.approx(parameters["inertia"])
        # ros2_control's limiters would clamp what the check measures: they are off
        assert value(joint, "limits", "enable") == "false"


def test_a_description_without_a_value_per_joint_is_refused() -> None:
    profile = load_profile("panda")
    with pytest.raises(ValueError, match="7 joints"):
        robot_description(profile, plugin=PLUGIN, hardware_parameters={}, start=np.zeros(6))


@pytest.mark.parametrize("robot", BUILT_IN_PROFILES)
@pytest.mark.parametrize("distro", sorted(DISTRO_DEFAULTS))
def test_the_controller_is_configured_as_the_profile_says_on_the_distros_defaults(robot: str, distro: str) -> None:
    profile = load_profile(robot)
    parameters = controller_parameters(profile, distro)
    manager = parameters["controller_manager"]["ros__parameters"]
    assert manager["update_rate"] == 1000
    assert manager[profile.controller.name]["type"] == "joint_trajectory_controller/JointTrajectoryController"
    settings = parameters[profile.controller.name]["ros__parameters"]
    assert settings["joints"] == list(profile.joint_names)
    assert settings["command_interfaces"] == [profile.controller.interface]
    assert settings["allow_nonzero_velocity_at_trajectory_end"] is (distro == "humble")
    for key, value in profile.controller.settings.items():
        assert settings[key] == value
    if profile.controller.interface == "effort":
        assert [settings["gains"][n]["p"] for n in profile.joint_names] == list(profile.controller.p_gains)
        assert [settings["gains"][n]["d"] for n in profile.joint_names] == list(profile.controller.d_gains)
    else:
        assert "gains" not in settings
    broadcaster = parameters["joint_state_broadcaster"]["ros__parameters"]
    assert broadcaster["update_rate"] == round(profile.joint_states.rate)


def test_an_unknown_distro_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"\['humble', 'jazzy'\]"):
        controller_parameters(load_profile("fr3"), "rolling")
