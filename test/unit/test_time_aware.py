"""Timing features (rl/time_aware.py) without ROS: what each feature is, and the spaces."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from spin_decoupler_ros.rl.time_aware import StepTimingFeatures, encode_action, timed_observation_space

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
    with pytest.raises(TypeError, match="Box or Discrete"):
        StepTimingFeatures(spaces.MultiBinary(3))


def test_the_observation_space_grows_by_the_features_with_their_bounds() -> None:
    space = timed_observation_space(spaces.Box(-5.0, 5.0, (4,), np.float32), BOX)
    assert space.shape == (4 + 3 + 2,) and space.dtype == np.float32
    np.testing.assert_array_equal(space.low[4:], [0, 0, 0, -1, -1])
    assert np.all(np.isinf(space.high[4:7])) and np.all(space.high[7:] == 1.0)
    discrete = timed_observation_space(spaces.Box(-5.0, 5.0, (4,), np.float32), spaces.Discrete(3))
    np.testing.assert_array_equal(discrete.high[7:], [1, 1, 1])
    with pytest.raises(TypeError, match="flat Box observation"):
        timed_observation_space(spaces.Box(-1.0, 1.0, (2, 2)), BOX)
