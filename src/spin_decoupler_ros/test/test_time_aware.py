"""Timing features (rl/time_aware.py) without ROS: what each feature is, and the spaces."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from stable_baselines3.common.vec_env import DummyVecEnv

from spin_decoupler_ros.rl.time_aware import (
    StepTimingFeatures,
    TimeWeightedReward,
    VecTimeWeightedReward,
    encode_action,
    timed_observation_space,
)

BOX = spaces.Box(-1.0, 1.0, (2,), np.float32)


def test_think_is_lat_less_the_previous_duration_and_a_reset_starts_from_zero() -> None:
    features = StepTimingFeatures(BOX)
    assert features.size == 3 + 2
    np.testing.assert_array_equal(features.on_reset(), np.zeros(5))
    first = features.on_step([0.5, -2.0], {"lat": 0.03, "duration": 0.1})  # after a reset: lat is all think
    np.testing.assert_allclose(first, [0.03, 0.1, 0.03, 0.5, -1.0])  # the action clipped to its box
    second = features.on_step([0.0, 0.0], {"lat": 0.18, "duration": 0.05})
    np.testing.assert_allclose(second[:3], [0.18, 0.05, 0.08])
    early = features.on_step([0.0, 0.0], {"lat": 0.04, "duration": 0.05})  # LAT under the duration: no think
    assert early[2] == 0.0
    features.on_reset()
    assert features.on_step([0.0, 0.0], {"lat": 0.02, "duration": 0.05})[2] == pytest.approx(0.02)


def test_a_step_without_timing_counts_as_zeros() -> None:
    features = StepTimingFeatures(BOX)
    features.on_reset()
    np.testing.assert_array_equal(features.on_step([0.0, 0.0], {"truncated_reason": "agent lost"})[:3], [0, 0, 0])


def test_a_discrete_action_is_one_hot_and_other_spaces_are_refused() -> None:
    np.testing.assert_array_equal(encode_action(spaces.Discrete(4), 2), [0, 0, 1, 0])
    np.testing.assert_array_equal(encode_action(spaces.Discrete(3, start=1), np.array([1])), [1, 0, 0])
    # A MultiDiscrete (an action and a duration choice): one one-hot per element.
    np.testing.assert_array_equal(encode_action(spaces.MultiDiscrete([4, 3]), [3, 1]), [0, 0, 0, 1, 0, 1, 0])
    assert StepTimingFeatures(spaces.MultiDiscrete([4, 3])).size == 3 + 7
    with pytest.raises(TypeError, match="Box, Discrete or flat MultiDiscrete"):
        StepTimingFeatures(spaces.MultiBinary(3))
    with pytest.raises(TypeError, match="Box, Discrete or flat MultiDiscrete"):
        StepTimingFeatures(spaces.MultiDiscrete(np.array([[2, 2], [2, 2]])))


def test_the_observation_space_grows_by_the_features_with_their_bounds() -> None:
    space = timed_observation_space(spaces.Box(-5.0, 5.0, (4,), np.float32), BOX)
    assert space.shape == (4 + 3 + 2,) and space.dtype == np.float32
    np.testing.assert_array_equal(space.low[4:], [0, 0, 0, -1, -1])
    assert np.all(np.isinf(space.high[4:7])) and np.all(space.high[7:] == 1.0)
    discrete = timed_observation_space(spaces.Box(-5.0, 5.0, (4,), np.float32), spaces.Discrete(3))
    np.testing.assert_array_equal(discrete.high[7:], [1, 1, 1])
    with pytest.raises(TypeError, match="flat Box observation"):
        timed_observation_space(spaces.Box(-1.0, 1.0, (2, 2)), BOX)


class TimedSteps(gym.Env[np.ndarray, np.ndarray]):
    """Reward 1 per step, each step's executed duration from ``durations`` (None: no
    timing, as when the agent is lost)."""

    observation_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = BOX

    def __init__(self, durations: list[float | None]) -> None:
        self.durations = durations
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        duration = self.durations[self.steps % len(self.durations)]
        self.steps += 1
        info = {} if duration is None else {"duration": duration}
        return np.zeros(1, np.float32), 1.0, False, False, info


def test_a_steps_reward_is_weighted_by_the_time_its_action_took() -> None:
    env = TimeWeightedReward(TimedSteps([0.05, 0.2, None]), reference_duration=0.1)
    env.reset(seed=0)
    rewards, infos = [], []
    for _ in range(3):
        _, reward, _, _, info = env.step(np.zeros(2, np.float32))
        rewards.append(reward)
        infos.append(info)
    np.testing.assert_allclose(rewards, [0.5, 2.0, 1.0])  # a step without timing weighs 1
    assert [info["step_reward"] for info in infos] == [1.0, 1.0, 1.0]
    gymnasium_check_env(env, skip_render_check=True)
    sb3_check_env(env, warn=False)


def test_the_return_over_a_time_span_does_not_depend_on_how_it_is_cut_into_steps() -> None:
    def return_over_one_second(duration: float) -> float:
        env = TimeWeightedReward(TimedSteps([duration]), reference_duration=0.1)
        env.reset(seed=0)
        return sum(env.step(np.zeros(2, np.float32))[1] for _ in range(round(1.0 / duration)))

    assert return_over_one_second(0.02) == pytest.approx(return_over_one_second(0.25)) == pytest.approx(10.0)


def test_the_vec_wrapper_weights_each_env_and_refuses_a_bad_reference() -> None:
    venv = VecTimeWeightedReward(
        DummyVecEnv([lambda: TimedSteps([0.05]), lambda: TimedSteps([0.3])]), reference_duration=0.1
    )
    venv.reset()
    _, rewards, _, infos = venv.step(np.zeros((2, 2), np.float32))
    np.testing.assert_allclose(rewards, [0.5, 3.0])
    assert [info["step_reward"] for info in infos] == [1.0, 1.0]
    for bad in (0.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="reference_duration"):
            TimeWeightedReward(TimedSteps([0.1]), reference_duration=bad)
