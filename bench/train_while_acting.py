"""SAC's gradient steps while the agent acts (``train_while_acting``) against SB3's order
(between observation and action), in one training run, in alternating blocks.

The Panda reach task flat out under the main job's default timing model, one SAC learner
(the config's settings, one torch thread): after ``learning_starts``, every block of
``--block`` steps switches between the two orders, so both see the same machine, whose
speed drifts by a third within minutes here. Steps per second of each block; the ratio is
taken between neighbouring blocks.

    ./ws bench train_while_acting [--steps 3000] [--block 100]

Writes bench/results/train_while_acting.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, reach_env, write_result

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--block", type=int, default=100)
    args = parser.parse_args()
    isolate_dds()
    import torch
    import yaml
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback

    from franka_agent.robots import default_timing_model, start_mock_robots
    from spin_decoupler_ros.rl.training import act_while_training, trains_while_acting
    from spin_decoupler_ros.tools.paths import find_config
    from spin_decoupler_ros.tools.processes import ProcessGroup

    torch.set_num_threads(1)
    config = find_config("panda_reach.yaml", package="franka_agent")
    task = yaml.safe_load(config.read_text())["/**/panda_trainer"]["ros__parameters"]
    sac = task["sac"]
    timing_model = default_timing_model(mock=True)

    class Switching(trains_while_acting(SAC)):  # type: ignore[misc]
        """Deferred (while the agent acts) or at once (SB3's order), as ``deferring`` says."""

        deferring = True

        def train(self, gradient_steps: int, batch_size: int = 64) -> None:
            if self.deferring:
                super().train(gradient_steps, batch_size)
            else:
                SAC.train(self, gradient_steps=gradient_steps, batch_size=batch_size)

    rates: dict[bool, list[float]] = {True: [], False: []}
    with ProcessGroup() as group:
        (namespace,) = start_mock_robots(
            group, config, 1, sim_speed=0.0, log_dir=ROOT / "log/bench/train_while_acting", timing_model=timing_model
        )
        env = reach_env(namespace, task)
        model = Switching(
            "MlpPolicy",
            env,
            learning_rate=sac["learning_rate"],
            buffer_size=sac["buffer_size"],
            batch_size=sac["batch_size"],
            learning_starts=sac["learning_starts"],
            gamma=sac["gamma"],
            tau=sac["tau"],
            ent_coef=sac["ent_coef"],
            policy_kwargs={"net_arch": [int(n) for n in sac["net_arch"]]},
            seed=0,
            device="cpu",
        )
        act_while_training(env, model)
        first = sac["learning_starts"] + args.block

        class Blocks(BaseCallback):
            started = 0.0

            def _on_step(self) -> bool:
                steps = self.num_timesteps
                if steps >= first and (steps - first) % args.block == 0:
                    now = time.perf_counter()
                    if steps > first:
                        rates[model.deferring].append(args.block / (now - self.started))
                        model.train_deferred()  # (a block's last update stays in it)
                        model.deferring = not model.deferring
                    self.started = time.perf_counter()
                return True

        model.learn(args.steps, callback=Blocks())
        env.close()
    pairs = [deferred / at_once for deferred, at_once in zip(rates[True], rates[False], strict=False)]
    result: dict[str, Any] = {
        "while_acting_steps_per_s": round(float(np.median(rates[True])), 2),
        "between_steps_per_s": round(float(np.median(rates[False])), 2),
        "paired_ratio_median": round(float(np.median(pairs)), 3),
        "paired_ratio_range": [round(min(pairs), 3), round(max(pairs), 3)],
        "blocks": {"while_acting": len(rates[True]), "between": len(rates[False])},
        "setup": {
            "steps": args.steps,
            "block": args.block,
            "timing_model": "the main job's default: replay of config/think_times_panda_sac.csv",
            "learner": "SB3 SAC, the config's settings, 1 torch thread",
            "env": "mock (MuJoCo, lockstep, flat out) + Panda agent as processes, env over DDS",
        },
    }
    print(result, flush=True)
    write_result("train_while_acting", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
