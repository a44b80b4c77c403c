"""The examples' one-command runs, end to end (agent and RL node as separate processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_module


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_first_order_plant_run_trains_and_beats_the_zero_action_baseline(
    ros_domain: dict[str, str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "plant"
    done = run_module(
        "spin_decoupler_ros.examples.first_order_plant.run",
        "--timesteps",
        "400",
        "--run-dir",
        str(run_dir),
        timeout=280,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "final mean tracking error" in done.stdout
    results = json.loads((run_dir / "results.json").read_text())
    assert results["mean_tracking_error"] < results["zero_action_tracking_error"]
    assert (run_dir / "model.zip").exists()
    assert "agent ready" in (run_dir / "agent.log").read_text()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_lunar_lander_run_trains_and_reports_the_mean_evaluation_return(
    ros_domain: dict[str, str], tmp_path: Path
) -> None:
    import yaml

    from spin_decoupler_ros.tools.paths import find_config

    config = yaml.safe_load(find_config("lunar_lander.yaml").read_text())
    config["/**/lunar_lander_train"]["ros__parameters"]["eval_episodes"] = 2
    config_path = tmp_path / "lunar_lander.yaml"
    config_path.write_text(yaml.safe_dump(config))
    run_dir = tmp_path / "lander"
    done = run_module(
        "spin_decoupler_ros.examples.lunar_lander.run",
        "--timesteps",
        "1024",  # one PPO rollout and one update
        "--run-dir",
        str(run_dir),
        "--config",
        str(config_path),
        timeout=280,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mean evaluation return" in done.stdout
    results = json.loads((run_dir / "results.json").read_text())
    assert results["eval_episodes"] == 2 and results["frames_per_step"] == 4
    assert -1000.0 < results["mean_return"] < 400.0  # a real LunarLander return, not a placeholder
    assert (run_dir / "model.zip").exists()
