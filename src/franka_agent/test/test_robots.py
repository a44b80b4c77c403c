"""franka_agent.robots: what the launch files and the main job ask of the installation."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_a_missing_franka_bringup_is_named_with_the_release_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check panda_agent.launch.py makes before it includes franka_bringup's launch file
    (that the launch file makes it: test_panda_launch.py::test_real_hardware_without_franka_ros2_…)."""
    from franka_agent.robots import require_real_robot_driver
    from spin_decoupler_ros.core.errors import ParameterError

    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    with pytest.raises(ParameterError, match=r"'franka_bringup' from franka_ros2 v0\.1\.0.*use_mock_hardware:=true"):
        require_real_robot_driver()
    # Where franka_ros2 is installed (an ament index that lists franka_bringup), nothing is said.
    (tmp_path / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (tmp_path / "share" / "ament_index" / "resource_index" / "packages" / "franka_bringup").touch()
    (tmp_path / "share" / "franka_bringup").mkdir()
    require_real_robot_driver()
