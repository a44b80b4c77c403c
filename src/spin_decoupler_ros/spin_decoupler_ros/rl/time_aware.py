"""Time-aware learning: each step's timing in the observation, so a policy can see how
late its actions come and what ran meanwhile.

``TimingInObservation`` wraps a ``DecoupledEnv`` (a Gymnasium wrapper);
``VecTimingInObservation`` wraps a ``DecoupledVecEnv`` (an SB3 VecEnv wrapper). Both
append the same features to a flat Box observation:

    lat       the previous action's real duration (s): its duration plus the think time
    duration  how long this step's action ran before its observation (s)
    think     the think time before this step's action: ``lat`` minus the previous
              step's ``duration`` (after a reset: ``lat`` itself), the learner's best
              guess of the think time it is spending now
    action    this step's action (a Box's values; a Discrete's one-hot, a
              MultiDiscrete's one-hots): what keeps running while the learner thinks
              about this observation

After a reset every feature is 0. For a policy that chooses its durations as well, give
the ``DecoupledEnv`` a ``duration_range``: the duration is then part of the action.

``TimeWeightedReward`` and ``VecTimeWeightedReward`` make such a policy's reward account
for the time each action took: a step's reward is taken as a rate, and weighted by the
step's executed duration over a reference duration (the nominal timestep). A return then
sums reward over time, not over steps, so that neither many short steps nor a few long
ones pay by themselves. (Discounting stays per step: SB3 has no per-transition discount.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from spin_decoupler_ros.core.think_time import think_time

TIMING_FEATURES = ("lat", "duration", "think")


def action_features_size(action_space: spaces.Space[Any]) -> int:
    if isinstance(action_space, spaces.Box):
        return int(np.prod(action_space.shape))
    if isinstance(action_space, spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, spaces.MultiDiscrete) and action_space.nvec.ndim == 1:
        return int(np.sum(action_space.nvec))
    raise TypeError(f"timing features need a Box, Discrete or flat MultiDiscrete action space, not {action_space}")


def encode_action(action_space: spaces.Space[Any], action: Any) -> np.ndarray:
    """The action as numbers: a Box's values clipped to its bounds, a Discrete's one-hot,
    a MultiDiscrete's one-hots one after the other."""
    if isinstance(action_space, spaces.Discrete):
        encoded = np.zeros(int(action_space.n))
        encoded[int(np.asarray(action).reshape(-1)[0]) - int(action_space.start)] = 1.0
        return encoded
    if isinstance(action_space, spaces.MultiDiscrete):
        choices = np.asarray(action, dtype=np.int64).reshape(-1) - action_space.start.reshape(-1)
        offsets = np.concatenate(([0], np.cumsum(action_space.nvec)[:-1]))
        encoded = np.zeros(int(np.sum(action_space.nvec)))
        encoded[offsets + choices] = 1.0
        return encoded
    box = action_space
    assert isinstance(box, spaces.Box)
    values = np.asarray(action, dtype=np.float64).reshape(-1)
    return np.clip(values, box.low.reshape(-1), box.high.reshape(-1))


def timed_observation_space(observation_space: spaces.Space[Any], action_space: spaces.Space[Any]) -> spaces.Box:
    """``observation_space`` (a flat Box) with the timing features' bounds appended."""
    if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
        raise TypeError(f"timing features need a flat Box observation space, not {observation_space}")
    if isinstance(action_space, spaces.Box):
        action_low, action_high = action_space.low.reshape(-1), action_space.high.reshape(-1)
    else:
        size = action_features_size(action_space)
        action_low, action_high = np.zeros(size), np.ones(size)
    timing = len(TIMING_FEATURES)
    dtype = observation_space.dtype
    low = np.concatenate([observation_space.low, np.zeros(timing), action_low]).astype(dtype)
    high = np.concatenate([observation_space.high, np.full(timing, np.inf), action_high]).astype(dtype)
    return spaces.Box(low, high, dtype=dtype)  # type: ignore[arg-type]


def join(observation: np.ndarray, features: np.ndarray, dtype: Any) -> np.ndarray:
    """An observation with its timing features appended, as ``dtype``."""
    return np.concatenate([observation, features]).astype(dtype)


class StepTimingFeatures:
    """The timing features of one env's steps (no ROS, no Gymnasium state)."""

    def __init__(self, action_space: spaces.Space[Any]) -> None:
        self.action_space = action_space
        self.size = len(TIMING_FEATURES) + action_features_size(action_space)
        self._previous_duration = 0.0

    def on_reset(self) -> np.ndarray:
        self._previous_duration = 0.0
        return np.zeros(self.size)

    def on_step(self, action: Any, info: Mapping[str, Any]) -> np.ndarray:
        """Features of a step from its action and its info (``lat``, ``duration`` in s);
        a step without timing (an agent lost, the episode truncated) counts as zeros."""
        lat = float(info.get("lat", 0.0))
        duration = float(info.get("duration", 0.0))
        think = think_time(lat, self._previous_duration)
        self._previous_duration = duration
        return np.concatenate([[lat, duration, think], encode_action(self.action_space, action)])


class TimingInObservation(gym.Wrapper[np.ndarray, Any, np.ndarray, Any], gym.utils.RecordConstructorArgs):
    """A Gymnasium wrapper appending the step's timing features (module docstring)."""

    def __init__(self, env: gym.Env[np.ndarray, Any]) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        self._features = StepTimingFeatures(env.action_space)
        self.observation_space = timed_observation_space(env.observation_space, env.action_space)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return join(observation, self._features.on_reset(), self.observation_space.dtype), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        features = self._features.on_step(action, info)
        return join(observation, features, self.observation_space.dtype), float(reward), terminated, truncated, info


class VecTimingInObservation(VecEnvWrapper):
    """An SB3 VecEnv wrapper appending each env's step timing features (module
    docstring). A finished episode's ``terminal_observation`` gets its last step's
    features; the next episode's first observation starts from zeros."""

    def __init__(self, venv: VecEnv) -> None:
        space = timed_observation_space(venv.observation_space, venv.action_space)
        super().__init__(venv, observation_space=space)
        self._features = [StepTimingFeatures(venv.action_space) for _ in range(venv.num_envs)]
        self._actions: np.ndarray | None = None

    def reset(self) -> VecEnvObs:
        observations = np.asarray(self.venv.reset())
        pairs = zip(observations, self._features, strict=True)
        return np.stack([join(obs, features.on_reset(), self.observation_space.dtype) for obs, features in pairs])

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions
        self.venv.step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        observations, rewards, dones, infos = self.venv.step_wait()
        assert self._actions is not None, "step_wait() before step_async()"
        dtype = self.observation_space.dtype
        joined = []
        for i, (obs, info) in enumerate(zip(np.asarray(observations), infos, strict=True)):
            features = self._features[i].on_step(self._actions[i], info)
            if dones[i]:
                if "terminal_observation" in info:
                    info["terminal_observation"] = join(info["terminal_observation"], features, dtype)
                features = self._features[i].on_reset()
            joined.append(join(obs, features, dtype))
        return np.stack(joined), rewards, dones, infos


def time_weight(info: Mapping[str, Any], reference_duration: float) -> float:
    """A step's reward weight: its executed duration over ``reference_duration`` (a step
    without timing, an agent lost or the episode truncated, weighs 1)."""
    duration = info.get("duration")
    return 1.0 if duration is None else float(duration) / reference_duration


def check_reference_duration(reference_duration: float) -> float:
    if not (np.isfinite(reference_duration) and reference_duration > 0.0):
        raise ValueError(f"reference_duration must be a positive number of seconds, got {reference_duration!r}")
    return float(reference_duration)


class TimeWeightedReward(gym.Wrapper[Any, Any, Any, Any], gym.utils.RecordConstructorArgs):
    """A Gymnasium wrapper weighting each step's reward by its executed duration over
    ``reference_duration`` seconds (module docstring); the unweighted reward is in
    ``info["step_reward"]``."""

    def __init__(self, env: gym.Env[Any, Any], reference_duration: float) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, reference_duration=reference_duration)
        gym.Wrapper.__init__(self, env)
        self.reference_duration = check_reference_duration(reference_duration)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        info["step_reward"] = float(reward)
        return observation, float(reward) * time_weight(info, self.reference_duration), terminated, truncated, info


class VecTimeWeightedReward(VecEnvWrapper):
    """An SB3 VecEnv wrapper weighting each env's step reward by its executed duration
    over ``reference_duration`` seconds (module docstring); the unweighted reward is in
    each ``info["step_reward"]``."""

    def __init__(self, venv: VecEnv, reference_duration: float) -> None:
        super().__init__(venv)
        self.reference_duration = check_reference_duration(reference_duration)

    def reset(self) -> VecEnvObs:
        return self.venv.reset()

    def step_wait(self) -> VecEnvStepReturn:
        observations, rewards, dones, infos = self.venv.step_wait()
        weighted = np.array(rewards, dtype=np.float32)
        for i, info in enumerate(infos):
            info["step_reward"] = float(rewards[i])
            weighted[i] = rewards[i] * time_weight(info, self.reference_duration)
        return observations, weighted, dones, infos
