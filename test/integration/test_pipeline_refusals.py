"""Every user mistake the main job can meet is refused before anything starts: one line
naming the option or file, what is wrong and what to do; exit code 2; no traceback; no
run folder made and no file of an earlier run changed (franka_agent/pipeline_options.py,
``check_options``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spin_decoupler_ros.rl.checkpoint import write_checkpoint

PIPELINE = "franka_agent.pipeline"


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``root``: its size and modification time."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns) for path in sorted(root.rglob("*"))
    }


def make_run(run_dir: Path, *, steps: int, log_bytes: int, finished: bool) -> None:
    """A run folder as the main job leaves it: options, a step log, a checkpoint at
    ``steps`` whose state records ``log_bytes`` of the log, and results if ``finished``."""
    run_dir.mkdir(parents=True)
    (run_dir / "options.json").write_text(json.dumps({"total_timesteps": steps, "seed": None}))
    (run_dir / "steps.csv").write_text("step\n" + "1\n" * (log_bytes // 2))
    state = {"log": {"log_bytes": log_bytes, "episode": 0, "episodes": []}, "algorithm": "sac"}

    def save(folder: Path) -> None:
        (folder / "model.zip").write_bytes(b"model")

    write_checkpoint(run_dir, steps, save, state)
    if finished:
        (run_dir / "results.json").write_text(json.dumps({"total_timesteps": steps, "success_rate": 1.0}))
        (run_dir / "model.zip").write_bytes(b"final model")


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A runs root with a finished run, a run killed with its step log cut down since,
    and a plain file (a folder cannot be made under it)."""
    root = tmp_path / "runs"
    make_run(root / "finished", steps=100, log_bytes=200, finished=True)
    make_run(root / "cut", steps=100, log_bytes=200, finished=False)
    with open(root / "cut" / "steps.csv", "r+") as file:
        file.truncate(50)
    (root / "a_file").write_text("not a folder")
    (root / "no_ros_parameters.yaml").write_text("panda_trainer:\n  seed: 3\n")
    return root


CASES = [
    (("--total-timesteps", "-5"), "--total-timesteps -5: must be at least 1"),
    (("--total-timesteps", "0"), "--total-timesteps 0: must be at least 1"),
    (("--eval-episodes", "0"), "--eval-episodes 0: must be at least 1"),
    (("--num-agents", "0"), "--num-agents 0: must be from 1 to 64"),
    (("--seed", "-1"), "--seed -1: must be at least 0"),
    (("--checkpoint-every", "-1"), "--checkpoint-every -1: must be at least 0"),
    (("--sim-speed", "-2"), "--sim-speed -2: must be from 0 to"),
    (("--rl-timestep", "0"), "--rl-timestep 0: must be from 0.0001 to 60"),
    (("--control-rate", "0"), "--control-rate 0: must be from 1 to 5000"),
    (("--timing-model", "later"), "--timing-model: timing model 'later': unknown kind"),
    (("--rl-timestep", "0.005"), "--rl-timestep 0.005 s must exceed the control period 1/100 Hz = 0.01 s"),
    (("--control-rate", "5"), "--rl-timestep 0.1 s must exceed the control period 1/5 Hz = 0.2 s"),
    (("--config", "{runs}/no_ros_parameters.yaml"), "node 'panda_trainer' holds no 'ros__parameters'"),
    (("--config", "{runs}/missing.yaml"), "--config: params file '{runs}/missing.yaml' cannot be read"),
    (("--run-dir", "{runs}/a_file/run"), "--run-dir: '{runs}/a_file/run' cannot be written by this user"),
    (
        ("--run-dir", "{runs}/finished"),
        "already holds a run (steps.csv, results.json, model.zip, checkpoints), which is never",
    ),
    (("--resume", "{runs}/finished"), "--resume {runs}/finished: the run is finished (100 steps;"),
    (("--resume", "{runs}/finished", "--extend-to", "80"), "--extend-to 80: the run has trained 100 steps already"),
    (("--resume", "{runs}/finished", "--total-timesteps", "500"), "not --total-timesteps 500: leave it out; to"),
    (("--extend-to", "500"), "--extend-to goes with --resume of a finished run"),
    (("--resume", "{runs}/cut"), "steps.csv has 50 bytes, less than the 200 the checkpoint at step 100 recorded"),
    (("--resume", "{runs}/missing"), "--resume {runs}/missing: no checkpoint to resume from"),
    (("--evaluate", "{runs}/none.zip"), "--evaluate {runs}/none.zip: no such file"),
    (("--robot", "kr6"), "--robot: no robot profile 'kr6': the profiles here are panda, fr3, ur5e"),
    (("--robot", "{runs}/arm.yaml"), "--robot: robot profile file '{runs}/arm.yaml' does not exist"),
    (("--robot", "{runs}/no_ros_parameters.yaml"), "--robot: robot profile {runs}/no_ros_parameters.yaml: 'name' is"),
]


@pytest.mark.parametrize(("options", "said"), CASES, ids=[" ".join(options) for options, _ in CASES])
def test_a_mistake_is_refused_in_one_line_before_anything_is_made(
    runs: Path, options: tuple[str, ...], said: str
) -> None:
    before = tree(runs)
    result = subprocess.run(
        [sys.executable, "-m", PIPELINE, *(option.format(runs=runs) for option in options)],
        env={**os.environ, "SPIN_DECOUPLER_RUNS": str(runs), "SPIN_DECOUPLER_COMMAND": "./ws main"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("./ws main: ") and said.format(runs=runs) in lines[0], lines[0]
    assert result.stdout == ""
    assert tree(runs) == before  # nothing made, nothing changed


def test_a_runs_root_that_cannot_be_made_is_refused_before_anything_is_made(runs: Path) -> None:
    before = tree(runs)
    result = subprocess.run(
        [sys.executable, "-m", PIPELINE],
        env={**os.environ, "SPIN_DECOUPLER_RUNS": str(runs / "a_file" / "runs")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"'{runs}/a_file/runs/panda_reach' cannot be written by this user, so run folders cannot go" in line
    assert "$SPIN_DECOUPLER_RUNS" in line
    assert tree(runs) == before
