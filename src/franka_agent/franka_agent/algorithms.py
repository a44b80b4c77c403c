"""The SB3 algorithms the reach trainer uses (SAC, TD3): their hyperparameters as node
parameters ``<algorithm>.<name>``, making a model or loading one from a checkpoint, and
evaluating its deterministic policy."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rclpy.node import Node

from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.params import declare_bool, declare_float, declare_float_list, declare_int, declare_str

ALGORITHMS = ("sac", "td3")
# Hyperparameters each algorithm takes from parameters "<algorithm>.<name>" (defaults here).
_COMMON_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-3,
    "buffer_size": 200_000,
    "batch_size": 256,
    "learning_starts": 1000,
    "gamma": 0.95,
    "tau": 0.005,
    "train_freq": 1,
    "gradient_steps": 1,
    "net_arch": [64, 64],
    "critic_layer_norm": False,  # LayerNorm in the Q-networks (spin_decoupler_ros/rl/critics.py)
    "relabel_goals": 0,  # relabelled copies of each transition (spin_decoupler_ros/rl/relabel.py)
}
HYPERPARAMETERS: dict[str, dict[str, Any]] = {
    # SAC as the arm's time asks (docs/panda.md, bench/robot_minutes.py): layer-normed
    # critics, so the trainer's updates_per_second can run several gradient steps a step,
    # at the learning rate those want; goals relabelled four times; 200 learning starts and
    # an entropy coefficient learned from 0.1, rewards being of order one.
    "sac": {
        **_COMMON_DEFAULTS,
        "learning_starts": 200,
        "ent_coef": "auto_0.1",
        "critic_layer_norm": True,
        "relabel_goals": 4,
    },
    "td3": {**_COMMON_DEFAULTS, "action_noise_std": 0.2},  # plus its exploration noise
}


FRACTIONS = ("gamma", "tau")  # the settings that are shares, in [0, 1]


def entropy_coefficient(value: str, name: str = "sac.ent_coef") -> str | float:
    """SB3's ``ent_coef`` from a parameter string: ``auto``, ``auto_<initial>`` (learned,
    starting there) or a fixed number, each above 0; anything else raises ParameterError."""
    text = value.strip()
    number = text[len("auto_") :] if text.startswith("auto_") else text
    if text == "auto":
        return text
    try:
        coefficient = float(number)
    except ValueError:
        coefficient = math.nan
    if not coefficient > 0.0 or math.isinf(coefficient):
        raise ParameterError(
            f"parameter '{name}' = '{value}' is not 'auto', 'auto_<initial value>' or a number, above 0: "
            "SAC's entropy coefficient"
        )
    return text if text.startswith("auto_") else coefficient


# The settings given as text, each with its parser (value, parameter name) and what it
# takes: a text setting needs one (test_trainer_settings.py holds every default to it).
TEXT_SETTINGS: dict[str, tuple[Callable[[str, str], Any], str]] = {
    "ent_coef": (entropy_coefficient, "auto, auto_<initial> or a number"),
}


def gradient_steps_per_step(duration_s: float, updates_per_second: float, at_least: int) -> int:
    """The gradient steps one env step of ``duration_s`` pays for: ``updates_per_second`` of
    them per second of the action (0: ``at_least``, SB3's fixed count), at least ``at_least``.
    Run while the agent acts (``TrainsWhileActing``), they cost no arm time as long as
    they fit in the action: the update-to-data ratio follows the time the arm gives."""
    if updates_per_second <= 0.0:
        return at_least
    return max(at_least, round(duration_s * updates_per_second))


def declare_hyperparameters(node: Node, algorithm: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, default in HYPERPARAMETERS[algorithm].items():
        key = f"{algorithm}.{name}"
        if isinstance(default, bool):
            values[name] = declare_bool(node, key, default, f"{algorithm.upper()} {name}")
        elif isinstance(default, list):
            values[name] = [int(x) for x in declare_float_list(node, key, [float(x) for x in default], name)]
        elif isinstance(default, str):
            parse, takes = TEXT_SETTINGS[name]
            values[name] = parse(declare_str(node, key, default, f"{algorithm.upper()} {name}: {takes}"), key)
        elif isinstance(default, int):
            values[name] = declare_int(node, key, default, f"{algorithm.upper()} {name}", low=0)
        else:
            high = 1.0 if name in FRACTIONS else math.inf
            values[name] = declare_float(node, key, float(default), f"{algorithm.upper()} {name}", low=0.0, high=high)
    return values


def algorithm_class(algorithm: str, while_acting: bool) -> Any:
    """SB3's SAC or TD3, able to act as evaluated (confirming a success stop), with its
    gradient steps run while the agent acts if ``while_acting``."""
    from stable_baselines3 import SAC, TD3

    from spin_decoupler_ros.rl.stopping import acts_as_evaluated
    from spin_decoupler_ros.rl.training import trains_while_acting

    chosen = SAC if algorithm == "sac" else TD3
    return acts_as_evaluated(trains_while_acting(chosen) if while_acting else chosen)


def make_model(
    algorithm: str, env: Any, hyper: dict[str, Any], seed: int, while_acting: bool = False, task: Any = None
) -> Any:
    """The learner; with ``relabel_goals`` above 0, its replay buffer relabels each finished
    episode's goals through ``task`` (a ``GoalTask``, e.g. ``ReachTask``)."""
    from stable_baselines3.common.noise import NormalActionNoise

    relabelling: dict[str, Any] = {}
    if hyper["relabel_goals"]:
        from spin_decoupler_ros.rl.relabel import RelabellingReplayBuffer

        if task is None:
            raise ValueError("relabel_goals needs the task whose goals are relabelled")
        relabelling = {
            "replay_buffer_class": RelabellingReplayBuffer,
            "replay_buffer_kwargs": {"task": task, "n_future": hyper["relabel_goals"]},
        }
    common = {
        "learning_rate": hyper["learning_rate"],
        "buffer_size": hyper["buffer_size"],
        "batch_size": hyper["batch_size"],
        "learning_starts": hyper["learning_starts"],
        "gamma": hyper["gamma"],
        "tau": hyper["tau"],
        "train_freq": hyper["train_freq"],
        "gradient_steps": hyper["gradient_steps"],
        "policy_kwargs": {"net_arch": hyper["net_arch"]},
        "seed": seed,
        "verbose": 0,
        **relabelling,
    }
    chosen = algorithm_class(algorithm, while_acting)
    policy = policy_class(algorithm, hyper["critic_layer_norm"])
    if algorithm == "sac":
        model = chosen(policy, env, ent_coef=hyper["ent_coef"], **common)
    else:
        size = env.action_space.shape[0]
        noise = NormalActionNoise(np.zeros(size), np.full(size, hyper["action_noise_std"]))
        model = chosen(policy, env, action_noise=noise, **common)
    if relabelling:
        model.replay_buffer.reseed(seed)  # (a seeded run relabels the same way)
    return model


def policy_class(algorithm: str, critic_layer_norm: bool) -> Any:
    """SB3's MLP policy, or the one whose Q-networks are layer-normed (stable at many
    gradient steps per env step)."""
    if not critic_layer_norm:
        return "MlpPolicy"
    from spin_decoupler_ros.rl.critics import LayerNormSACPolicy, LayerNormTD3Policy

    return LayerNormSACPolicy if algorithm == "sac" else LayerNormTD3Policy


def load_model(algorithm: str, folder: Path, env: Any, hyper: dict[str, Any], while_acting: bool = False) -> Any:
    """A checkpoint's model, with its replay buffer (SB3's own files, this trainer's)."""
    from stable_baselines3.common.noise import NormalActionNoise

    model = algorithm_class(algorithm, while_acting).load(folder / "model.zip", env=env, device="cpu")
    if (folder / "replay_buffer.pkl").exists():
        model.load_replay_buffer(folder / "replay_buffer.pkl")
    if algorithm == "td3":  # (the noise is not saved with the model)
        size = env.action_space.shape[0]
        model.action_noise = NormalActionNoise(np.zeros(size), np.full(size, hyper["action_noise_std"]))
    return model


def evaluate_policy(env: Any, model: Any, episodes: int, seed: int) -> dict[str, Any]:
    """The deterministic policy over ``episodes`` episodes of their own seeds (never a
    training episode's): success rate, final distance, length, the time it took, and each
    episode's end."""
    from spin_decoupler_ros.rl.run_folder import run_episodes

    started = time.monotonic()
    reset_from = getattr(env, "reset_from", None)
    if reset_from is not None:
        env.reset_from = "home"  # every policy evaluated from the same starts (ReachEnv)
    try:
        evaluation = run_episodes(
            env, lambda obs: model.predict(obs, deterministic=True)[0], episodes, seed=1_000_000 + seed
        )
    finally:
        if reset_from is not None:
            env.reset_from = reset_from
    return {
        "eval_episodes": episodes,
        "success_rate": float(np.mean([e["success"] for e in evaluation])),
        "mean_final_distance_m": float(np.mean([e["final_distance"] for e in evaluation])),
        "mean_episode_length": float(np.mean([e["length"] for e in evaluation])),
        "eval_seconds": round(time.monotonic() - started, 1),
        "eval_per_episode": [  # (how each ended: a miss by millimetres or a runaway)
            {
                "success": bool(e["success"]),
                "final_distance_m": round(e["final_distance"], 4),
                "closest_distance_m": round(e["closest_distance"], 4),
                "length": int(e["length"]),
            }
            for e in evaluation
        ],
    }
