"""franka_agent.robots: what the launch files and the main job ask of the installation."""

from __future__ import annotations

from pathlib import Path

import pytest

from franka_agent.core.profile_file import load_profile


@pytest.mark.parametrize(
    ("robot", "release", "package", "named"),
    [
        ("panda", None, "franka_bringup", r"franka_ros2 v0\.1\.0"),
        ("fr3", "humble", "franka_bringup", r"franka_ros2 v2\.5\.0"),
        ("fr3", "jazzy", "franka_bringup", r"franka_ros2 v3\.4\.0"),
        ("ur5e", None, "ur_robot_driver", r"ur_robot_driver"),
    ],
)
def test_a_missing_driver_is_named_with_the_release_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, robot: str, release: str | None, package: str, named: str
) -> None:
    """The check panda_agent.launch.py makes before it includes the driver's launch file
    (that the launch file makes it: test_panda_launch.py::test_real_hardware_without_franka_ros2_…)."""
    from franka_agent.robots import require_real_robot_driver
    from spin_decoupler_ros.core.errors import ParameterError

    profile = load_profile(robot)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    with pytest.raises(ParameterError, match=rf"'{package}' from {named}.*use_mock_hardware:=true"):
        require_real_robot_driver(profile, release)
    # Where the driver is installed (an ament index that lists its package), nothing is said.
    (tmp_path / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (tmp_path / "share" / "ament_index" / "resource_index" / "packages" / package).touch()
    (tmp_path / "share" / package).mkdir()
    require_real_robot_driver(profile, release)


def test_a_real_arm_is_jerk_capped_unless_told_otherwise() -> None:
    """panda_agent.launch.py's ``jerk_capped``: empty caps a real arm's commands (their
    reference stays within its jerk limits on the genuine controller: bench/genuine_jtc.py)
    and leaves the mock to its config; an explicit value holds on either; anything else
    is named."""
    from franka_agent.robots import jerk_capped_override
    from spin_decoupler_ros.core.errors import ParameterError

    assert jerk_capped_override("", mock=False) == {"jerk_capped": True}
    assert jerk_capped_override("", mock=True) == {}
    for mock in (False, True):
        assert jerk_capped_override("false", mock=mock) == {"jerk_capped": False}
        assert jerk_capped_override(" True", mock=mock) == {"jerk_capped": True}
    with pytest.raises(ParameterError, match=r"jerk_capped must be true, false or empty.*'yes'"):
        jerk_capped_override("yes", mock=False)
