"""The examples' one-command runs, end to end (agent and RL node as separate processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_first_order_plant_run_trains_and_beats_the_zero_action_baseline(
    ros_domain: dict[str, str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "plant"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "spin_decoupler_ros.examples.first_order_plant.run",
            "--timesteps",
            "400",
            "--run-dir",
            str(run_dir),
        ],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "final mean tracking error" in done.stdout
    results = json.loads((run_dir / "results.json").read_text())
    assert results["mean_tracking_error"] < results["zero_action_tracking_error"]
    assert (run_dir / "model.zip").exists()
    assert "agent ready" in (run_dir / "agent.log").read_text()
