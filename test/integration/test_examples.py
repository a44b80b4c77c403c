"""The examples' one-command runs, end to end (agent and RL node as separate processes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
    assert_recorded(run_dir, "/plant", "SAC", min_steps=400)


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
    assert_recorded(run_dir, "/lander", "PPO", min_steps=1024)


def assert_recorded(run_dir: Path, namespace: str, algorithm: str, min_steps: int) -> None:
    """An example's run is a recording too: run.mcap holds the agent's commands (each once,
    in order), one answer for each, its timing and its status; TensorBoard holds SB3's
    scalars and the timing ones."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from spin_decoupler_msgs.msg import StepCommand

    by_topic: dict[str, list[Any]] = {}
    with open(run_dir / "run.mcap", "rb") as file:
        reader = make_reader(file, decoder_factories=[DecoderFactory()])
        for _, channel, _, decoded in reader.iter_decoded_messages():
            by_topic.setdefault(channel.topic, []).append(decoded)
    topics = {f"{namespace}/{name}" for name in ("step_command", "step_result", "step_timing", "status")}
    assert set(by_topic) == topics, sorted(by_topic)
    steps = [command for command in by_topic[f"{namespace}/step_command"] if command.kind == StepCommand.STEP]
    episodes: dict[bytes, list[int]] = {}
    for command in steps:
        episodes.setdefault(bytes(command.episode_id.uuid), []).append(command.seq)
    for seqs in episodes.values():
        assert seqs == list(range(1, len(seqs) + 1)), seqs
    answers = [answer.seq for answer in by_topic[f"{namespace}/step_result"] if answer.seq > 0]
    assert answers == [command.seq for command in steps]
    assert len(steps) >= min_steps
    assert "tensorboard --logdir" in (run_dir / "README.md").read_text()
    (events,) = run_dir.glob(f"tensorboard/{algorithm}_1/events.out.tfevents.*")
    tags = EventAccumulator(str(events)).Reload().Tags()["scalars"]
    assert {"timing/lat_p50_ms", "timing/think_p99_ms", "timing/late_tick_percent"} <= set(tags), tags


@pytest.mark.parametrize(
    ("example", "parameter", "said"),
    [
        (
            "first_order_plant",
            "total_timesteps:=-5",
            "parameter 'total_timesteps' = -5 is outside the allowed range >= 1",
        ),
        ("lunar_lander", "learning_rate:=2.0", "parameter 'learning_rate' = 2 is outside the allowed range [1e-07, 1]"),
    ],
)
def test_an_examples_trainer_refuses_a_bad_parameter_in_one_line(
    ros_domain: dict[str, str], example: str, parameter: str, said: str
) -> None:
    """As the launch files start it: a user's mistake is one line naming the parameter,
    exit code 2, no traceback (what ``ros2 launch`` then reports: example_launch.py)."""
    done = run_module(f"spin_decoupler_ros.examples.{example}.train", "--ros-args", "-p", parameter, timeout=60)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
