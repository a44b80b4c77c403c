"""Checkpoints (rl/checkpoint.py): written whole or not at all, refused when damaged,
naming the file; generators and logs restored to where the checkpoint was."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import numpy as np
import pytest

from spin_decoupler_ros.rl.checkpoint import (
    CheckpointError,
    checkpoint_to_resume,
    read_latest,
    restore_rng_states,
    rng_states,
    truncate_log,
    write_checkpoint,
)
from spin_decoupler_ros.rl.training import StepLogCallback


def save_two_files(folder: Path) -> None:
    (folder / "model.zip").write_bytes(b"model" * 100)
    (folder / "replay_buffer.pkl").write_bytes(b"buffer" * 100)


def test_the_latest_checkpoint_reads_back_whole_and_older_ones_are_pruned(tmp_path: Path) -> None:
    for step in (1000, 2000, 3000):
        write_checkpoint(tmp_path, step, save_two_files, {"episodes": step // 50})
    latest = read_latest(tmp_path)
    assert latest.step == 3000 and latest.state["episodes"] == 60
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir() if p.is_dir()) == [
        "0000002000",
        "0000003000",
    ]


def test_a_checkpoint_killed_while_being_written_leaves_the_previous_one_named(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, 1000, save_two_files, {})

    def dies_midway(folder: Path) -> None:
        (folder / "model.zip").write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_checkpoint(tmp_path, 2000, dies_midway, {})
    assert read_latest(tmp_path).step == 1000


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda path: (path / "model.zip").write_bytes(b"other"), "model.zip is not the file that was saved"),
        (lambda path: (path / "replay_buffer.pkl").unlink(), "replay_buffer.pkl does not exist"),
        (lambda path: (path / "state.json").write_text("{"), "state.json cannot be read"),
        (lambda path: (path / "state.json").unlink(), "state.json does not exist"),
    ],
)
def test_a_damaged_checkpoint_is_refused_naming_the_file(tmp_path: Path, damage, named: str) -> None:  # type: ignore[no-untyped-def]
    path = write_checkpoint(tmp_path, 1000, save_two_files, {})
    damage(path)
    with pytest.raises(CheckpointError, match=named):
        read_latest(tmp_path)


def test_no_checkpoint_is_refused_naming_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="checkpoints/latest does not exist"):
        read_latest(tmp_path)


def test_the_generators_draw_on_from_where_the_checkpoint_was() -> None:
    import torch

    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    states = json.loads(json.dumps(rng_states()))  # as stored
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    random.seed(9)
    np.random.seed(9)
    torch.manual_seed(9)
    restore_rng_states(states)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def test_a_log_is_cut_back_to_the_checkpoint_and_a_short_one_refused(tmp_path: Path) -> None:
    log = tmp_path / "steps.csv"
    log.write_text("header\nrow 1\nrow 2\n")
    length = len("header\nrow 1\n")
    truncate_log(log, length)
    assert log.read_text() == "header\nrow 1\n"
    with pytest.raises(CheckpointError, match=r"steps\.csv has 13 bytes, less than the 99"):
        truncate_log(log, 99)


class Learner:
    """What a callback reads of an SB3 model: the step count (the rest unused here)."""

    def __init__(self) -> None:
        self.num_timesteps = 0
        self.logger = None

    def get_env(self) -> None:
        return None


def log_steps(log: StepLogCallback, learner: Learner, ends: set[int], until: int) -> None:
    """Steps up to ``until``; an episode ends at each step in ``ends``."""
    while learner.num_timesteps < until:
        learner.num_timesteps += 1
        log.locals = {
            "infos": [{"lat": 0.1, "is_success": True}],
            "rewards": [1.0],
            "dones": [learner.num_timesteps in ends],
        }
        log.on_step()


def test_a_resumed_step_log_has_each_step_once_and_begins_a_new_episode(tmp_path: Path) -> None:
    path = tmp_path / "steps.csv"
    learner = Learner()
    first = StepLogCallback(path)
    first.init_callback(learner)  # type: ignore[arg-type]
    first.on_training_start({}, {})
    log_steps(first, learner, ends={3}, until=5)
    state = json.loads(json.dumps(first.state()))  # the checkpoint, mid-episode, at step 5
    log_steps(first, learner, ends={3}, until=8)  # then killed: rows 6-8 are done again

    learner.num_timesteps = 5
    resumed = StepLogCallback(path, resume=state)
    resumed.init_callback(learner)  # type: ignore[arg-type]
    resumed.on_training_start({}, {})
    log_steps(resumed, learner, ends={7}, until=9)
    resumed.on_training_end()

    with open(path, newline="") as file:
        rows = list(csv.DictReader(file))
    assert [int(row["step"]) for row in rows] == list(range(1, 10))
    # Episode 0 ends at step 3; episode 1 (steps 4-5) was under way at the checkpoint and
    # stays cut short; episode 2 begins on resume and ends at step 7.
    assert [int(row["episode"]) for row in rows] == [0, 0, 0, 1, 1, 2, 2, 3, 3]
    assert [episode["step"] for episode in resumed.episodes] == [3, 7]
    assert len(resumed.lats) == 9


def test_a_finished_run_is_never_rewritten_and_an_extension_keeps_its_outputs(tmp_path: Path) -> None:
    from spin_decoupler_ros.rl.checkpoint import FINAL_OUTPUTS, finished_at, keep_final_outputs, refuse_to_rewrite

    assert finished_at(tmp_path) is None and refuse_to_rewrite(tmp_path, 500, 500) is None  # under way
    assert keep_final_outputs(tmp_path) is None
    (tmp_path / "results.json").write_text(json.dumps({"total_timesteps": 1000}))
    (tmp_path / "model.zip").write_text("the finished model")
    for total in (0, 500, 1000):
        refusal = refuse_to_rewrite(tmp_path, 1000, total)
        assert refusal is not None and "the run is finished (1000 steps;" in refusal and "--extend-to N" in refusal
    assert refuse_to_rewrite(tmp_path, 1000, 1001) is None  # an extension
    kept = keep_final_outputs(tmp_path)
    assert kept == tmp_path / "finished_at_1000" and "results.json" in FINAL_OUTPUTS
    assert (kept / "model.zip").read_text() == "the finished model" and not (tmp_path / "model.zip").exists()
    assert finished_at(tmp_path) is None  # the extension is under way
    (tmp_path / "results.json").write_text("{")
    with pytest.raises(CheckpointError, match=r"results\.json cannot be read"):
        finished_at(tmp_path)


def test_a_run_to_resume_is_refused_naming_the_parameter_and_what_is_wrong(tmp_path: Path) -> None:
    """No checkpoint, another algorithm's run, a log shorter than its checkpoint: each a
    ParameterError naming 'resume' and the cause."""
    from spin_decoupler_ros.core.errors import ParameterError

    with pytest.raises(ParameterError, match=r"parameter 'resume' = .*no checkpoint"):
        checkpoint_to_resume(str(tmp_path), "sac", 10)
    write_checkpoint(tmp_path, 1000, save_two_files, {"algorithm": "td3", "log": {"log_bytes": 10}})
    with pytest.raises(ParameterError, match=r"parameter 'resume' = .*the run trained td3, not sac"):
        checkpoint_to_resume(str(tmp_path), "sac", 2000)
    with pytest.raises(ParameterError, match=r"parameter 'resume' = .*steps\.csv"):
        checkpoint_to_resume(str(tmp_path), "td3", 2000)
    (tmp_path / "steps.csv").write_text("x" * 10)
    assert checkpoint_to_resume(str(tmp_path), "td3", 2000).step == 1000
