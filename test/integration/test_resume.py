"""A training run killed at a random step (SIGKILL to the trainer: no clean stop) goes
on with ``./ws main --resume``: every step logged once, at most ``checkpoint_every``
steps done again; a damaged checkpoint is refused naming the file, touching nothing."""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import run_module

from spin_decoupler_ros.rl.training import logged_steps
from spin_decoupler_ros.tools.processes import find_process

TOTAL = 600
EVERY = 100


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_run_killed_at_a_random_step_resumes_with_each_step_logged_once(
    ros_domain: dict[str, str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    kill_after = random.Random().randint(150, TOTAL - 150)
    options = ["--total-timesteps", str(TOTAL), "--eval-episodes", "1", "--checkpoint-every", str(EVERY)]
    options += ["--real-time-eval", "no"]
    first = subprocess.Popen(
        [sys.executable, "-m", "franka_agent.pipeline", *options, "--run-dir", str(run_dir)],
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 300
    killed_at = 0
    while time.monotonic() < deadline:
        steps_file = run_dir / "steps.csv"
        if steps_file.exists() and len(logged_steps(run_dir / "steps.csv")) >= kill_after:
            pid = find_process("franka_agent.train", str(run_dir))
            assert pid is not None, "no trainer process found"
            os.kill(pid, signal.SIGKILL)
            killed_at = len(logged_steps(run_dir / "steps.csv"))
            break
        time.sleep(0.05)
    assert killed_at, f"the run never reached step {kill_after}"
    output, _ = first.communicate(timeout=120)
    assert first.returncode != 0, output  # the pipeline saw its trainer die and stopped the rest
    checkpoint = int((run_dir / "checkpoints" / "latest").read_text())
    assert killed_at - checkpoint <= EVERY + 1, (killed_at, checkpoint)  # what will be done again

    done = run_module("franka_agent.pipeline", *options, "--resume", str(run_dir), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    steps = logged_steps(run_dir / "steps.csv")
    assert steps == list(range(1, TOTAL + 1)), f"killed after {killed_at}, checkpoint {checkpoint}"
    assert (run_dir / "model.zip").exists() and (run_dir / "results.json").exists()
    with open(run_dir / "episodes.csv", newline="") as file:
        ends = [int(float(row["step"])) for row in csv.DictReader(file)]
    assert ends and ends == sorted(set(ends)), ends  # the learning curve: each episode once, in order
    assert (run_dir / "sim_robot.log").read_text().count("agent ready") == 2  # both runs' logs kept
    # The replay buffer learned from each step once: the checkpoint's, then the resumed run's.
    from stable_baselines3.common.save_util import load_from_pkl

    buffer = load_from_pkl(run_dir / "checkpoints" / f"{TOTAL:010d}" / "replay_buffer.pkl")
    relabelled = getattr(buffer, "relabelled_rows", 0)  # (goal relabelling adds its own rows)
    assert (getattr(buffer, "transitions", TOTAL), buffer.pos, buffer.full) == (TOTAL, TOTAL + relabelled, False)
    # TensorBoard shows each step once: the killed run's steps after the checkpoint are purged.
    assert tensorboard_steps(run_dir) == sorted(set(tensorboard_steps(run_dir)))

    # Finished, the run is never rewritten: a resume says so and changes nothing; an
    # extension trains on and keeps the finished run's outputs beside the new ones.
    finished = {path: path.stat().st_mtime_ns for path in run_dir.rglob("*")}
    again = run_module("franka_agent.pipeline", "--resume", str(run_dir), timeout=60)
    assert again.returncode == 2 and f"the run is finished ({TOTAL} steps;" in again.stderr, again.stderr
    assert {path: path.stat().st_mtime_ns for path in run_dir.rglob("*")} == finished
    longer = TOTAL + EVERY
    extended = run_module("franka_agent.pipeline", "--resume", str(run_dir), "--extend-to", str(longer), timeout=600)
    assert extended.returncode == 0, extended.stdout + extended.stderr
    assert logged_steps(run_dir / "steps.csv") == list(range(1, longer + 1))
    kept = run_dir / f"finished_at_{TOTAL}"
    assert json.loads((kept / "results.json").read_text())["total_timesteps"] == TOTAL
    assert (kept / "model.zip").stat().st_mtime_ns == finished[run_dir / "model.zip"]
    assert json.loads((run_dir / "results.json").read_text())["total_timesteps"] == longer
    assert tensorboard_steps(run_dir) == sorted(set(tensorboard_steps(run_dir)))


def tensorboard_steps(run_dir: Path) -> list[int]:
    """The steps SB3 logged its episode reward at, in the run's one TensorBoard series."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (series,) = (run_dir / "tensorboard").iterdir()
    return [event.step for event in EventAccumulator(str(series)).Reload().Scalars("rollout/ep_rew_mean")]


@pytest.mark.parametrize("damage", ["model", "pointer"])
def test_a_damaged_checkpoint_is_refused_naming_the_file_and_nothing_is_overwritten(
    ros_domain: dict[str, str], tmp_path: Path, damage: str
) -> None:
    from spin_decoupler_ros.rl.checkpoint import write_checkpoint

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "steps.csv").write_text("step\n1\n")
    (run_dir / "options.json").write_text('{"total_timesteps": 10}')

    def save(folder: Path) -> None:
        (folder / "model.zip").write_bytes(b"a model")

    folder = write_checkpoint(run_dir, 1, save, {"algorithm": "sac", "log": {"log_bytes": 7}})
    if damage == "model":
        (folder / "model.zip").write_bytes(b"another")
        named = "model.zip is not the file that was saved"
    else:
        (run_dir / "checkpoints" / "latest").unlink()
        named = "checkpoints/latest"
    before = {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()}
    done = run_module("franka_agent.pipeline", "--total-timesteps", "10", "--resume", str(run_dir), timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert named in done.stdout + done.stderr
    assert {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file() and path in before} == before
