"""The reach task, on the RL side: reward and termination from the agent's observations.

``ReachTask`` holds the task itself (targets, observation, reward, success), shared by
``ReachEnv`` (through the decoupler, the real thing) and the in-process env of the
throughput benchmark, so both are one and the same task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from spin_decoupler_ros.rl import DecoupledEnv, StepAnswer

# The arm agent's observation ends with the TCP position; the task's ends with the target
# and the error (target - TCP, in decimetres): both are found from the end, whatever the
# arm's number of joints.
TCP = slice(-3, None)
ERROR = slice(-3, None)
# In the task's observation: the agent's TCP, then the target, then the error.
TASK_TCP = slice(-9, -6)
TARGET = slice(-6, -3)
ERROR_PER_METRE = 10.0
RESETS = ("home", "here")  # where an episode starts: ReachEnv's reset_from


def observation_size(dof: int) -> int:
    """The task's observation for an arm of ``dof`` joints: the agent's (positions,
    velocities, TCP), the target and the error."""
    return 2 * dof + 3 + 3 + 3


class ReachTask:
    """Targets drawn in a box; observation = agent's + target + (target - TCP) in
    decimetres (the quantity the policy needs most, at order one next to joint angles);
    reward = -``reward_per_metre`` x distance; success within ``success_distance``.

    The default 10 per metre keeps rewards of order one (a few tenths of a metre away):
    with raw metres, SAC's entropy bonus drowns the task and it learned 10x slower here.
    """

    def __init__(
        self,
        target_low: Sequence[float],
        target_high: Sequence[float],
        success_distance: float,
        reward_per_metre: float = 10.0,
    ) -> None:
        self.target_low = np.asarray(target_low, dtype=np.float64)
        self.target_high = np.asarray(target_high, dtype=np.float64)
        if self.target_low.shape != (3,) or np.any(self.target_low > self.target_high):
            raise ValueError(f"target box needs 3 values, low <= high; got {self.target_low} and {self.target_high}")
        self.success_distance = success_distance
        self.reward_per_metre = reward_per_metre
        self.target = (self.target_low + self.target_high) / 2

    def draw_target(self, rng: np.random.Generator) -> None:
        self.target = rng.uniform(self.target_low, self.target_high)

    def observation(self, agent_observation: np.ndarray) -> np.ndarray:
        error = (self.target - agent_observation[TCP]) * ERROR_PER_METRE
        return np.concatenate([agent_observation, self.target, error]).astype(np.float32)

    @staticmethod
    def achieved_goal(observation: np.ndarray) -> np.ndarray:
        """Where the TCP is, from a task observation (goal relabelling: rl/relabel.py)."""
        return np.array(observation[TASK_TCP], dtype=np.float64)

    @staticmethod
    def with_goal(observation: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """The task observation as it would read with ``goal`` as the target."""
        relabelled = np.array(observation, copy=True)
        relabelled[TARGET] = goal
        relabelled[ERROR] = (goal - observation[TASK_TCP]) * ERROR_PER_METRE
        return relabelled

    @staticmethod
    def distance(observation: np.ndarray) -> float:
        """Distance (m) from the TCP to the target, from a task observation."""
        return float(np.linalg.norm(observation[ERROR])) / ERROR_PER_METRE

    def reward(self, observation: np.ndarray) -> float:
        return -self.reward_per_metre * self.distance(observation)

    def success(self, observation: np.ndarray) -> bool:
        return self.distance(observation) < self.success_distance

    def info(self, observation: np.ndarray) -> dict[str, Any]:
        distance = self.distance(observation)
        return {"distance": distance, "is_success": distance < self.success_distance}


class ReachEnv(DecoupledEnv):
    """Bring an arm's TCP to a target drawn anew each episode.

    The agent only moves the arm and reports its state (the ancestor's LunarLander
    pattern): targets, reward and termination live here.

    ## Observation (2 x joints + 9, float32; 23 for a 7-joint arm)
    The agent's (joint positions, joint velocities, TCP position), the target (3, m)
    and the target minus the TCP (3, in decimetres: order one, like the rest).

    ## Action
    The agent's: with ``action_mode: ee_delta``, a TCP displacement in [-1, 1]^3.

    ## Reward
    Minus ``reward_per_metre`` times the distance (m) from the TCP to the target, every
    step (10 by default: rewards of order one).

    ## Episode end
    Terminated when the TCP is within ``success_distance`` of the target (a success);
    truncated after ``max_episode_steps``. ``info["is_success"]`` says which.

    ## Reset
    ``reset_from="home"``: the agent takes the arm home (plus its reset noise from the
    episode's seed). ``"here"``: after a success the next target is reached for from
    where the arm stands (the joint positions of the last answer, sent as the agent's
    reset pose): the reset costs the arm a brake to rest, not a trip home. After a
    failure (truncated: the arm may be anywhere, and starts from home stay in the data
    while the policy still fails), for the first episode and after a lost agent: home.
    Evaluation uses home resets (``evaluate_policy``), so policies are compared from the
    same starts.

    :param target_low: lower corner of the box targets are drawn from (m).
    :param target_high: its upper corner (m); keep it inside the agent's workspace box.
    :param success_distance: how close counts as reached (m).
    :param reward_per_metre: reward scale (see ``ReachTask``).
    :param reset_from: "home" or "here" (see Reset).
    """

    def __init__(
        self,
        agent_namespace: str = "",
        *,
        target_low: Sequence[float] = (0.35, -0.25, 0.2),
        target_high: Sequence[float] = (0.6, 0.25, 0.55),
        success_distance: float = 0.02,
        reward_per_metre: float = 10.0,
        max_episode_steps: int = 50,
        reset_from: str = "home",
        **kwargs: Any,
    ) -> None:
        if reset_from not in RESETS:
            raise ValueError(f"reset_from is {reset_from!r}: it takes one of {', '.join(RESETS)}")
        super().__init__(agent_namespace, max_episode_steps=max_episode_steps, **kwargs)
        size = self.client.observation_size
        if size < 9 or (size - 3) % 2:
            raise ValueError(
                f"the reach task needs an arm agent's observation (joint positions, velocities, TCP), "
                f"the agent gives {size} values"
            )
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(size + 6,), dtype=np.float32)
        self.task = ReachTask(target_low, target_high, success_distance, reward_per_metre)
        self.reset_from = reset_from
        self._dof = (size - 3) // 2
        self._stands_at: np.ndarray | None = None  # the joint positions of the last answer
        self._succeeded = False  # whether the last answered step reached its target

    def new_episode(self) -> Sequence[float]:
        self.task.draw_target(self.np_random)
        if self.reset_from == "here" and self._succeeded and self._stands_at is not None:
            return tuple(float(q) for q in self._stands_at)  # the agent's reset pose
        return ()  # the agent draws its start pose from the seed it is sent

    def make_observation(self, answer: StepAnswer) -> np.ndarray:
        self._stands_at = np.array(answer.observation[: self._dof])
        return self.task.observation(answer.observation)

    def task_reward(self, observation: np.ndarray, action: np.ndarray, answer: StepAnswer) -> float:
        return self.task.reward(observation)

    def is_terminated(self, observation: np.ndarray, answer: StepAnswer) -> bool:
        # (A lost agent truncates after its last answered step, which did not succeed.)
        self._succeeded = self.task.success(observation)
        return self._succeeded

    def step_info(self, observation: np.ndarray, answer: StepAnswer) -> dict[str, Any]:
        return self.task.info(observation)
