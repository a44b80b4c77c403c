"""The genuine joint_trajectory_controller check itself, where its overlay is built.

bench/genuine_jtc/build builds ros2_control and ros2_controllers from their Jazzy release
sources into an overlay outside the repository (docs/genuine_jtc.md); where it is, this
runs bench/genuine_jtc.py briefly for the FR3 on Jazzy's defaults: a real agent through
every case (steady steps, steps of every duration, adversarial actions, a stalled
learner, a frozen agent, resets) in front of the genuine controller at 1 kHz. Its
reference must stay within the arm's limits, and the emulation replayed on what it took
must give the same reference. Elsewhere it skips, saying why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spin_decoupler_ros.tools.distribution import ros_distribution

ROOT = Path(__file__).resolve().parents[2]
OVERLAY = Path(
    os.environ.get(
        "GENUINE_JTC_OVERLAY",
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "spin_decoupler" / "genuine_jtc_jazzy",
    )
)

pytestmark = [
    pytest.mark.skipif(
        not (OVERLAY / "install" / "local_setup.bash").exists(),
        reason=f"no genuine joint_trajectory_controller overlay at {OVERLAY}: build it with "
        "bench/genuine_jtc/build (docs/genuine_jtc.md)",
    ),
    pytest.mark.skipif(
        ros_distribution() != "jazzy",
        reason="the overlay is built on ROS 2 Jazzy's wheels: ./ws --distro jazzy test (./ws test runs it there)",
    ),
]


def test_the_agent_keeps_the_genuine_controller_within_the_limits_and_the_emulation_follows_it(
    tmp_path: Path,
) -> None:
    result_file = tmp_path / "genuine_jtc.json"
    command = [sys.executable, str(ROOT / "bench" / "genuine_jtc.py"), "--robots", "fr3", "--distros", "jazzy"]
    command += ["--minutes", "0.1", "--result", str(result_file), "--keep", str(tmp_path)]
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    result = json.loads(result_file.read_text())
    measured = result["fr3"]["jazzy_defaults"]
    assert all(runs >= 1 for runs in measured["cases"].values()), measured["cases"]
    assert measured["samples"] > 0.8 * measured["updates"] > 10_000, (measured["samples"], measured["updates"])
    assert measured["limit_breaks"] == 0, measured["joints_over"]
    compared = result["mock_vs_genuine"]
    assert compared["rows_checked"] > 0.8 * measured["samples"], compared
    assert compared["max_position_error_rad"] <= 1e-9 and compared["max_velocity_error_rad_s"] <= 1e-7, compared
