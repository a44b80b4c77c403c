"""Resource stability: many steps through the full Panda pipeline, watching every process.

The MuJoCo mock (flat out, lockstep) and the Panda agent as processes, the RL side
(PandaReachEnv) in this one; random actions, resets included. RSS and open file
descriptors of each process are read after a warm-up (``--warmup`` steps: imports,
caches and DDS discovery settle) and at the end; growth is end / start - 1.

    ./ws bench soak [--steps 50000]

Writes bench/results/soak.json. Target: every growth under 10%.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, write_result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--warmup", type=int, default=1000)
    args = parser.parse_args()
    isolate_dds()
    import os

    import psutil
    import yaml

    from franka_agent.reach_task import PandaReachEnv
    from franka_agent.robots import start_mock_robots
    from spin_decoupler_ros.tools.paths import find_config
    from spin_decoupler_ros.tools.processes import ProcessGroup

    config = find_config("panda_reach.yaml", package="franka_agent")
    task = yaml.safe_load(config.read_text())["/**/panda_trainer"]["ros__parameters"]
    with ProcessGroup() as group:
        start_mock_robots(group, config, 1, sim_speed=0.0, log_dir=Path("log/bench/soak"))
        processes = {p.name: psutil.Process(p.pid) for p in group.processes}  # mock_hardware, panda_agent
        processes["rl_side"] = psutil.Process(os.getpid())

        def snapshot() -> dict[str, dict[str, int]]:
            return {name: {"rss": p.memory_info().rss, "fds": p.num_fds()} for name, p in processes.items()}

        env = PandaReachEnv(
            target_low=task["target_low"],
            target_high=task["target_high"],
            success_distance=task["success_distance"],
            max_episode_steps=task["episode_steps"],
            client_options={"connect_timeout": 60},
        )
        rng = np.random.default_rng(0)
        env.reset(seed=0)
        start = snapshot()
        started = time.monotonic()
        for step in range(1, args.steps + 1):
            _, _, terminated, truncated, _ = env.step(rng.uniform(-1.0, 1.0, 3))
            if terminated or truncated:
                env.reset()
            if step == args.warmup:
                start = snapshot()
                started = time.monotonic()
            if step % 5000 == 0:
                now = snapshot()
                print(
                    f"step {step}: "
                    + ", ".join(f"{k} {v['rss'] / 2**20:.0f} MiB {v['fds']} fds" for k, v in now.items()),
                    flush=True,
                )
        end = snapshot()
        elapsed = time.monotonic() - started
        env.close()
    result = {
        "steps": args.steps,
        "processes": {
            name: {
                "rss_growth": round(end[name]["rss"] / start[name]["rss"] - 1.0, 4),
                "fd_growth": round(end[name]["fds"] / start[name]["fds"] - 1.0, 4),
                "rss_mib_start": round(start[name]["rss"] / 2**20, 1),
                "rss_mib_end": round(end[name]["rss"] / 2**20, 1),
                "fds_start": start[name]["fds"],
                "fds_end": end[name]["fds"],
            }
            for name in processes
        },
        "setup": {
            "measured_from_step": args.warmup,
            "steps_per_second": round((args.steps - args.warmup) / elapsed, 1),
            "actions": "uniform random; resets included",
        },
        "target": "every growth < 0.10",
    }
    print(result["processes"], flush=True)
    write_result("soak", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
