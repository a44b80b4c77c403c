"""Skeleton env: copy this file to write the RL side of your own task.

What to change (DecoupledEnv does the talking to the agent):

- ``new_episode()``: draw the episode's task (goal, target) from ``self.np_random``;
  return reset options for the agent, if it needs any.
- ``make_observation(answer)``: what the policy sees, from the agent's observation
  (``answer.observation``) plus task state such as the goal.
- ``task_reward(observation, action, answer)`` and ``is_terminated(observation,
  answer)``: the task, computed here on the RL side. ``answer.lat`` (how long the
  previous action really ran) and ``answer.ato`` (agent time) are there for
  time-aware rewards.

As shipped it drives the skeleton agent's point to a random goal on the plane.
Run ``python -m spin_decoupler_ros.skeletons.skeleton_env`` beside a running
``skeleton_agent`` to train SAC on it for a few thousand steps.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from spin_decoupler_ros.rl import DecoupledEnv, StepAnswer


class SkeletonEnv(DecoupledEnv):
    """Reach a goal on the plane with the skeleton agent's point.

    Observation: (x, y, goal_x - x, goal_y - y). Action: the point's velocity.
    Reward: minus the distance to the goal. Terminated within 5 cm of the goal;
    truncated after ``max_episode_steps``.
    """

    def __init__(self, agent_namespace: str = "", *, max_episode_steps: int = 100, **kwargs: Any) -> None:
        super().__init__(
            agent_namespace,
            max_episode_steps=max_episode_steps,
            observation_space=spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32),
            **kwargs,
        )
        self.goal = np.zeros(2)

    def new_episode(self) -> Sequence[float]:
        self.goal = self.np_random.uniform(-0.5, 0.5, 2)
        return ()  # the agent draws its own start from the seed it is sent

    def make_observation(self, answer: StepAnswer) -> np.ndarray:
        position = answer.observation
        return np.concatenate([position, self.goal - position]).astype(np.float32)

    def task_reward(self, observation: np.ndarray, action: np.ndarray, answer: StepAnswer) -> float:
        return -float(np.linalg.norm(observation[2:]))

    def is_terminated(self, observation: np.ndarray, answer: StepAnswer) -> bool:
        return bool(np.linalg.norm(observation[2:]) < 0.05)


def main(argv: Sequence[str] | None = None) -> int:
    from stable_baselines3 import SAC

    env = SkeletonEnv(client_options={"ros_args": list(argv if argv is not None else sys.argv)})
    try:
        model = SAC("MlpPolicy", env, learning_starts=200, verbose=1)
        model.learn(total_timesteps=3000)
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
