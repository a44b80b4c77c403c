"""A main job killed at a random step and resumed learns as well as one that was not.

Runs ``franka_agent.pipeline`` (the main job: mock, agent, trainer as processes), kills
the trainer with SIGKILL at a random step between 30% and 70% of the run (no clean
stop), resumes it with ``--resume``, and records the resumed run's evaluation beside
what the same job measures uninterrupted (``--reference``, the main job's spread).

    ./ws bench resume [--total-timesteps 20000] [--reference 0.90,0.95]

Writes bench/results/resume.json. Target: the success rate within the reference range
(less one evaluation episode: 20 episodes tell 5% apart), every step logged once, at
most ``checkpoint_every`` steps done again.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, write_result
from spin_decoupler_ros.rl.training import logged_steps
from spin_decoupler_ros.tools.processes import find_process


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total-timesteps", type=int, default=20_000)
    parser.add_argument("--checkpoint-every", type=int, default=1000)
    parser.add_argument("--reference", default="0.90,0.95", help="the uninterrupted main job's success rates")
    args = parser.parse_args()
    isolate_dds()
    low, high = (float(x) for x in args.reference.split(","))
    kill_at = random.Random().randint(int(0.3 * args.total_timesteps), int(0.7 * args.total_timesteps))
    options = ["--total-timesteps", str(args.total_timesteps), "--checkpoint-every", str(args.checkpoint_every)]
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = Path(scratch) / "run"
        started = time.monotonic()
        first = subprocess.Popen(
            [sys.executable, "-m", "franka_agent.pipeline", *options, "--run-dir", str(run_dir)],
            env=dict(os.environ),
        )
        while first.poll() is None and len(logged_steps(run_dir / "steps.csv")) < kill_at:
            time.sleep(0.5)
        pid = find_process("franka_agent.train", str(run_dir))
        if pid is None:
            raise SystemExit(f"no trainer to kill at step {kill_at} (the run ended with {first.poll()})")
        os.kill(pid, signal.SIGKILL)
        killed_after = len(logged_steps(run_dir / "steps.csv"))
        first.wait(timeout=120)
        checkpoint = int((run_dir / "checkpoints" / "latest").read_text())
        resumed = subprocess.run(
            [sys.executable, "-m", "franka_agent.pipeline", *options, "--resume", str(run_dir)],
            env=dict(os.environ),
            check=False,
        )
        seconds = time.monotonic() - started
        if resumed.returncode != 0:
            raise SystemExit(f"the resumed run failed ({resumed.returncode})")
        figures = json.loads((run_dir / "results.json").read_text())
        steps = logged_steps(run_dir / "steps.csv")
    success = float(figures["success_rate"])
    slack = 1.0 / float(figures["eval_episodes"])
    result = {
        "total_timesteps": args.total_timesteps,
        "checkpoint_every": args.checkpoint_every,
        "killed_after_logged_steps": killed_after,
        "resumed_from_checkpoint": checkpoint,
        "steps_done_again": killed_after - checkpoint,
        "each_step_logged_once": steps == list(range(1, args.total_timesteps + 1)),
        "success_rate": success,
        "mean_final_distance_m": figures.get("mean_final_distance_m"),
        "mock_limit_violations": figures.get("mock_limit_violations"),
        "reference_success_rate": [low, high],
        "within_reference": success >= low - slack,  # (better than the reference counts too)
        "wall_seconds": round(seconds, 1),
        "target": "success within the reference (less one evaluation episode), each step logged once, "
        "steps_done_again <= checkpoint_every",
    }
    print(json.dumps(result, indent=1), flush=True)
    write_result("resume", result)
    ok = result["within_reference"] and result["each_step_logged_once"]
    return 0 if ok and result["steps_done_again"] <= args.checkpoint_every + 1 else 1


if __name__ == "__main__":
    sys.exit(main())
