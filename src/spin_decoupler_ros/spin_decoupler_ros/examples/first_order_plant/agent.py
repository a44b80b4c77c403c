"""First-order plant agent: dx/dt = (K u - x) / tau, integrated on every control tick."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from spin_decoupler_ros.agent import AgentNode
from spin_decoupler_ros.node_runner import run_node
from spin_decoupler_ros.params import declare_float


class FirstOrderPlantAgent(AgentNode):
    """A first-order plant as the agent's "robot".

    Action: ``u`` in [-1, 1]. Observation: ``[x, u]``, the state and the input in
    effect. A reset places x at x0 and holds it there until the first input after the
    reset observation, so a seeded reset always observes exactly x0. The plant is
    integrated exactly over each real (or simulated) interval between control ticks,
    holding the input constant (zero-order hold), so an action acts for exactly as long
    as the agent really applied it. The null action is
    ``u = 0``: the plant relaxes to 0.

    Parameters (besides the AgentNode ones): ``gain`` K, ``time_constant`` tau (s),
    ``initial_state_range``: a reset draws x0 uniformly in [-range, range] from the
    episode's seed, unless the reset options give x0 as their first element.
    """

    simulates_its_plant = True  # a timing model may pause and run it (docs/time_models.md)

    def __init__(self, **node_kwargs: Any) -> None:
        super().__init__(
            "first_order_plant_agent",
            action_low=[-1.0],
            action_high=[1.0],
            observation_size=2,
            observation_names=("x", "u"),
            **node_kwargs,
        )

    def setup(self) -> None:
        self.gain = declare_float(self, "gain", 2.0, "plant gain K", low=-1e6, high=1e6)
        self.time_constant = declare_float(
            self, "time_constant", 0.5, "plant time constant tau", unit="s", low=1e-4, high=1e4
        )
        self.initial_state_range = declare_float(
            self, "initial_state_range", 1.0, "a reset draws x0 in [-range, range]", low=0.0, high=1e6
        )
        self.x = 0.0
        self.u = 0.0
        self._last_ns = self.now_ns()
        self._held_at_reset = False  # a reset holds x at x0 until the first input after it

    def _integrate(self) -> None:
        now = self.now_ns()
        if self._held_at_reset:
            self._last_ns = now
            return
        dt = max(0.0, (now - self._last_ns) * 1e-9)
        self._last_ns = now
        target = self.gain * self.u
        self.x = target + (self.x - target) * math.exp(-dt / self.time_constant)

    def apply_action(self, action: np.ndarray) -> None:
        self._integrate()  # the old input acted until now
        self._held_at_reset = False
        self.u = float(action[0])

    def safe_hold(self) -> None:
        if self._held_at_reset:  # a reset's x0 stays until the first action (not a hold's u = 0)
            self._integrate()
            return
        self.apply_action(self.null_action())

    def build_observation(self) -> np.ndarray:
        self._integrate()
        return np.array([self.x, self.u])

    def reset_workspace(self, seed: int | None, options: np.ndarray) -> None:
        if options.size >= 1:
            self.x = float(options[0])
        else:
            rng = np.random.default_rng(seed)
            self.x = float(rng.uniform(-self.initial_state_range, self.initial_state_range))
        self.u = 0.0
        self._held_at_reset = True


def main(args: list[str] | None = None) -> int:
    return run_node(FirstOrderPlantAgent, args)


if __name__ == "__main__":
    sys.exit(main())
