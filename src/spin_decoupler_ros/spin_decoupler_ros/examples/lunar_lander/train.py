"""RL node of the LunarLander example: trains SB3 PPO through the decoupler.

Run it beside a running agent (``run.py`` or the launch file start both)::

    python -m spin_decoupler_ros.examples.lunar_lander.train --ros-args \\
        -r __ns:=/lander --params-file config/lunar_lander.yaml

It prints the mean evaluation return over ``eval_episodes`` episodes and writes it,
with the training figures, to ``<run_dir>/results.json``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from spin_decoupler_ros.examples.lunar_lander.task import LunarLanderEnv
from spin_decoupler_ros.params import declare_bool, declare_float, declare_int
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.rl.run_folder import tensorboard_folder, write_results
from spin_decoupler_ros.rl.trainer import learn, trainer_main, training_session
from spin_decoupler_ros.tools.paths import declare_run_dir

NODE_NAME = "lunar_lander_train"

# rl-baselines3-zoo's PPO settings for LunarLander, for one env; gamma is per step, and
# a step spans several frames, so it is lowered from the zoo's per-frame 0.999.
PPO_SETTINGS: dict[str, Any] = {
    "learning_rate": 3e-4,
    "gamma": 0.99,
    "n_steps": 1024,
    "batch_size": 64,
    "n_epochs": 4,
    "gae_lambda": 0.98,
    "ent_coef": 0.01,
    "policy_kwargs": {"net_arch": [64, 64]},
}


def make_ppo(env: Any, *, seed: int, **overrides: Any) -> Any:
    """The PPO learner both the example and the benchmark use (``PPO_SETTINGS`` unless overridden)."""
    from stable_baselines3 import PPO

    return PPO("MlpPolicy", env, seed=seed, verbose=0, **{**PPO_SETTINGS, **overrides})


def evaluate(model: Any, env: Any, episodes: int, seed: int) -> tuple[float, float]:
    """Mean and standard deviation of the deterministic policy's episode return."""
    returns = []
    for episode in range(episodes):
        observation, _ = env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            action, _ = model.predict(observation, deterministic=True)
            observation, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns)), float(np.std(returns))


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
    total_timesteps = declare_int(node, "total_timesteps", 100_000, "PPO training steps", low=1)
    seed = declare_int(node, "seed", 0, "seed of the learner and of the evaluation episodes", low=0)
    eval_episodes = declare_int(node, "eval_episodes", 10, "episodes of the final evaluation", low=1)
    learning_rate = declare_float(
        node, "learning_rate", PPO_SETTINGS["learning_rate"], "PPO learning rate", low=1e-7, high=1.0
    )
    gamma = declare_float(node, "gamma", PPO_SETTINGS["gamma"], "discount per RL step", low=0.0, high=1.0)
    torch_threads = declare_int(node, "torch_threads", 1, "torch threads in the learner (1 keeps a core free)", low=1)
    record = declare_bool(
        node, "record", True, "record the run in run.mcap (ros2 bag MCAP layout): steps, answers, timing, agent status"
    )
    run_dir = declare_run_dir(node, "lunar_lander", "where the model and results.json go")
    if run_dir is None:
        client.close()
        return 2
    client.connect()

    import torch

    torch.set_num_threads(torch_threads)
    env = LunarLanderEnv(client=client)
    log = node.get_logger()
    log.info(f"training PPO for {total_timesteps} steps, {env.frames_per_step} frames per step")
    with training_session(run_dir, "A LunarLander run", [client], env, record):
        model = make_ppo(
            env, seed=seed, learning_rate=learning_rate, gamma=gamma, tensorboard_log=tensorboard_folder(run_dir)
        )
        train_s = learn(model, total_timesteps, [client])
        mean_return, std_return = evaluate(model, env, eval_episodes, seed=10_000)
        results = {
            "mean_return": mean_return,
            "std_return": std_return,
            "eval_episodes": eval_episodes,
            "total_timesteps": total_timesteps,
            "frames_per_step": env.frames_per_step,
            "train_seconds": train_s,
            "steps_per_second": total_timesteps / train_s,
        }
        write_results(run_dir, results)
        model.save(run_dir / "model")
        print(
            f"LunarLander: mean evaluation return {mean_return:.1f} +- {std_return:.1f} over "
            f"{eval_episodes} episodes ({total_timesteps} PPO steps in {train_s:.0f} s)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
