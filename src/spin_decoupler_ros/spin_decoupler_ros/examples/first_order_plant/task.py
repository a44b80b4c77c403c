"""RL side of the first-order plant: track a setpoint drawn per episode."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from spin_decoupler_ros.rl import DecoupledEnv, StepAnswer


class PlantTrackingEnv(DecoupledEnv):
    """Drive the plant's state x to a setpoint r.

    ## Observation
    ``[x, u, r, r - x]`` (float32): the plant state and the input in effect (from the
    agent), the setpoint and the error (added on this side).

    ## Action
    ``u`` in [-1, 1], the agent's action box.

    ## Reward
    ``-|r - x| - 0.05 u^2`` per step: tracking error, plus a little effort.

    ## Episode end
    Never terminates; truncated after ``max_episode_steps``.

    :param setpoint_range: r is drawn uniformly in [-range, range] each episode.
    """

    def __init__(
        self, agent_namespace: str = "", *, setpoint_range: float = 1.5, max_episode_steps: int = 50, **kwargs: Any
    ) -> None:
        super().__init__(
            agent_namespace,
            max_episode_steps=max_episode_steps,
            # |x| <= max(|x0|, K): 2 with the example's settings; 10 leaves room for other gains.
            observation_space=spaces.Box(-10.0, 10.0, shape=(4,), dtype=np.float32),
            **kwargs,
        )
        self.setpoint_range = setpoint_range
        self.setpoint = 0.0

    def new_episode(self) -> Sequence[float]:
        self.setpoint = float(self.np_random.uniform(-self.setpoint_range, self.setpoint_range))
        return ()

    def make_observation(self, answer: StepAnswer) -> np.ndarray:
        x, u = answer.observation
        return np.array([x, u, self.setpoint, self.setpoint - x], dtype=np.float32)

    def task_reward(self, observation: np.ndarray, action: np.ndarray, answer: StepAnswer) -> float:
        return float(-abs(observation[3]) - 0.05 * float(action[0]) ** 2)

    def step_info(self, observation: np.ndarray, answer: StepAnswer) -> dict[str, Any]:
        return {"tracking_error": float(abs(observation[3]))}


def mean_tracking_error(
    env: PlantTrackingEnv, policy: Callable[[np.ndarray], np.ndarray], episodes: int, seed: int
) -> float:
    """Mean |r - x| over the second half of each episode (the settled part)."""
    errors: list[float] = []
    for episode in range(episodes):
        observation, _ = env.reset(seed=seed + episode)
        per_step: list[float] = []
        done = False
        while not done:
            observation, _, terminated, truncated, info = env.step(policy(observation))
            per_step.append(info["tracking_error"])
            done = terminated or truncated
        errors.extend(per_step[len(per_step) // 2 :])
    return float(np.mean(errors))
