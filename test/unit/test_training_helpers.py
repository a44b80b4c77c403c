"""SB3 helpers on the RL side that need no agent."""

from __future__ import annotations

import gc
import time

import gymnasium as gym
from stable_baselines3 import SAC
from stable_baselines3.common.callbacks import BaseCallback

from spin_decoupler_ros.rl.training import FreezeGarbageCollector


def test_full_collections_stay_short_while_training_and_the_freeze_ends_with_it() -> None:
    """Training's set-up (torch, SB3) is frozen out of the collector while it trains, so a
    full collection, which otherwise walks all of it, never stalls a step."""
    seen: list[tuple[int, float]] = []

    class Probe(BaseCallback):
        def _on_step(self) -> bool:
            started = time.perf_counter()
            gc.collect()
            duration = time.perf_counter() - started
            seen.append((gc.get_freeze_count(), duration))  # (counting them walks them all)
            return True

    model = SAC("MlpPolicy", gym.make("Pendulum-v1"), learning_starts=10, policy_kwargs={"net_arch": [8]})
    unfrozen_started = time.perf_counter()
    gc.collect()
    unfrozen = time.perf_counter() - unfrozen_started
    model.learn(total_timesteps=20, callback=[FreezeGarbageCollector(), Probe()])
    assert all(frozen > 10_000 for frozen, _ in seen)
    assert max(duration for _, duration in seen[5:]) < unfrozen / 5, (seen, unfrozen)
    assert gc.get_freeze_count() == 0
