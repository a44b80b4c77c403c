"""Robot profiles (core/profile.py, config/robots/): each arm's file loads and agrees with
itself, a malformed one is refused naming the field, a file given by path works, and no
module outside the profiles names an arm's joints or its controller's topics. No ROS."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from franka_agent.core.limits import MotionLimits
from franka_agent.core.profile import BUILT_IN_PROFILES, ProfileError, matrix_quaternion, rpy_matrix
from franka_agent.core.profile_file import load_profile, profile_from_mapping, profile_path

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

ROOT = Path(__file__).resolve().parents[3]


def raw(name: str) -> dict[str, Any]:
    return yaml.safe_load(profile_path(name).read_text())


@pytest.mark.parametrize("name", BUILT_IN_PROFILES)
def test_every_built_in_profile_loads_and_holds_together(name: str) -> None:
    profile = load_profile(name)
    assert profile.name == name
    limits = profile.limits
    assert np.all(limits.lower < profile.home) and np.all(profile.home < limits.upper)
    assert profile.controller.command_topic.startswith("/")
    assert set(profile.limit_sources) == {"position", "velocity", "acceleration", "jerk", "effort"}
    assert profile.drivers and all(driver.package and driver.launch_file for driver in profile.drivers)
    # The home pose's TCP lies in the workspace box, and the targets inside it: the reach
    # task starts where the agent may command.
    tcp = profile.tcp_position(profile.home)
    assert np.all(profile.workspace_low <= tcp) and np.all(tcp <= profile.workspace_high)
    # Jerk-capped, a full reversal of the agent's acceleration in one controller update
    # stays within the jerk limits, whatever the share of the acceleration limits asked
    # for; uncapped, the share is all there is.
    for fraction in (0.1, 0.5, 0.8, 1.0):
        capped = MotionLimits(profile, acceleration_fraction=fraction, jerk_capped=True)
        assert np.all(2.0 * capped.acceleration * profile.joint_states.rate <= limits.jerk * (1 + 1e-12))
        assert np.all(capped.acceleration <= fraction * limits.acceleration)
        np.testing.assert_array_equal(
            MotionLimits(profile, acceleration_fraction=fraction).acceleration, fraction * limits.acceleration
        )


def test_the_fr3_profile_carries_frankas_published_fr3_limits() -> None:
    """The limits the issue quotes from Franka's FR3 table: 10 rad/s^2 and 5,000 rad/s^3
    on every joint, 2.62 rad/s on joints 1-4, 5.26, 4.18, 5.26 on 5-7; positions no wider
    than the published table's (the URDF's, narrower, are the ones kept)."""
    fr3 = load_profile("fr3")
    np.testing.assert_array_equal(fr3.limits.acceleration, 10.0)
    np.testing.assert_array_equal(fr3.limits.jerk, 5000.0)
    np.testing.assert_array_equal(fr3.limits.velocity, [2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26])
    published_lower = [-2.9007, -1.8361, -2.9007, -3.0770, -2.8763, 0.4398, -3.0508]
    published_upper = [2.9007, 1.8361, 2.9007, -0.1169, 2.8763, 4.6216, 3.0508]
    assert np.all(fr3.limits.lower >= published_lower) and np.all(fr3.limits.upper <= published_upper)
    assert [driver.distro for driver in fr3.drivers] == ["jazzy", "humble"]
    assert fr3.driver("humble").arguments != fr3.driver("jazzy").arguments


def test_a_profile_file_given_by_path_is_used(tmp_path: Path) -> None:
    data = raw("panda")
    data["name"] = "my_panda"
    data["controller"]["command_topic"] = "/my_controller/joint_trajectory"
    path = tmp_path / "my_panda.yaml"
    path.write_text(yaml.safe_dump(data))
    profile = load_profile(str(path))
    assert profile.name == "my_panda" and profile.controller.command_topic == "/my_controller/joint_trajectory"


def test_an_unknown_profile_names_the_ones_there_are() -> None:
    with pytest.raises(ProfileError, match=r"no robot profile 'kr6'.*panda, fr3, ur5e"):
        load_profile("kr6")
    with pytest.raises(ProfileError, match=r"'/nowhere/arm.yaml' does not exist"):
        load_profile("/nowhere/arm.yaml")


def _with(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(data)
    keys = path.split(".")
    target = changed
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is DELETE:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return changed


DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("joint_names", DELETE, r"'joint_names' is missing"),
        ("joint_names", ["a", "a", "b", "c", "d", "e", "f"], r"'joint_names' names a joint twice"),
        ("limits.velocity", [1.0, 1.0], r"'limits\.velocity' must have 7 entries, got 2"),
        ("limits.jerk", [1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0], r"'limits\.jerk' must be positive"),
        ("limits.lower", [0.0] * 7, r"'limits' needs lower < upper"),
        ("limits.sources.jerk", DELETE, r"'limits\.sources\.jerk' is missing"),
        ("home", [5.0] * 7, r"'home' must lie inside the joint limits"),
        ("kinematics.joints", [{}], r"'kinematics\.joints' must give one origin per joint \(7\)"),
        ("kinematics.tool.tcp", "far", r"'kinematics\.tool\.tcp' must be a list of 3 numbers"),
        ("controller.command_topic", "relative/topic", r"'controller\.command_topic' must be an absolute topic"),
        ("controller.p_gains", [1.0, "x", 1, 1, 1, 1, 1], r"'controller\.p_gains' must hold numbers only"),
        ("stop.surface", "a_light", r"'stop\.surface' must be one of"),
        ("workspace.low", [1.0, 1.0, 1.0], r"'workspace' needs low < high"),
        ("targets.high", [2.0, 2.0, 2.0], r"'targets' must lie inside the workspace box"),
        ("dynamics.links.0.mass", -1.0, r"'dynamics\.links\[0\]\.mass' must be positive"),
        ("drivers", [], r"'drivers' must list at least one driver release"),
    ],
)
def test_a_malformed_profile_is_refused_naming_the_field(path: str, value: Any, named: str) -> None:
    with pytest.raises(ProfileError, match=named):
        profile_from_mapping(_with(raw("panda"), path, value), "test.yaml")


@given(st.lists(st.floats(-np.pi, np.pi), min_size=3, max_size=3))
def test_a_quaternion_turns_as_its_roll_pitch_yaw(rpy: list[float]) -> None:
    """The MJCF's quaternions are the profile's URDF roll-pitch-yaw turns."""
    w, x, y, z = matrix_quaternion(rpy_matrix(np.array(rpy)))
    rebuilt = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    np.testing.assert_allclose(rebuilt, rpy_matrix(np.array(rpy)), atol=1e-9)


def _arm_specific_names() -> list[str]:
    """Every profile's joint names and topics, as the code would have to spell them."""
    names: set[str] = set()
    for name in BUILT_IN_PROFILES:
        profile = load_profile(name)
        names.update(profile.joint_names)
        names.add(profile.controller.command_topic)
        names.add(profile.stop.topic)
    names.discard("-")
    return sorted(names)


def test_no_module_names_an_arms_joints_or_topics() -> None:
    """Everything arm-specific is in the profiles: no source file, launch file or
    parameters file of the packages names a joint or a controller's topic (tests and
    docs may, to check and explain them)."""
    sources = [
        path
        for package in ("franka_agent", "spin_decoupler_ros")
        for folder in (f"src/{package}/{package}", f"src/{package}/launch", f"src/{package}/config")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".yaml") and "robots" not in path.parts
    ]
    assert len(sources) > 50
    pattern = re.compile("|".join(re.escape(name) for name in _arm_specific_names()))
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if pattern.search(line)
    ]
    assert not found, "arm-specific names outside the profiles:\n" + "\n".join(found)
