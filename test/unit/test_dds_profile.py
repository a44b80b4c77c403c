"""The DDS profile: applied for Fast DDS unless the user chose one, and what it says."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from spin_decoupler_ros.dds_profile import PROFILE, PROFILE_VARIABLES, use_dds_profile


@pytest.mark.parametrize("rmw", ["", "rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp"])
def test_fast_dds_processes_get_the_profile(rmw: str) -> None:
    environ = {"RMW_IMPLEMENTATION": rmw} if rmw else {}
    assert use_dds_profile(environ) == PROFILE
    assert all(environ[name] == str(PROFILE) for name in PROFILE_VARIABLES)


@pytest.mark.parametrize("variable", PROFILE_VARIABLES)
def test_a_profile_the_user_chose_is_left_alone(variable: str) -> None:
    environ = {variable: "/home/user/my_profile.xml"}
    assert use_dds_profile(environ) is None
    assert environ == {variable: "/home/user/my_profile.xml"}


def test_other_middlewares_are_left_alone() -> None:
    environ = {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    assert use_dds_profile(environ) is None
    assert environ == {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}


def test_the_profile_makes_writers_repair_lost_samples_within_50_ms() -> None:
    namespace = {"dds": "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"}
    writer = ET.parse(PROFILE).getroot().find("dds:profiles/dds:data_writer", namespace)
    assert writer is not None and writer.get("is_default_profile") == "true"
    period = writer.find("dds:times/dds:heartbeat_period", namespace)
    assert period is not None
    seconds = int(period.findtext("dds:sec", "", namespace)) + int(period.findtext("dds:nanosec", "", namespace)) / 1e9
    assert seconds == pytest.approx(0.05)
