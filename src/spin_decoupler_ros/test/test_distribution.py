"""tools/distribution.py: the distribution a process is on, with or without ROS_DISTRO."""

from __future__ import annotations

from pathlib import Path

import pytest

from spin_decoupler_ros.tools.distribution import ros_distribution


def rclpy_at(prefix: Path, version: str) -> str:
    (prefix / "share" / "rclpy").mkdir(parents=True)
    (prefix / "share" / "rclpy" / "package.xml").write_text(f"<package><version>{version}</version></package>")
    return str(prefix)


@pytest.mark.core
@pytest.mark.parametrize(("version", "distro"), [("3.3.16", "humble"), ("7.1.5", "jazzy"), ("9.1.2", "kilted")])
def test_wheels_without_ros_distro_are_told_by_their_rclpy(tmp_path: Path, version: str, distro: str) -> None:
    empty = str(tmp_path / "nothing")
    prefixes = f"{empty}:{rclpy_at(tmp_path / 'venv', version)}"
    assert ros_distribution({"AMENT_PREFIX_PATH": prefixes}) == distro
    # A sourced install says so itself.
    assert ros_distribution({"ROS_DISTRO": "rolling", "AMENT_PREFIX_PATH": prefixes}) == "rolling"


@pytest.mark.core
def test_an_unknown_rclpy_or_none_is_not_guessed(tmp_path: Path) -> None:
    assert ros_distribution({"AMENT_PREFIX_PATH": rclpy_at(tmp_path, "42.0.0")}) == ""
    assert ros_distribution({}) == ""
