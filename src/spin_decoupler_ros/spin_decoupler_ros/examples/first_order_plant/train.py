"""RL node of the first-order plant example: trains SB3 SAC through the decoupler.

Run it beside a running agent (``run.py`` or the launch file start both)::

    python -m spin_decoupler_ros.examples.first_order_plant.train --ros-args \\
        -r __ns:=/plant --params-file config/first_order_plant.yaml

It prints the final mean tracking error and that of a zero-action baseline, and
writes them to ``<run_dir>/results.json``.
"""

from __future__ import annotations

import sys

import numpy as np

from spin_decoupler_ros.examples.first_order_plant.task import PlantTrackingEnv, mean_tracking_error
from spin_decoupler_ros.params import declare_bool, declare_float, declare_int
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.rl.run_folder import tensorboard_folder, write_results
from spin_decoupler_ros.rl.trainer import learn, trainer_main, training_session
from spin_decoupler_ros.tools.paths import declare_run_dir

NODE_NAME = "first_order_plant_train"


def main(argv: list[str] | None = None) -> int:
    """Train (rl/trainer.py: Ctrl-C and bad parameters end it with one line)."""
    return trainer_main(
        NODE_NAME,
        train,
        argv,
        lambda: f"[{NODE_NAME}] interrupted (Ctrl-C): an example keeps no checkpoints; run it again",
    )


def train(argv: list[str]) -> int:
    client = RLClient(node_name=NODE_NAME, ros_args=argv, connect=False)
    node = client.node
    total_timesteps = declare_int(node, "total_timesteps", 3000, "SAC training steps", low=1)
    seed = declare_int(node, "seed", 0, "seed of the learner and of the episodes", low=0)
    eval_episodes = declare_int(node, "eval_episodes", 10, "episodes for each evaluation", low=1)
    episode_steps = declare_int(node, "episode_steps", 50, "steps per episode", low=2)
    learning_rate = declare_float(node, "learning_rate", 1e-3, "SAC learning rate", low=1e-7, high=1.0)
    torch_threads = declare_int(node, "torch_threads", 1, "torch threads in the learner (1 keeps a core free)", low=1)
    record = declare_bool(
        node, "record", True, "record the run in run.mcap (ros2 bag MCAP layout): steps, answers, timing, agent status"
    )
    run_dir = declare_run_dir(node, "first_order_plant", "where results.json goes")
    if run_dir is None:
        client.close()
        return 2
    client.connect()

    import torch
    from stable_baselines3 import SAC

    torch.set_num_threads(torch_threads)
    env = PlantTrackingEnv(client=client, max_episode_steps=episode_steps)
    log = node.get_logger()
    with training_session(run_dir, "A first-order plant run", [client], env, record):
        baseline = mean_tracking_error(env, lambda obs: np.zeros(1), eval_episodes, seed=10_000)
        log.info(f"zero-action baseline: mean tracking error {baseline:.4f}")
        model = SAC(
            "MlpPolicy",
            env,
            learning_rate=learning_rate,
            buffer_size=50_000,
            batch_size=128,
            learning_starts=min(300, total_timesteps // 2),
            gamma=0.9,
            policy_kwargs={"net_arch": [64, 64]},
            seed=seed,
            verbose=0,
            tensorboard_log=tensorboard_folder(run_dir),
        )
        train_s = learn(model, total_timesteps, [client])
        trained = mean_tracking_error(
            env, lambda obs: model.predict(obs, deterministic=True)[0], eval_episodes, seed=10_000
        )
        results = {
            "mean_tracking_error": trained,
            "zero_action_tracking_error": baseline,
            "improvement_factor": baseline / max(trained, 1e-9),
            "total_timesteps": total_timesteps,
            "train_seconds": train_s,
            "steps_per_second": total_timesteps / train_s,
        }
        write_results(run_dir, results)
        model.save(run_dir / "model")
        print(
            f"first-order plant: final mean tracking error {trained:.4f} "
            f"(zero-action baseline {baseline:.4f}, {results['improvement_factor']:.1f}x better; "
            f"{total_timesteps} steps in {train_s:.0f} s)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
