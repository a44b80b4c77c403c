"""A benchmark agent with the issue's payload: a 7-float64 action, a 30-float64 observation.

Its hooks do almost nothing (the observation is the action in effect, padded), so what a
benchmark measures with it is the decoupler itself.
"""

from __future__ import annotations

import sys

import numpy as np

from spin_decoupler_ros.agent import AgentNode
from spin_decoupler_ros.node_runner import run_node

ACTION_SIZE = 7
OBSERVATION_SIZE = 30


class EchoAgent(AgentNode):
    def __init__(self) -> None:
        super().__init__(
            "echo_agent",
            action_low=-np.ones(ACTION_SIZE),
            action_high=np.ones(ACTION_SIZE),
            observation_size=OBSERVATION_SIZE,
        )
        self._observation = np.zeros(OBSERVATION_SIZE)

    def apply_action(self, action: np.ndarray) -> None:
        self._observation[:ACTION_SIZE] = action

    def build_observation(self) -> np.ndarray:
        return self._observation

    def reset_workspace(self, seed: int | None, options: np.ndarray) -> None:
        self._observation[:] = 0.0


def main() -> int:
    return run_node(EchoAgent)


if __name__ == "__main__":
    sys.exit(main())
