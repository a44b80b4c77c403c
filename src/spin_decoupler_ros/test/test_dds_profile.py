"""The DDS profile: applied for Fast DDS unless the user chose one, and what it says."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from spin_decoupler_ros.dds_profile import (
    FAST_DDS_2_PROFILES,
    LOCALHOST_PROFILE,
    PROFILE,
    PROFILE_VARIABLES,
    use_dds_profile,
)

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

NAMESPACE = {"dds": "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"}


@pytest.mark.parametrize("rmw", ["", "rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp"])
@pytest.mark.parametrize(("distro", "variable"), [("kilted", 0), ("rolling", 0), ("jazzy", 1), ("humble", 1)])
def test_fast_dds_processes_get_the_profile_in_the_one_variable_their_release_reads(
    rmw: str, distro: str, variable: int
) -> None:
    environ = {"RMW_IMPLEMENTATION": rmw, "ROS_DISTRO": distro}
    profile = FAST_DDS_2_PROFILES[PROFILE] if variable == 1 else PROFILE
    assert use_dds_profile(environ) == profile
    assert environ.pop(PROFILE_VARIABLES[variable]) == str(profile)
    assert environ == {"RMW_IMPLEMENTATION": rmw, "ROS_DISTRO": distro}


@pytest.mark.parametrize(("library", "variable"), [("libfastrtps.so.2.14.5", 1), ("libfastdds.so.3.2.2", 0)])
def test_without_ros_distro_the_installed_fast_dds_library_decides(tmp_path: Path, library: str, variable: int) -> None:
    """ROS 2 from PyPI wheels sets no ROS_DISTRO: Jazzy's wheels carry Fast DDS 2.14
    (libfastrtps), Kilted's Fast DDS 3.2 (libfastdds)."""
    workspace, wheels = tmp_path / "install" / "pkg", tmp_path / "venv"
    (workspace / "lib").mkdir(parents=True)
    (wheels / "lib").mkdir(parents=True)
    (wheels / "lib" / library).touch()
    environ = {"AMENT_PREFIX_PATH": f"{workspace}:{wheels}"}
    profile = FAST_DDS_2_PROFILES[LOCALHOST_PROFILE] if variable == 1 else LOCALHOST_PROFILE
    assert use_dds_profile(environ, localhost=True) == profile
    assert environ[PROFILE_VARIABLES[variable]] == str(profile)
    assert PROFILE_VARIABLES[1 - variable] not in environ
    assert environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SYSTEM_DEFAULT"


@pytest.mark.parametrize(
    ("distro", "discovery"),
    [
        ("kilted", "ROS_AUTOMATIC_DISCOVERY_RANGE"),
        ("jazzy", "ROS_AUTOMATIC_DISCOVERY_RANGE"),
        ("humble", "ROS_LOCALHOST_ONLY"),
    ],
)
def test_on_one_host_discovery_is_left_to_the_localhost_profile(distro: str, discovery: str) -> None:
    environ = {"ROS_DISTRO": distro, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_LOCALHOST_ONLY": "1"}
    assert use_dds_profile(environ, localhost=True) in (LOCALHOST_PROFILE, FAST_DDS_2_PROFILES[LOCALHOST_PROFILE])
    # (rmw_fastrtps sets up its own transports, shared memory included, for LOCALHOST.)
    assert environ[discovery] in ("SYSTEM_DEFAULT", "0")


@pytest.mark.parametrize("variable", PROFILE_VARIABLES)
@pytest.mark.parametrize("localhost", [False, True])
def test_a_profile_the_user_chose_is_left_alone(variable: str, localhost: bool) -> None:
    environ = {variable: "/home/user/my_profile.xml"}
    assert use_dds_profile(environ, localhost=localhost) is None
    assert environ == {variable: "/home/user/my_profile.xml"}


def test_other_middlewares_are_left_alone() -> None:
    environ = {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    assert use_dds_profile(environ, localhost=True) is None
    assert environ == {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}


# Fast DDS 3's element names that Fast DDS 2 spells otherwise.
FAST_DDS_2_NAMES = {"heartbeat_period": "heartbeatPeriod"}


def writer_heartbeat_s(profile: Path) -> float:
    writer = ET.parse(profile).getroot().find("dds:profiles/dds:data_writer", NAMESPACE)
    assert writer is not None and writer.get("is_default_profile") == "true"
    name = FAST_DDS_2_NAMES["heartbeat_period"] if profile in FAST_DDS_2_PROFILES.values() else "heartbeat_period"
    period = writer.find(f"dds:times/dds:{name}", NAMESPACE)
    assert period is not None
    return int(period.findtext("dds:sec", "", NAMESPACE)) + int(period.findtext("dds:nanosec", "", NAMESPACE)) / 1e9


def participant_transports(profile: Path) -> list[str]:
    """The transport kinds a profile's default participant uses (none built in)."""
    root = ET.parse(profile).getroot()
    participant = root.find("dds:profiles/dds:participant", NAMESPACE)
    assert participant is not None and participant.get("is_default_profile") == "true"
    assert participant.findtext("dds:rtps/dds:useBuiltinTransports", "", NAMESPACE) == "false"
    kinds = {
        descriptor.findtext("dds:transport_id", "", NAMESPACE): descriptor.findtext("dds:type", "", NAMESPACE)
        for descriptor in root.iterfind("dds:profiles/dds:transport_descriptors/dds:transport_descriptor", NAMESPACE)
    }
    used = participant.iterfind("dds:rtps/dds:userTransports/dds:transport_id", NAMESPACE)
    return [kinds[(element.text or "").strip()] for element in used]


ALL_PROFILES = [PROFILE, LOCALHOST_PROFILE, *FAST_DDS_2_PROFILES.values()]


@pytest.mark.parametrize("profile", ALL_PROFILES, ids=lambda path: path.stem)
def test_the_profiles_use_udp_only_and_repair_lost_samples_within_50_ms(profile: Path) -> None:
    assert participant_transports(profile) == ["UDPv4"]
    assert writer_heartbeat_s(profile) == pytest.approx(0.05)


def element_tree(profile: Path, renamed: dict[str, str]) -> list[tuple[str, str]]:
    """Every element's tag (``renamed``'s names replaced) and text, in document order."""
    elements = []
    for element in ET.parse(profile).getroot().iter():
        tag = element.tag.split("}")[-1]
        elements.append((renamed.get(tag, tag), (element.text or "").strip()))
    return elements


@pytest.mark.parametrize("profile", [PROFILE, LOCALHOST_PROFILE], ids=lambda path: path.stem)
def test_fast_dds_2s_profiles_say_what_fast_dds_3s_say(profile: Path) -> None:
    """The same settings, element for element, only in Fast DDS 2's names."""
    fast_dds_2_names_as_3s = {two: three for three, two in FAST_DDS_2_NAMES.items()}
    assert element_tree(FAST_DDS_2_PROFILES[profile], fast_dds_2_names_as_3s) == element_tree(profile, {})
    assert element_tree(FAST_DDS_2_PROFILES[profile], {}) != element_tree(profile, {})
