"""Every robot profile trained and measured the same way: does an arm need a profile and
nothing else?

    ./ws bench robots [--robots panda fr3 ur5e] [--total-timesteps 10000] [--seed 0]

For each profile: the main job (``./ws main --robot <name>``, its defaults: flat out in
lockstep under replay of the recorded think times), then its policy evaluated at real time
(``--evaluate``, ``--sim-speed 1``, ``wall``), as on the arm, over 20 episodes; the mock
counts limit violations against that arm's own limits in both. Steps to 95%: the first
step at which 95% of the last 20 training episodes succeeded (``steps.csv``). Writes
bench/results/robots.json: ``{"<profile>": {"success_rate", "steps_to_95",
"mean_final_distance_m", "mock_limit_violations", "seed", ...}}``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, write_result
from bench.main_job import main_job, steps_to_target
from franka_agent.core.profile import BUILT_IN_PROFILES


def measure(robot: str, total_timesteps: int, seed: int, runs: Path) -> dict[str, Any]:
    common = ["--robot", robot, "--seed", str(seed)]
    print(f"training the {robot}", flush=True)
    trained = main_job(*common, "--total-timesteps", str(total_timesteps), "--run-dir", str(runs / f"{robot}_train"))
    print(f"evaluating the {robot} at real time under wall", flush=True)
    evaluated = main_job(
        *common, "--sim-speed", "1", "--timing-model", "wall", "--eval-episodes", "20",
        "--evaluate", str(runs / f"{robot}_train" / "model.zip"), "--run-dir", str(runs / f"{robot}_eval"),
    )  # fmt: skip
    to_95 = steps_to_target(runs / f"{robot}_train" / "steps.csv")
    return {
        "success_rate": evaluated["success_rate"],
        "steps_to_95": to_95["steps_to_95"],
        "mean_final_distance_m": round(evaluated["mean_final_distance_m"], 4),
        "mock_limit_violations": trained["mock_limit_violations"] + evaluated["mock_limit_violations"],
        "seed": seed,
        "episodes_to_95": to_95["episodes_to_95"],
        "total_timesteps": total_timesteps,
        "train_seconds": trained["train_seconds"],
        "training_success_rate": trained["success_rate"],
        "evaluation": "20 episodes at real time (--sim-speed 1, wall)",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", nargs="+", default=list(BUILT_IN_PROFILES), choices=BUILT_IN_PROFILES)
    parser.add_argument("--total-timesteps", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    isolate_dds()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench_robots_") as folder:
        for robot in args.robots:
            results[robot] = measure(robot, args.total_timesteps, args.seed, Path(folder))
            print(f"{robot}: {results[robot]}", flush=True)
    write_result("robots", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
