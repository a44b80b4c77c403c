"""Goal relabelling: each finished episode's transitions stored again with goals a later
step achieved, their rewards and terminations the task's."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from spin_decoupler_ros.rl.relabel import RelabellingReplayBuffer


class _LineTask:
    """Observation [position, goal]: reward minus the distance, reached within 0.1."""

    def achieved_goal(self, observation: np.ndarray) -> np.ndarray:
        return observation[:1].copy()

    def with_goal(self, observation: np.ndarray, goal: np.ndarray) -> np.ndarray:
        return np.array([observation[0], goal[0]], dtype=observation.dtype)

    def reward(self, observation: np.ndarray) -> float:
        return -abs(float(observation[0] - observation[1]))

    def success(self, observation: np.ndarray) -> bool:
        return abs(float(observation[0] - observation[1])) < 0.1


def _buffer(n_envs: int = 1, n_future: int = 3) -> RelabellingReplayBuffer:
    space = spaces.Box(-10.0, 10.0, (2,), dtype=np.float32)
    action = spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
    buffer = RelabellingReplayBuffer(1000, space, action, n_envs=n_envs, task=_LineTask(), n_future=n_future)
    buffer.reseed(0)
    return buffer


def _episode(buffer: RelabellingReplayBuffer, length: int, goal: float = 5.0) -> None:
    """Walk from 0 by +1 a step towards ``goal``, never reaching it: truncated at the end."""
    for step in range(length):
        obs = np.array([[step, goal]], dtype=np.float32)
        next_obs = np.array([[step + 1, goal]], dtype=np.float32)
        last = step == length - 1
        info = {"TimeLimit.truncated": last}
        buffer.add(obs, next_obs, np.array([[1.0]]), np.array([-abs(goal - step - 1)]), np.array([last]), [info])


def test_an_episode_is_stored_once_then_relabelled_n_future_times_when_it_ends() -> None:
    buffer = _buffer(n_future=3)
    _episode(buffer, 4)
    assert buffer.size() == 4 + 4 * 3
    assert (buffer.transitions, buffer.relabelled_rows) == (4, 12)
    real, relabelled = slice(0, 4), slice(4, 16)
    assert np.all(buffer.observations[real, 0, 1] == 5.0)  # the episode's own goal first
    goals = buffer.observations[relabelled, 0, 1]
    positions = buffer.observations[relabelled, 0, 0]
    reached = buffer.next_observations[relabelled, 0, 0]
    # Each goal is where this step or a later one of the episode got to (1 to 4).
    assert np.all(goals >= positions + 1) and np.all(goals <= 4)
    np.testing.assert_array_equal(buffer.next_observations[relabelled, 0, 1], goals)
    np.testing.assert_allclose(buffer.rewards[relabelled, 0], -np.abs(reached - goals))
    np.testing.assert_array_equal(buffer.dones[relabelled, 0], np.abs(reached - goals) < 0.1)
    assert buffer.dones[relabelled, 0].any()  # a goal reached by the step itself ends the episode there
    np.testing.assert_array_equal(buffer.actions[relabelled, 0, 0], 1.0)


def test_the_same_seed_relabels_the_same_way_and_another_seed_otherwise() -> None:
    first, second, other = _buffer(), _buffer(), _buffer()
    other.reseed(1)
    for buffer in (first, second, other):
        _episode(buffer, 6)
    np.testing.assert_array_equal(first.observations, second.observations)
    assert not np.array_equal(first.observations, other.observations)


def test_several_envs_fill_whole_rows_and_keep_their_episodes_apart() -> None:
    buffer = _buffer(n_envs=2, n_future=1)
    for step in range(3):
        obs = np.array([[step, 5.0], [-step, -5.0]], dtype=np.float32)
        next_obs = np.array([[step + 1, 5.0], [-step - 1, -5.0]], dtype=np.float32)
        done = np.array([step == 2, False])
        buffer.add(obs, next_obs, np.ones((2, 1)), np.zeros(2), done, [{}, {}])
    # Three rows of real steps; the first env's episode (3 steps) relabelled once each:
    # one whole row of two, one transition still waiting for its row-mate.
    assert buffer.size() == 3 + 1
    relabelled = buffer.observations[3]
    assert np.all(relabelled[:, 1] > 0)  # goals from the first env's episode only
    assert len(buffer._pending) == 1


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="n_future is -1"):
        _buffer(n_future=-1)


def test_an_episode_begun_again_is_not_relabelled_with_the_next_ones_goals() -> None:
    """A resumed run begins the episode under way at its checkpoint again: the steps it
    had stay stored, and the next episode's relabelling reaches no further back."""
    buffer = _buffer(n_future=2)
    for step in range(3):  # an unfinished episode towards 5
        obs, next_obs = np.array([[step, 5.0]], dtype=np.float32), np.array([[step + 1, 5.0]], dtype=np.float32)
        buffer.add(obs, next_obs, np.array([[1.0]]), np.array([0.0]), np.array([False]), [{}])
    buffer.forget_unfinished_episodes()
    _episode(buffer, 2, goal=-5.0)
    assert buffer.size() == 3 + 2 + 2 * 2
    assert np.all(buffer.observations[5:9, 0, 0] < 2)  # relabelled: only the new episode's two steps
