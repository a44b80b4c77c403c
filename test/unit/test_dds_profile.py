"""The DDS profile: applied for Fast DDS unless the user chose one, and what it says."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from spin_decoupler_ros.dds_profile import LOCALHOST_PROFILE, PROFILE, PROFILE_VARIABLES, use_dds_profile

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

NAMESPACE = {"dds": "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"}


@pytest.mark.parametrize("rmw", ["", "rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp"])
@pytest.mark.parametrize(("distro", "variable"), [("kilted", 0), ("jazzy", 0), ("", 0), ("humble", 1)])
def test_fast_dds_processes_get_the_profile_in_the_one_variable_their_release_reads(
    rmw: str, distro: str, variable: int
) -> None:
    environ = {"RMW_IMPLEMENTATION": rmw, "ROS_DISTRO": distro}
    assert use_dds_profile(environ) == PROFILE
    assert environ.pop(PROFILE_VARIABLES[variable]) == str(PROFILE)
    assert environ == {"RMW_IMPLEMENTATION": rmw, "ROS_DISTRO": distro}


@pytest.mark.parametrize(
    ("distro", "discovery"), [("kilted", "ROS_AUTOMATIC_DISCOVERY_RANGE"), ("humble", "ROS_LOCALHOST_ONLY")]
)
def test_on_one_host_discovery_is_left_to_the_localhost_profile(distro: str, discovery: str) -> None:
    environ = {"ROS_DISTRO": distro, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_LOCALHOST_ONLY": "1"}
    assert use_dds_profile(environ, localhost=True) == LOCALHOST_PROFILE
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


def writer_heartbeat_s(profile: Path) -> float:
    writer = ET.parse(profile).getroot().find("dds:profiles/dds:data_writer", NAMESPACE)
    assert writer is not None and writer.get("is_default_profile") == "true"
    period = writer.find("dds:times/dds:heartbeat_period", NAMESPACE)
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


@pytest.mark.parametrize("profile", [PROFILE, LOCALHOST_PROFILE], ids=["network", "localhost"])
def test_the_profiles_use_udp_only_and_repair_lost_samples_within_50_ms(profile: Path) -> None:
    assert participant_transports(profile) == ["UDPv4"]
    assert writer_heartbeat_s(profile) == pytest.approx(0.05)
