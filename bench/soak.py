"""Resource stability of a long training run, with and without checkpoints.

The MuJoCo mock (flat out, lockstep) and the Panda agent as processes under the main
job's default timing model (``default_timing_model``: the recorded think times, replayed),
the learner (SAC on ReachEnv, the config's hyperparameters) in this one: twice, side by side
in one run, first without checkpoints, then writing one every ``--checkpoint-every``
steps (rl/checkpoint.py: the model, the replay buffer, the logs' positions). RSS and
open file descriptors of each process are read after a warm-up (``--warmup`` steps:
imports, caches, DDS discovery and the first gradient steps settle) and at the end;
growth is end / start - 1.

    ./ws bench soak [--steps 50000] [--checkpoint-every 1000]

Writes bench/results/soak.json. Targets: every growth under 10%, in both runs; the
step rate with checkpoints within 10% of the one without.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, reach_env, write_result


def soak(steps: int, warmup: int, checkpoint_every: int, log_dir: Path) -> dict[str, Any]:
    """One training run of ``steps`` steps; each process's growth and the step rate."""
    import psutil
    import yaml
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor

    from franka_agent.algorithms import make_model
    from franka_agent.robots import default_timing_model, start_mock_robots
    from spin_decoupler_ros.rl.checkpoint import CheckpointCallback
    from spin_decoupler_ros.rl.training import FreezeGarbageCollector, StepLogCallback
    from spin_decoupler_ros.tools.paths import find_config
    from spin_decoupler_ros.tools.processes import ProcessGroup

    config = find_config("panda_reach.yaml", package="franka_agent")
    task = yaml.safe_load(config.read_text())["/**/panda_trainer"]["ros__parameters"]
    with ProcessGroup() as group, tempfile.TemporaryDirectory() as scratch:
        (agent_namespace,) = start_mock_robots(
            group, config, 1, sim_speed=0.0, log_dir=log_dir, timing_model=default_timing_model(mock=True)
        )
        processes = {p.name: psutil.Process(p.pid) for p in group.processes}  # mock_hardware, panda_agent
        processes["rl_side"] = psutil.Process(os.getpid())

        def snapshot() -> dict[str, dict[str, int]]:
            return {name: {"rss": p.memory_info().rss, "fds": p.num_fds()} for name, p in processes.items()}

        class Measure(BaseCallback):
            """Snapshots at the warm-up's end and at the end; a line every 5,000 steps."""

            def __init__(self) -> None:
                super().__init__()
                self.start = self.end = snapshot()
                self.started = self.ended = time.monotonic()

            def _on_step(self) -> bool:
                if self.num_timesteps == warmup:
                    self.start, self.started = snapshot(), time.monotonic()
                if self.num_timesteps % 5000 == 0:
                    now = snapshot()
                    print(
                        f"step {self.num_timesteps}: "
                        + ", ".join(f"{k} {v['rss'] / 2**20:.0f} MiB {v['fds']} fds" for k, v in now.items()),
                        flush=True,
                    )
                return True

            def _on_training_end(self) -> None:
                self.end, self.ended = snapshot(), time.monotonic()

        env = reach_env(agent_namespace, task)
        hyper = dict(task["sac"])
        hyper["net_arch"] = [int(width) for width in hyper["net_arch"]]
        model = make_model("sac", Monitor(env), hyper, seed=0)
        run_dir = Path(scratch)
        log = StepLogCallback(run_dir / "steps.csv", extra_fields=("distance", "is_success"))
        measure = Measure()
        callbacks: list[BaseCallback] = [log, measure, FreezeGarbageCollector()]
        if checkpoint_every:
            callbacks.append(CheckpointCallback(run_dir, checkpoint_every, log))
        model.learn(total_timesteps=steps, callback=callbacks)
        env.close()
    start, end = measure.start, measure.end
    return {
        "processes": {
            name: {
                "rss_growth": round(end[name]["rss"] / start[name]["rss"] - 1.0, 4),
                "fd_growth": round(end[name]["fds"] / start[name]["fds"] - 1.0, 4),
                "rss_mib_start": round(start[name]["rss"] / 2**20, 1),
                "rss_mib_end": round(end[name]["rss"] / 2**20, 1),
                "fds_start": start[name]["fds"],
                "fds_end": end[name]["fds"],
            }
            for name in start
        },
        "steps_per_second": round((steps - warmup) / (measure.ended - measure.started), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--checkpoint-every", type=int, default=1000)
    args = parser.parse_args()
    if not 0 < args.warmup < args.steps:
        parser.error("--warmup must be between 0 and --steps")
    isolate_dds()
    log_dir = Path("log/bench/soak")
    without = soak(args.steps, args.warmup, 0, log_dir / "without_checkpoints")
    print("without checkpoints:", without, flush=True)
    with_checkpoints = soak(args.steps, args.warmup, args.checkpoint_every, log_dir / "with_checkpoints")
    print("with checkpoints:", with_checkpoints, flush=True)
    rate_ratio = with_checkpoints["steps_per_second"] / without["steps_per_second"]
    result = {
        "steps": args.steps,
        "processes": without["processes"],
        "setup": {
            "measured_from_step": args.warmup,
            "steps_per_second": without["steps_per_second"],
            "learner": "SAC, config/panda_reach.yaml's hyperparameters, learning from step 1000",
            "timing_model": "the main job's default: replay of the recorded think times",
        },
        "with_checkpoints": {
            "checkpoint_every": args.checkpoint_every,
            "processes": with_checkpoints["processes"],
            "steps_per_second": with_checkpoints["steps_per_second"],
            "step_rate_ratio": round(rate_ratio, 3),
        },
        "target": "every growth < 0.10 in both runs; step_rate_ratio >= 0.90",
    }
    write_result("soak", result)
    growths = [
        p[key] for run in (without, with_checkpoints) for p in run["processes"].values() for key in p if "growth" in key
    ]
    return 0 if max(growths) < 0.10 and rate_ratio >= 0.90 else 1


if __name__ == "__main__":
    sys.exit(main())
