"""Aggregate env steps per second with N = 1, 2, 4, 8 mock Pandas behind one VecEnv.

For each N, in one run: N (MuJoCo mock, Panda agent) process pairs, each robot in its
own namespace (``franka_agent.robots``), and a ``DecoupledVecEnv`` of ``ReachEnv``
here stepping all N at once with random actions (auto-resets included, no learner:
the figure is the pipeline's own rate). Two settings:

(a) ``realtime``: mocks free-running at 1x and agents on wall time, as real robots
    run; each step lasts the RL timestep (0.1 s) of real time, so the agents wait
    rather than compute and N should scale almost linearly until the CPU runs out;
(b) ``max_speed``: mocks flat out in lockstep with their agents; each pair is
    CPU-bound, so 2 cores cap the total.

    ./ws bench scaling [--seconds 30] [--counts 1 2 4 8]

Writes bench/results/scaling.json. Target: realtime N=4 >= 3.5x N=1.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, write_result

# mock speed factor, mock lockstep, agents on simulated time
SETTINGS = {"realtime": (1.0, False, False), "max_speed": (0.0, True, True)}


def measure(
    count: int, setting: tuple[float, bool, bool], seconds: float, config: Path, task: dict[str, Any]
) -> dict[str, float | None]:
    import psutil

    from franka_agent.reach_task import ReachEnv
    from franka_agent.robots import start_mock_robots
    from spin_decoupler_ros.rl.vec_env import DecoupledVecEnv
    from spin_decoupler_ros.tools.processes import ProcessGroup

    with ProcessGroup() as group:
        speed, lockstep, sim_time = setting
        namespaces = start_mock_robots(
            group,
            config,
            count,
            sim_speed=speed,
            log_dir=Path("log/bench/scaling"),
            agent_params={"use_sim_time": sim_time},
            mock_params={"lockstep": lockstep},
        )

        def make_env(client: Any) -> ReachEnv:
            return ReachEnv(
                client=client,
                target_low=task["target_low"],
                target_high=task["target_high"],
                success_distance=task["success_distance"],
                max_episode_steps=task["episode_steps"],
            )

        venv = DecoupledVecEnv(make_env, namespaces, connect_timeout=60.0)
        try:
            rng = np.random.default_rng(0)
            venv.seed(0)
            venv.reset()
            for _ in range(3):  # warm-up: caches, first trajectories
                venv.step(rng.uniform(-1.0, 1.0, (count, 3)).astype(np.float32))
            psutil.cpu_percent(interval=None)
            steps = 0
            lats: list[float] = []
            plain: list[float] = []
            with_reset: list[float] = []
            started = time.perf_counter()
            while time.perf_counter() - started < seconds:
                step_started = time.perf_counter()
                _, _, dones, infos = venv.step(rng.uniform(-1.0, 1.0, (count, 3)).astype(np.float32))
                (with_reset if dones.any() else plain).append(time.perf_counter() - step_started)
                steps += count
                lats += [info["lat"] for info in infos if info.get("seq", 0) >= 2]
            elapsed = time.perf_counter() - started
            cpu = psutil.cpu_percent(interval=None)
        finally:
            venv.close()
    rate = steps / elapsed
    print(f"  N={count}: {rate:7.1f} steps/s (machine CPU {cpu:.0f}%)", flush=True)
    return {
        "steps_per_s": round(rate, 2),
        "vec_step_median_ms": round(float(np.median(plain)) * 1e3, 1),  # no agent resetting
        "vec_step_with_reset_mean_ms": round(float(np.mean(with_reset)) * 1e3, 1) if with_reset else None,
        "lat_median_ms": round(float(np.median(lats)) * 1e3, 2),
        "machine_cpu_percent": cpu,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds per N and setting")
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    isolate_dds()
    import yaml

    from spin_decoupler_ros.tools.paths import find_config

    config = find_config("panda_reach.yaml", package="franka_agent")
    parameters = yaml.safe_load(config.read_text())
    task = parameters["/**/panda_trainer"]["ros__parameters"]
    rl_timestep = parameters["/**/panda_agent"]["ros__parameters"]["rl_timestep"]
    result: dict[str, Any] = {}
    details: dict[str, Any] = {}
    for setting, values in SETTINGS.items():
        print(f"{setting} (mock speed factor {values[0]:g})", flush=True)
        figures = {str(n): measure(n, values, args.seconds, config, task) for n in args.counts}
        result[setting] = {n: f["steps_per_s"] for n, f in figures.items()}
        details[setting] = figures
    base = result["realtime"].get("1")
    speedups = {n: round(rate / base, 2) for n, rate in result["realtime"].items()} if base else {}
    write_result(
        "scaling",
        {
            **result,
            "realtime_speedup": speedups,
            "details": details,
            "setup": {
                "seconds_per_point": args.seconds,
                "rl_timestep_s": rl_timestep,
                "episode_steps": task["episode_steps"],
                "actions": "uniform random; auto-resets included",
                "realtime": "mocks free-running at 1x, agents on wall time",
                "max_speed": "mocks in lockstep, flat out, agents on simulated time",
                "cpus": 2,
            },
            "target": "realtime N=4 >= 3.5x N=1",
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
