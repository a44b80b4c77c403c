"""RL side of LunarLander: Gymnasium's reward and termination, from what the agent sends."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from spin_decoupler_ros.conversions import duration_to_ns
from spin_decoupler_ros.core.timing import seconds_to_ns
from spin_decoupler_ros.examples.lunar_lander import transport
from spin_decoupler_ros.rl import DecoupledEnv, StepAnswer


class LunarLanderEnv(DecoupledEnv):
    """LunarLander through the decoupler, for Stable-Baselines3.

    ## Observation
    Gymnasium's 8 (float32, its bounds), from the agent's 21.

    ## Action
    ``Discrete(4)``: noop, left engine, main engine, right engine; sent as one number.
    With ``duration_choices=K`` (and a ``duration_range``), ``MultiDiscrete([4, K])``:
    the engine and one of K durations evenly from the range's min to its max.

    ## Reward and episode end
    Gymnasium's, summed over the frames of a step, rebuilt by ``transport.step_reward``
    (see its module docstring for exactly how). Truncated once the agent has run 1000
    frames (Gymnasium's time limit), counted by the agent, so frames that ran while the
    learner was thinking count too.
    """

    def __init__(self, agent_namespace: str = "", *, duration_choices: int = 0, **kwargs: Any) -> None:
        from gymnasium.envs.box2d.lunar_lander import LunarLander

        if duration_choices and (duration_choices < 2 or kwargs.get("duration_range") is None):
            raise ValueError(f"duration_choices={duration_choices} needs a duration_range and at least 2 choices")
        self.duration_choices = duration_choices
        reference = LunarLander()
        super().__init__(
            agent_namespace,
            observation_space=reference.observation_space,
            action_space=spaces.MultiDiscrete([4, duration_choices]) if duration_choices else spaces.Discrete(4),
            **kwargs,
        )
        reference.close()
        self.frames_per_step = max(
            1, round(seconds_to_ns(self.client.rl_timestep) / duration_to_ns(self.client.description.control_period))
        )
        self._start = np.zeros(transport.SIZE)  # the agent's observation when the step began
        self._terminated = False
        self._frames_before = 0.0

    def agent_action(self, action: Any) -> np.ndarray:
        if not self.duration_choices:
            return np.array([float(int(action))])
        engine, choice = (int(value) for value in np.asarray(action).reshape(-1))
        return np.array([float(engine), -1.0 + 2.0 * choice / (self.duration_choices - 1)])  # [-1, 1]: the range

    def make_observation(self, answer: StepAnswer) -> np.ndarray:
        if answer.seq == 0:  # the reset observation: the first step's reward starts here
            self._start = answer.observation
        return answer.observation[transport.OBSERVATION].astype(np.float32)

    def task_reward(self, observation: np.ndarray, action: np.ndarray, answer: StepAnswer) -> float:
        reward, self._terminated = transport.step_reward(self._start, answer.observation)
        self._frames_before = self._start[transport.FRAMES]
        self._start = answer.observation
        return reward

    def is_terminated(self, observation: np.ndarray, answer: StepAnswer) -> bool:
        return self._terminated

    def is_truncated(self, observation: np.ndarray, answer: StepAnswer) -> bool:
        return bool(answer.observation[transport.FRAMES] >= transport.FRAMES_PER_EPISODE)

    def step_info(self, observation: np.ndarray, answer: StepAnswer) -> dict[str, Any]:
        return {"frames": int(answer.observation[transport.FRAMES] - self._frames_before)}


class FrameSkipLunarLander(gym.Wrapper):
    """The in-process twin of ``LunarLanderEnv`` for comparisons: Gymnasium's LunarLander
    repeating each action for ``frames_per_step`` frames (rewards summed, stopping at the
    episode's end), truncated at 1000 frames. What the decoupled env is when no frame
    runs while the learner thinks."""

    def __init__(self, frames_per_step: int) -> None:
        from gymnasium.envs.box2d.lunar_lander import LunarLander

        super().__init__(LunarLander())
        self.frames_per_step = frames_per_step
        self._frames = 0

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        self._frames = 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        total = 0.0
        for _ in range(self.frames_per_step):
            observation, reward, terminated, _, info = self.env.step(action)
            self._frames += 1
            total += float(reward)
            if terminated:
                break
        truncated = not terminated and self._frames >= transport.FRAMES_PER_EPISODE
        return observation, total, terminated, truncated, info
