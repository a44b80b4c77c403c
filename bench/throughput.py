"""Env steps per second of the Panda reach task: through the decoupled pipeline at maximum
simulation speed, and as an in-process Gymnasium env, in one run.

(a) in-process: ``InProcessReachEnv``: the agent's controller, the mock's physics
    and the task in one process, back to back;
(b) decoupled: the MuJoCo mock (lockstep, flat out) and the Panda agent as processes,
    ``ReachEnv`` here, talking over DDS.
Both step random actions with the same seed, resets included; no learner, so the
figure is the environment's own rate. ``ratio`` = decoupled / in-process.

    ./ws bench throughput [--steps 2000]

Writes bench/results/throughput.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, reach_env, write_result


def run(env: object, steps: int, seed: int) -> float:
    """Steps per second of ``steps`` random-action steps (resets counted in the time)."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)  # type: ignore[attr-defined]
    started = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(rng.uniform(-1.0, 1.0, 3))  # type: ignore[attr-defined]
        if terminated or truncated:
            env.reset()  # type: ignore[attr-defined]
    return steps / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    isolate_dds()
    import yaml

    from franka_agent.inprocess_env import InProcessReachEnv
    from franka_agent.robots import start_mock_robots
    from spin_decoupler_ros.tools.paths import find_config
    from spin_decoupler_ros.tools.processes import ProcessGroup

    config = find_config("panda_reach.yaml", package="franka_agent")
    sections = yaml.safe_load(config.read_text())
    agent = sections["/**/panda_agent"]["ros__parameters"]
    task = sections["/**/panda_trainer"]["ros__parameters"]

    inprocess = run(InProcessReachEnv(agent, task), args.steps, seed=1)
    print(f"in-process: {inprocess:.1f} steps/s", flush=True)

    with ProcessGroup() as group:
        (agent_namespace,) = start_mock_robots(group, config, 1, sim_speed=0.0, log_dir=Path("log/bench/throughput"))
        env = reach_env(agent_namespace, task)
        decoupled = run(env, args.steps, seed=1)
        env.close()
    print(f"decoupled: {decoupled:.1f} steps/s", flush=True)

    write_result(
        "throughput",
        {
            "decoupled_steps_per_s": round(decoupled, 2),
            "inprocess_steps_per_s": round(inprocess, 2),
            "ratio": round(decoupled / inprocess, 3),
            "setup": {
                "steps": args.steps,
                "actions": "uniform random, same seed; resets included",
                "rl_timestep_s": agent["rl_timestep"],
                "control_rate_hz": agent["control_rate"],
                "decoupled": "mock (MuJoCo, lockstep, speed_factor 0) + agent as processes, env over DDS",
                "inprocess": "InProcessReachEnv: same controller, physics and task in one process",
            },
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
