"""Run folders: every run gets its own, and a folder holding a run is never written again."""

from __future__ import annotations

from pathlib import Path

import pytest

from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.tools.paths import RUNS_ROOT_VARIABLE, claim_run_dir, new_run_dir, runs_root

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core


def test_runs_started_in_the_same_second_get_their_own_folders(tmp_path: Path) -> None:
    first = new_run_dir("panda_reach", tmp_path, stamp="20261201-120000")
    second = new_run_dir("panda_reach", tmp_path, stamp="20261201-120000")
    assert first == tmp_path / "panda_reach" / "20261201-120000"
    assert second == tmp_path / "panda_reach" / "20261201-120000-2"
    assert first.is_dir() and second.is_dir()


def test_an_empty_run_dir_is_a_fresh_dated_folder_under_the_configured_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RUNS_ROOT_VARIABLE, str(tmp_path / "all_runs"))
    assert runs_root() == tmp_path / "all_runs"
    made = {claim_run_dir("", "lunar_lander") for _ in range(3)}
    assert len(made) == 3
    assert all(path.parent == tmp_path / "all_runs" / "lunar_lander" and path.is_dir() for path in made)


@pytest.mark.parametrize("output", ["steps.csv", "results.json", "model.zip", "checkpoints"])
def test_a_folder_holding_a_run_is_refused_and_left_as_it_was(tmp_path: Path, output: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / output).write_text("the earlier run")
    with pytest.raises(
        ParameterError, match=rf"'{run}' already holds a run \({output}\).*--resume {run}; launch: resume:={run}"
    ):
        claim_run_dir(str(run), "panda_reach")
    assert (run / output).read_text() == "the earlier run"


def test_a_named_folder_holding_no_run_is_taken(tmp_path: Path) -> None:
    run = tmp_path / "named"
    assert claim_run_dir(str(run), "panda_reach") == run and run.is_dir()
    (run / "agent.log").write_text("a pipeline's logs come first")
    assert claim_run_dir(str(run), "panda_reach") == run
