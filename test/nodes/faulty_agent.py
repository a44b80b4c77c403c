"""A first-order plant agent whose hooks fail on demand, for fault-injection tests.

Parameters: ``fail_hook`` (build_observation, apply_action, reset_workspace,
wrong_size, nan) names what goes wrong, once, at step ``fail_at_step`` of the first
episode (0: at its reset); afterwards the agent works again, as a glitch would.
"""

from __future__ import annotations

import sys

import numpy as np

from spin_decoupler_ros.examples.first_order_plant.agent import FirstOrderPlantAgent
from spin_decoupler_ros.node_runner import run_node
from spin_decoupler_ros.params import declare_int, declare_str


class FaultyAgent(FirstOrderPlantAgent):
    def __init__(self) -> None:
        super().__init__()
        self.fail_hook = declare_str(self, "fail_hook", "", "which hook fails")
        self.fail_at_step = declare_int(self, "fail_at_step", 3, "step of the first episode at which it fails")
        self._failed = False
        self._steps = 0

    def _due(self, hook: str) -> bool:
        episode = self.protocol.episode
        due = not self._failed and self.fail_hook == hook and episode is not None
        due = due and episode is not None and episode.steps == self.fail_at_step
        if due:
            self._failed = True
        return due

    def build_observation(self) -> np.ndarray:
        observation = super().build_observation()
        if self._due("build_observation"):
            raise RuntimeError("injected fault in build_observation")
        if self._due("wrong_size"):
            return np.zeros(5)
        if self._due("nan"):
            observation[0] = np.nan
        return observation

    def apply_action(self, action: np.ndarray) -> None:
        if self._due("apply_action"):
            raise RuntimeError("injected fault in apply_action")
        super().apply_action(action)

    def reset_workspace(self, seed: int | None, options: np.ndarray) -> None:
        if self._due("reset_workspace"):
            raise ValueError("injected fault in reset_workspace")
        super().reset_workspace(seed, options)


def main() -> int:
    return run_node(FaultyAgent)


if __name__ == "__main__":
    sys.exit(main())
