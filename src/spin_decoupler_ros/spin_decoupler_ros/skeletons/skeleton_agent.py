"""Skeleton agent: copy this file to drive your own robot through the decoupler.

What to change, hook by hook (everything else, the Episode action, the step topic,
the control timer, LAT/ATO, the watchdog, lives in AgentNode):

- ``__init__``: your action box and observation size.
- ``setup()``: create the subscriptions to your robot's state and the publishers of
  its commands (never in the other hooks). It runs when the node is configured (a
  managed node: at start, unless ``start_state`` says otherwise), and what it made is destroyed
  on cleanup.
- ``apply_action(action)``: called every control tick with the current action (and
  once at the instant a new one arrives). Send your robot a command. Fast, no sleeping.
- ``build_observation()``: the observation now, from the latest state you received.
- ``reset_workspace(seed, options)``: start moving the robot to an episode's start.
  It must return at once: if it takes time, make ``reset_done()`` say when it is there.
- ``null_action()``: what "do nothing safely" is for your robot (zeros by default).

As shipped, the "robot" is a point on a plane whose velocity is the action, so the
skeleton runs, is tested, and shows each hook doing real work.

The ancestor's agent-side calls map onto this class as follows: ``readWhatToDo()``
is kept (it says what the agent is doing); ``resetSendObs``, ``stepSendObs`` and
``stepSendLastActDur`` happen on their own (the control loop sends the reset and step
observations with LAT when due), so they have no alias here: calling them by hand
would answer a step twice.
"""

from __future__ import annotations

import sys

import numpy as np

from spin_decoupler_ros.agent import AgentNode
from spin_decoupler_ros.node_runner import run_node


class SkeletonAgent(AgentNode):
    """A point on a plane. Action: velocity (vx, vy) in [-1, 1] m/s. Observation: (x, y)."""

    def __init__(self) -> None:
        super().__init__(
            "skeleton_agent",
            action_low=[-1.0, -1.0],
            action_high=[1.0, 1.0],
            observation_size=2,
            observation_names=("x", "y"),
        )

    def setup(self) -> None:
        # Your robot interface goes here (made on configure, destroyed on cleanup), e.g.
        #   self._joint_states = LatestMessage(self, JointState, "/joint_states")  # read at the tick
        #   self._command_pub = self.create_publisher(JointTrajectory, "/controller/joint_trajectory", qos)
        self.position = np.zeros(2)
        self.velocity = np.zeros(2)
        self._last_ns = self.now_ns()

    def _advance(self) -> None:
        now = self.now_ns()
        self.position += self.velocity * (now - self._last_ns) * 1e-9
        self._last_ns = now

    def apply_action(self, action: np.ndarray) -> None:
        self._advance()  # the previous velocity acted until now
        self.velocity = action.copy()

    def build_observation(self) -> np.ndarray:
        self._advance()
        return self.position.copy()

    def reset_workspace(self, seed: int | None, options: np.ndarray) -> None:
        rng = np.random.default_rng(seed)
        self.position = options[:2].copy() if options.size >= 2 else rng.uniform(-0.5, 0.5, 2)
        self.velocity = np.zeros(2)
        self._last_ns = self.now_ns()


def main(args: list[str] | None = None) -> int:
    return run_node(SkeletonAgent, args)


if __name__ == "__main__":
    sys.exit(main())
