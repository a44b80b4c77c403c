"""Which ROS 2 distribution the running process is on: ROS_DISTRO where a ROS install
was sourced, else (ROS 2 from PyPI wheels, which set no ROS_DISTRO) by the version of
the rclpy installed, which each distribution's releases keep to one major version."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

# rclpy's major version per distribution (ros2/rclpy's release branches).
RCLPY_MAJOR = {3: "humble", 7: "jazzy", 9: "kilted"}


def ros_distribution(environ: Mapping[str, str] = os.environ) -> str:
    """The distribution's name ("humble", "jazzy", "kilted"), or "" if it cannot be told
    (test_distribution.py)."""
    if environ.get("ROS_DISTRO"):
        return environ["ROS_DISTRO"]
    for prefix in [prefix for prefix in environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if prefix]:
        manifest = Path(prefix) / "share" / "rclpy" / "package.xml"
        if manifest.is_file():
            found = re.search(r"<version>\s*(\d+)\.", manifest.read_text())
            return RCLPY_MAJOR.get(int(found.group(1)), "") if found else ""
    return ""
