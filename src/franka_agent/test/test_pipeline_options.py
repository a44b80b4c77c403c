"""The main job's options (franka_agent.pipeline_options): a resumed run takes the
options it was started with, and another value is refused by name; a policy trained
faster than real time is evaluated again at real time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from franka_agent.pipeline_options import OPTIONS_FILE, build_parser, options_of_the_run


def test_a_resume_takes_the_runs_options_and_refuses_another_value_naming_it(tmp_path: Path) -> None:
    parser = build_parser()
    (tmp_path / OPTIONS_FILE).write_text(json.dumps({"total_timesteps": 600, "timing_model": "none", "seed": 3}))
    args = parser.parse_args(["--resume", str(tmp_path)])
    options_of_the_run(args, parser, tmp_path)
    assert (args.total_timesteps, args.timing_model, args.seed) == (600, "none", 3)

    again = parser.parse_args(["--resume", str(tmp_path), "--total-timesteps", "600"])
    options_of_the_run(again, parser, tmp_path)  # the same value is fine
    other = parser.parse_args(["--resume", str(tmp_path), "--timing-model", "wall:0"])
    with pytest.raises(ValueError, match=r"started with --timing-model none, not --timing-model wall:0: leave it out$"):
        options_of_the_run(other, parser, tmp_path)
    # A run started on the config's value, and the option that extends a run, are named so.
    (tmp_path / OPTIONS_FILE).write_text(json.dumps({"total_timesteps": 600, "seed": None}))
    seeded = parser.parse_args(["--resume", str(tmp_path), "--seed", "0"])
    with pytest.raises(ValueError, match=r"started with the config's seed \(no --seed\), not --seed 0"):
        options_of_the_run(seeded, parser, tmp_path)
    longer = parser.parse_args(["--resume", str(tmp_path), "--total-timesteps", "900"])
    with pytest.raises(ValueError, match="leave it out; to train a finished run further: --extend-to STEPS"):
        options_of_the_run(longer, parser, tmp_path)
    with pytest.raises(ValueError, match=f"{OPTIONS_FILE} does not exist"):
        options_of_the_run(args, parser, tmp_path / "elsewhere")


@pytest.mark.parametrize(
    ("options", "at_real_time"),
    [
        ([], True),  # flat out under the default replay: evaluated again at real time
        (["--sim-speed", "1", "--timing-model", "wall"], False),  # trained at real time already
        (["--sim-speed", "1", "--timing-model", "none"], True),
        (["--real-time-eval", "no"], False),
        (["--sim-speed", "1", "--timing-model", "wall", "--real-time-eval", "yes"], True),
        (["--evaluate", "model.zip", "--real-time-eval", "yes"], False),  # an evaluation is the job itself
    ],
)
def test_a_policy_trained_faster_than_real_time_is_evaluated_at_real_time(
    options: list[str], at_real_time: bool
) -> None:
    from franka_agent.pipeline import evaluates_at_real_time

    args = build_parser().parse_args(options)
    args.timing_model = args.timing_model or "replay:think_times.csv"  # (main() sets the default)
    assert evaluates_at_real_time(args) is at_real_time
