"""Learning in the arm's own minutes: the main job's learner before and after, trained at
real time and measured in the robot's seconds, per seed.

    ./ws bench robot_minutes [--seeds 0 1 2] [--robots panda] [--budget 6000]
                             [--configs before after] [--eval-episodes 20] [--keep DIR]

Each run is the main job at real time, as on the arm (``--sim-speed 1 --timing-model
wall``: the mock's clock runs at the wall's pace and the learner's think time costs arm
time), training until 95% of the last 20 episodes succeed (or ``--budget`` steps), then
evaluating its policy over ``--eval-episodes`` episodes at real time from home starts.
``before`` is the learner as it was (``BEFORE_TRAINER``, ``BEFORE_SAC``, ``BEFORE_AGENT``:
one gradient step per step, plain critics, no relabelling, learning rate 3e-3, resets
home, stopping as the window holds, a full action 3 cm), ``after`` the config's; for each
seed the two run back to back, in turn first (before, after; after, before; ...), so a
drift of the machine weighs on both alike.

The robot's time is the agent's clock (ATO, in ``steps.csv``): from the start of the
first action to the observation of the step at which 95% was reached, resets and the
learner's think time included. ``reset_seconds`` is the part between episodes: from an
episode's last observation to the start of the next one's first action.

Writes bench/results/robot_minutes.json: ``{"before": {...}, "after":
{"robot_seconds_to_95", "steps_to_95", "episodes_to_95", "reset_seconds",
"robot_seconds_trained", "eval_success_rate", "mock_limit_violations", "per_seed":
[...]}, "seeds"}``, medians over the seeds (``eval_success_rate``: the lowest seed's; violations: the sum); other
robots than the Panda under ``"robots"``, each the same (``--robots fr3 ur5e`` without the
Panda adds them to the Panda's figures already in the file).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, isolate_dds, write_result
from bench.main_job import CONFIG, TRAINER, main_job

RESULT = RESULTS / "robot_minutes.json"
WINDOW = 20
TARGET = 0.95
# The learner as it was: the trainer's, SAC's and the agent's settings that differ from the config's now.
BEFORE_TRAINER: dict[str, Any] = {"reset_from": "home", "updates_per_second": 0.0, "confirm_episodes": 0}
BEFORE_SAC: dict[str, Any] = {"learning_rate": 0.003, "critic_layer_norm": False, "relabel_goals": 0}
BEFORE_AGENT: dict[str, Any] = {"max_ee_step": 0.03}
AGENT = "/**/panda_agent"


def robot_time(steps_csv: Path) -> dict[str, Any]:
    """From a run's step log: the robot seconds, steps and episodes to ``TARGET`` of the
    last ``WINDOW`` episodes, the robot seconds spent between episodes until then, and
    the robot seconds of the whole run (to its stop: with ``confirm_episodes``, the
    deterministic episodes after the window held too)."""
    with open(steps_csv, newline="") as file:
        rows = list(csv.DictReader(file))
    started = float(rows[0]["ato"]) - float(rows[0]["duration"])
    trained = {"robot_seconds_trained": round(float(rows[-1]["ato"]) - started, 1)}
    outcomes: list[float] = []
    between = 0.0
    previous_end: float | None = None  # the last observation of the episode before
    for row in rows:
        ato, duration = float(row["ato"]), float(row["duration"])
        if previous_end is not None:
            between += ato - duration - previous_end
            previous_end = None
        if row["terminated"] == "True" or row["truncated"] == "True":
            outcomes.append(1.0 if row["is_success"] == "True" else 0.0)
            previous_end = ato
            if len(outcomes) >= WINDOW and np.mean(outcomes[-WINDOW:]) >= TARGET:
                return {
                    "robot_seconds_to_95": round(ato - started, 1),
                    "steps_to_95": int(row["step"]),
                    "episodes_to_95": len(outcomes),
                    "reset_seconds": round(between, 1),
                    **trained,
                }
    return {"robot_seconds_to_95": None, "steps_to_95": None, "episodes_to_95": None, "reset_seconds": None, **trained}


def config_for(name: str, robot: str, budget: int, out: Path) -> Path:
    """The main job's config with the trainer's budget, and for ``before`` its settings."""
    config = yaml.safe_load(CONFIG.read_text())
    trainer = config[TRAINER]["ros__parameters"]
    trainer.update(total_timesteps=budget, stop_at_success=TARGET, success_window=WINDOW)
    if name == "before":
        trainer.update(BEFORE_TRAINER)
        trainer["sac"].update(BEFORE_SAC)
        config[AGENT]["ros__parameters"].update(BEFORE_AGENT)
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def run(name: str, robot: str, seed: int, budget: int, eval_episodes: int, folder: Path) -> dict[str, Any]:
    run_dir = folder / f"{robot}_{name}_seed{seed}"
    config = config_for(name, robot, budget, folder / f"{robot}_{name}.yaml")
    print(f"{robot}, seed {seed}: '{name}' at real time", flush=True)
    figures = main_job(
        "--robot", robot, "--seed", str(seed), "--config", str(config), "--sim-speed", "1",
        "--timing-model", "wall", "--eval-episodes", str(eval_episodes), "--run-dir", str(run_dir),
    )  # fmt: skip
    measured = {
        "seed": seed,
        **robot_time(run_dir / "steps.csv"),
        "eval_success_rate": figures["success_rate"],
        "mock_limit_violations": figures["mock_limit_violations"],
        "trained_steps": figures["total_timesteps"],
        "train_seconds": figures["train_seconds"],
        "lat_ms": figures["lat_ms"],
        "mean_final_distance_m": round(figures["mean_final_distance_m"], 4),
        "eval_per_episode": figures.get("eval_per_episode"),  # (how each evaluation episode ended)
    }
    print(f"  { {key: value for key, value in measured.items() if key != 'eval_per_episode'} }", flush=True)
    return measured


def summary(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the seeds (None if a seed never reached the target), the lowest
    evaluation success, the violations summed."""

    def median(key: str) -> float | None:
        values = [run[key] for run in per_seed]
        return None if any(value is None for value in values) else round(float(np.median(values)), 1)

    return {
        "robot_seconds_to_95": median("robot_seconds_to_95"),
        "steps_to_95": median("steps_to_95"),
        "episodes_to_95": median("episodes_to_95"),
        "reset_seconds": median("reset_seconds"),
        "robot_seconds_trained": median("robot_seconds_trained"),
        "eval_success_rate": min(run["eval_success_rate"] for run in per_seed),
        "mock_limit_violations": sum(int(run["mock_limit_violations"] or 0) for run in per_seed),
        "per_seed": per_seed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--robots", nargs="+", default=["panda"])
    parser.add_argument("--configs", nargs="+", default=["before", "after"], choices=("before", "after"))
    parser.add_argument("--budget", type=int, default=6000, help="steps at most per run")
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="keep each run folder (model, steps, evaluation) under this one")
    args = parser.parse_args()
    isolate_dds()
    measured: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_robot_minutes_") as scratch:
        folder = Path(scratch) if args.keep is None else args.keep.resolve()
        folder.mkdir(parents=True, exist_ok=True)
        for robot in args.robots:
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in args.configs}
            for index, seed in enumerate(args.seeds):
                order = args.configs if index % 2 == 0 else args.configs[::-1]
                for name in order:
                    runs[name].append(run(name, robot, seed, args.budget, args.eval_episodes, folder))
            measured[robot] = runs
    settings = {"seeds": args.seeds, "budget_steps": args.budget, "eval_episodes": args.eval_episodes}
    others = {
        robot: {**{name: summary(runs) for name, runs in measured[robot].items()}, **settings}
        for robot in measured
        if robot != "panda"
    }
    if "panda" in measured:
        result: dict[str, Any] = {name: summary(runs) for name, runs in measured["panda"].items()}
        result.update(
            settings,
            before_settings={**BEFORE_TRAINER, "sac": BEFORE_SAC, "agent": BEFORE_AGENT},
            target="after.robot_seconds_to_95 <= 180 (median seed), eval success >= 95% and 0 violations on every seed",
        )
    else:  # other profiles measured on their own join the Panda's figures already written
        result = json.loads(RESULT.read_text()) if RESULT.exists() else {}
        others = {**result.get("robots", {}), **others}
    if others:
        result["robots"] = others
    write_result("robot_minutes", result)
    arms = ([result] if "panda" in measured else []) + [others[robot] for robot in measured if robot != "panda"]
    return 0 if all(met(arm.get("after")) for arm in arms) else 1


def met(after: dict[str, Any] | None) -> bool:
    """The issue's target on one arm's ``after`` figures."""
    return (
        after is not None
        and after["robot_seconds_to_95"] is not None
        and after["robot_seconds_to_95"] <= 180
        and after["eval_success_rate"] >= 0.95
        and after["mock_limit_violations"] == 0
    )


if __name__ == "__main__":
    sys.exit(main())
