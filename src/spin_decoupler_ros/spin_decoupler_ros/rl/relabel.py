"""Goal relabelling (hindsight experience replay's "future" strategy) for a goal task whose
goal lives inside a flat observation, for SB3's off-policy learners.

An episode that missed its goal still shows how to reach the places it passed: when an
episode ends, each of its transitions is stored again ``n_future`` times, each time with
the goal set to where a later step of the same episode got to, its reward and
termination recomputed by the task. On a robot that is more learning from the same arm
time. SB3's own ``HerReplayBuffer`` wants dict observations; this one takes the task's
flat ones through the task (``GoalTask``).

    SAC(..., replay_buffer_class=RelabellingReplayBuffer,
        replay_buffer_kwargs={"task": task, "n_future": 4})

(test_relabel.py holds the rules.)
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer


class GoalTask(Protocol):
    """What relabelling needs of a task, on its flat observations."""

    def achieved_goal(self, observation: np.ndarray) -> np.ndarray:
        """Where the observation shows the task got to (the reach task: the TCP)."""
        ...

    def with_goal(self, observation: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """The observation as it would read were ``goal`` the episode's goal."""
        ...

    def reward(self, observation: np.ndarray) -> float: ...

    def success(self, observation: np.ndarray) -> bool:
        """Whether the episode would end here, its goal reached."""
        ...


class RelabellingReplayBuffer(ReplayBuffer):
    """A ReplayBuffer that also stores each finished episode's transitions relabelled with
    ``n_future`` goals achieved later in the same episode (see the module).

    Relabelled transitions are written ``n_envs`` at a time, as SB3's rows hold one per
    env; the few still short of a row when training ends are not stored."""

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        *args: Any,
        task: GoalTask,
        n_future: int = 4,
        **kwargs: Any,
    ) -> None:
        super().__init__(buffer_size, observation_space, action_space, *args, **kwargs)
        if n_future < 0:
            raise ValueError(f"n_future is {n_future}: relabelled copies per transition cannot be negative")
        self.task = task
        self.n_future = n_future
        self.rng = np.random.default_rng()  # (reseeded by the learner's seed: see reseed)
        self._episodes: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in range(self.n_envs)]
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, float, bool]] = []
        self.transitions = 0  # rows of the envs' own transitions stored
        self.relabelled_rows = 0  # and of relabelled ones

    def forget_unfinished_episodes(self) -> None:
        """The episodes under way are not continued (a resumed run begins them again):
        their steps stay stored, but are never relabelled with another episode's goals."""
        self._episodes = [[] for _ in range(self.n_envs)]

    def reseed(self, seed: int) -> None:
        """Draw the relabelled goals from ``seed``: a seeded run relabels the same way."""
        self.rng = np.random.default_rng(seed)

    def add(
        self,
        obs: np.ndarray,
        next_obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        super().add(obs, next_obs, action, reward, done, infos)
        self.transitions += 1
        actions = np.asarray(action).reshape((self.n_envs, self.action_dim))
        for env in range(self.n_envs):
            self._episodes[env].append((np.array(obs[env]), np.array(next_obs[env]), actions[env].copy()))
            if done[env]:
                self._relabel(self._episodes[env])
                self._episodes[env] = []
        while len(self._pending) >= self.n_envs:
            rows, self._pending = self._pending[: self.n_envs], self._pending[self.n_envs :]
            super().add(
                np.stack([row[0] for row in rows]),
                np.stack([row[1] for row in rows]),
                np.stack([row[2] for row in rows]),
                np.array([row[3] for row in rows], dtype=np.float32),
                np.array([row[4] for row in rows], dtype=np.float32),
                [{} for _ in rows],
            )
            self.relabelled_rows += 1

    def _relabel(self, episode: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Queue ``n_future`` copies of each transition, each with the goal a later step
        (or this one) achieved."""
        length = len(episode)
        for index, (obs, next_obs, action) in enumerate(episode):
            for later in self.rng.integers(index, length, self.n_future):
                goal = self.task.achieved_goal(episode[later][1])
                relabelled_next = self.task.with_goal(next_obs, goal)
                self._pending.append(
                    (
                        self.task.with_goal(obs, goal),
                        relabelled_next,
                        action,
                        self.task.reward(relabelled_next),
                        self.task.success(relabelled_next),
                    )
                )
