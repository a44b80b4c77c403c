"""The main job's default against the default it replaced, side by side, and both policies
evaluated at real time: does the new default train faster and transfer as well?

    ./ws bench main_job [--total-timesteps 10000] [--record-steps 2000] [--rounds 2]
                        [--recording think_times.csv] [--update-default]

1. record: the main job at real time (``--sim-speed 1``, ``wall``) for ``--record-steps``
   steps; the think times of its steps after SAC's ``learning_starts`` are what a real arm
   would see from this learner on this host (the agent's clock runs at the wall's pace);
2. before: the main job's earlier default: flat out in lockstep under ``wall``
   (the think time simulated at whatever speed the CPU allows), with the SAC settings it had
   then (``BEFORE_SAC``) and its gradient steps between observation and action
   (``BEFORE_TRAINER``), written into a copy of the config;
3. after: today's default: the config's settings (SAC's, gradient steps while the agent
   acts), under ``replay:`` of the recording, the mock and the agent in one process
   (``sim_robot.py``, the default under any timing model but ``wall``);
   the two train ``--rounds`` times each, in the order before, after, after, before, ...:
   the machine's speed drifts by a third within minutes here, and this order cancels a
   steady drift between them. (Taking turns with SIGSTOP cannot stand in: the agent and
   the mock take a stopped process for a stall and brake the arm.) Figures per run, and
   their means;
4. the first run of each policy evaluated at real time under ``wall`` (``--evaluate``), as
   on the arm.

``--seed N`` (N > 0) writes bench/results/main_job_seedN.json instead and leaves
time_aware.json alone.

Steps to 95%: the first step at which 95% of the last 20 training episodes succeeded
(from ``steps.csv``); its wall time counts from the first step. Writes
bench/results/main_job.json and the Panda part of bench/results/time_aware.json.
``--update-default`` also writes the recording to config/think_times_panda_sac.csv, the
main job's default model.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, write_result
from spin_decoupler_ros.core.think_time import think_times_from_rows

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "src" / "franka_agent" / "config" / "think_times_panda_sac.csv"
WINDOW = 20
TARGET = 0.95
RECORDED_COLUMNS = ("step", "agent", "episode", "lat", "duration")
CONFIG = ROOT / "src" / "franka_agent" / "config" / "panda_reach.yaml"
TRAINER = "/**/panda_trainer"
# The main job's earlier default: SAC's settings where they differ from the config's now,
# and its gradient steps between observation and action.
BEFORE_SAC = {"learning_rate": 0.001, "learning_starts": 1000, "ent_coef": "auto"}
BEFORE_TRAINER = {"train_while_acting": False}


def main_job(*options: str) -> dict[str, Any]:
    """``./ws main`` with ``options``; its results.json, with the run folder and wall time."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "franka_agent.pipeline", *options], env=dict(os.environ), check=True)
    run_dir = Path(options[options.index("--run-dir") + 1])
    figures: dict[str, Any] = json.loads((run_dir / "results.json").read_text())
    figures["job_wall_s"] = round(time.monotonic() - started, 1)
    return figures


def steps_to_target(steps_csv: Path) -> dict[str, Any]:
    """The first step at which ``TARGET`` of the last ``WINDOW`` training episodes
    succeeded, and the wall time from the first step to it."""
    with open(steps_csv, newline="") as file:
        rows = list(csv.DictReader(file))
    first_wall = float(rows[0]["wall_time"])
    outcomes: list[float] = []
    for row in rows:
        if row["terminated"] == "True" or row["truncated"] == "True":
            outcomes.append(1.0 if row["is_success"] == "True" else 0.0)
            if len(outcomes) >= WINDOW and np.mean(outcomes[-WINDOW:]) >= TARGET:
                return {
                    "steps_to_95": int(row["step"]),
                    "wall_s_to_95": round(float(row["wall_time"]) - first_wall, 1),
                    "episodes_to_95": len(outcomes),
                }
    return {"steps_to_95": None, "wall_s_to_95": None, "episodes_to_95": None}


def abba(names: list[str], rounds: int) -> list[str]:
    """``names`` ``rounds`` times, each round in the reverse order of the one before
    (A B, B A, A B, ...): a steady drift of the machine's speed weighs on both alike."""
    return [name for index in range(rounds) for name in (names if index % 2 == 0 else names[::-1])]


def means(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The mean over ``runs`` of the figures each gives as a number (None if any lacks it)."""
    keys = ("steps_to_95", "wall_s_to_95", "episodes_to_95", "train_seconds", "train_steps_per_second")
    return {
        key: round(float(np.mean([run[key] for run in runs])), 1) if all(run[key] is not None for run in runs) else None
        for key in keys
    }


def think_time_summary(steps_csv: Path) -> dict[str, float]:
    with open(steps_csv, newline="") as file:
        times = np.array(think_times_from_rows(csv.DictReader(file)))
    return {
        "median_ms": round(float(np.median(times)) * 1e3, 2),
        "p99_ms": round(float(np.percentile(times, 99)) * 1e3, 2),
        "count": int(times.size),
    }


def record(run_dir: Path, learning_starts: int, out: Path) -> None:
    """The real-time run's steps after ``learning_starts``, the columns a replay reads."""
    with open(run_dir / "steps.csv", newline="") as source, open(out, "w", newline="") as target:
        writer = csv.DictWriter(target, fieldnames=RECORDED_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(row for row in csv.DictReader(source) if int(row["step"]) > learning_starts)


def sac_settings(config: Path) -> dict[str, Any]:
    """The trainer's ``sac`` section of a parameters file."""
    settings: dict[str, Any] = trainer_settings(config)["sac"]
    return settings


def trainer_settings(config: Path) -> dict[str, Any]:
    """The trainer's parameters in a parameters file."""
    settings: dict[str, Any] = yaml.safe_load(config.read_text())[TRAINER]["ros__parameters"]
    return settings


def config_with(sac: dict[str, Any], trainer: dict[str, Any], out: Path) -> Path:
    """A copy of the main job's config with ``sac`` in its trainer's ``sac`` section and
    ``trainer`` in its trainer's parameters."""
    config = yaml.safe_load(CONFIG.read_text())
    config[TRAINER]["ros__parameters"]["sac"].update(sac)
    config[TRAINER]["ros__parameters"].update(trainer)
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total-timesteps", type=int, default=10_000)
    parser.add_argument("--record-steps", type=int, default=2_000)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--update-default", action="store_true", help=f"write the recording to {RECORDING}")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each, in the order before, after, after, ...")
    parser.add_argument(
        "--recording", type=Path, help="think times to replay (a recording's file) instead of recording them first"
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: each job needs a run at least")
    isolate_dds()
    common = ["--seed", str(args.seed), "--eval-episodes", str(args.eval_episodes)]
    with tempfile.TemporaryDirectory() as scratch:
        runs = Path(scratch)
        recording = runs / "think_times.csv"
        if args.recording is not None:
            recording.write_text(args.recording.read_text())
        else:
            print("recording the think times of a real-time run", flush=True)
            main_job(
                *common, "--sim-speed", "1", "--timing-model", "wall", "--total-timesteps", str(args.record_steps),
                "--eval-episodes", "1", "--run-dir", str(runs / "record"),
            )  # fmt: skip
            record(runs / "record", int(sac_settings(CONFIG)["learning_starts"]), recording)
        recorded = think_time_summary(recording)
        print(f"recorded think times: {recorded}", flush=True)
        before_config = config_with(BEFORE_SAC, BEFORE_TRAINER, runs / "before.yaml")
        setups = {"before": ("wall", before_config), "after": (f"replay:{recording}", CONFIG)}
        runs_of: dict[str, list[dict[str, Any]]] = {name: [] for name in setups}
        for name in abba(list(setups), args.rounds):
            model, config = setups[name]
            run_dir = runs / f"{name}{len(runs_of[name])}"
            print(f"training '{name}' under {model} ({run_dir.name})", flush=True)
            figures = main_job(
                *common, "--config", str(config), "--timing-model", model,
                "--total-timesteps", str(args.total_timesteps), "--run-dir", str(run_dir),
            )  # fmt: skip
            runs_of[name].append(
                {
                    **steps_to_target(run_dir / "steps.csv"),
                    "train_seconds": figures["train_seconds"],
                    "train_steps_per_second": figures["train_steps_per_second"],
                    "success_rate_own_model": figures["success_rate"],
                    "lat_ms": figures["lat_ms"],
                    "think_time": think_time_summary(run_dir / "steps.csv"),
                    "mock_limit_violations": figures["mock_limit_violations"],
                }
            )
        trained: dict[str, dict[str, Any]] = {}
        for name, (model, config) in setups.items():
            trained[name] = {
                "timing_model": "wall (flat out, lockstep)" if model == "wall" else "replay of the real-time run",
                # The main job's default layout for the model (pipeline.py --one-process auto).
                "mock_and_agent": "two processes" if model == "wall" else "one process (sim_robot.py)",
                "sac": sac_settings(config),
                "train_while_acting": trainer_settings(config).get("train_while_acting", True),
                **means(runs_of[name]),
                "runs": runs_of[name],
            }
        for name in trained:
            print(f"evaluating '{name}' at real time under wall", flush=True)
            figures = main_job(
                *common, "--sim-speed", "1", "--timing-model", "wall", "--evaluate",
                str(runs / f"{name}0" / "model.zip"), "--run-dir", str(runs / f"{name}_eval"),
            )  # fmt: skip
            trained[name]["real_time_eval"] = {
                "success_rate": figures["success_rate"],
                "mean_final_distance_m": round(figures["mean_final_distance_m"], 4),
                "mock_limit_violations": figures["mock_limit_violations"],
            }
        if args.update_default:
            RECORDING.write_text(recording.read_text())
    before, after = trained["before"], trained["after"]
    ratio = (
        round(after["wall_s_to_95"] / before["wall_s_to_95"], 3)
        if before["wall_s_to_95"] and after["wall_s_to_95"]
        else None
    )
    result = {
        "total_timesteps": args.total_timesteps,
        "seed": args.seed,
        "recorded_think_time": {
            **recorded,
            **({"recording": args.recording.name} if args.recording else {"record_steps": args.record_steps}),
        },
        "rounds": args.rounds,
        "order": abba(["before", "after"], args.rounds),
        "before": before,
        "after": after,
        "wall_s_to_95_ratio": ratio,
        "target": "after.wall_s_to_95 <= 0.5 x before.wall_s_to_95",
    }
    write_result(f"main_job_seed{args.seed}" if args.seed else "main_job", result)
    if not args.seed:  # another seed's run leaves seed 0's Panda figures in time_aware.json
        record_panda_figures(before, after, args)
    return 0 if ratio is not None and ratio <= 0.5 else 1


def record_panda_figures(before: dict[str, Any], after: dict[str, Any], args: argparse.Namespace) -> None:
    """The Panda part of bench/results/time_aware.json: both policies at real time."""
    panda = {
        "replay_then_wall": after["real_time_eval"],
        "flat_out_then_wall": before["real_time_eval"],
        "eval_episodes": args.eval_episodes,
        "seed": args.seed,
    }
    time_aware = ROOT / "bench" / "results" / "time_aware.json"
    merged = json.loads(time_aware.read_text()) if time_aware.exists() else {}
    merged["panda"] = panda
    write_result("time_aware", merged, quiet=True)


if __name__ == "__main__":
    sys.exit(main())
