"""LunarLander agent: Gymnasium's LunarLander (Box2D) as the plant, one frame per
control tick, holding the last discrete action between RL steps."""

from __future__ import annotations

import sys

import numpy as np

from spin_decoupler_ros.agent import AgentNode, AgentSpaces
from spin_decoupler_ros.examples.lunar_lander import transport
from spin_decoupler_ros.node_runner import run_node


class LunarLanderAgent(AgentNode):
    """The lander advances one physics frame (1/50 s of lander time) per control tick:
    at ``control_rate`` 50 Hz it flies in real time; faster rates fly it faster.

    Action: the discrete engine command 0..3 (noop, left, main, right) as one number
    (the nearest integer is used). Observation: the 22 numbers of ``transport`` (the raw
    observation and the physics facts the reward needs; no reward).

    Between RL steps the last action keeps firing, frame after frame, as a real plant's
    last command would, or the engine the step named as its ``then_action``. The safe
    hold (after a reset until the first step, and once the RL side has been silent past
    the watchdog, e.g. while PPO updates its networks) is a paused simulation: what a
    simulated plant can do and a real one cannot. Set ``watchdog_timeout`` to decide how
    long a stalled learner lets the lander fly on.
    """

    simulates_its_plant = True  # a timing model may pause and run it (docs/time_models.md)

    def __init__(self) -> None:
        super().__init__("lunar_lander_agent")

    def setup(self) -> None:
        self.plant = transport.LanderPlant()
        self._action = 0
        self._last_frame_ns = self.now_ns()

    def configure(self) -> AgentSpaces:
        return AgentSpaces([0.0], [3.0], transport.SIZE)

    def _frame_due(self) -> bool:
        # Frames come with the control ticks; an action arriving between ticks only
        # changes what the next frame fires.
        now = self.now_ns()
        if now - self._last_frame_ns < self.params.control_period_ns // 2:
            return False
        self._last_frame_ns = now
        return True

    def on_action_start(self, action: np.ndarray) -> None:
        self._action = int(np.rint(action[0]))

    def apply_action(self, action: np.ndarray) -> None:
        if self._frame_due():
            self.plant.frame(self._action)

    def safe_hold(self) -> None:
        self._last_frame_ns = self.now_ns()  # paused: the next frame comes a tick after resuming

    def build_observation(self) -> np.ndarray:
        return self.plant.transported()

    def reset_workspace(self, seed: int | None, options: np.ndarray) -> None:
        self.plant.reset(seed)
        self._action = 0
        # No frame yet in this episode: the first action's start runs one, as every
        # later action's does (test_time_aware_env.py::test_a_lander_policy_chooses...).
        self._last_frame_ns = self.now_ns() - self.params.control_period_ns


def main(args: list[str] | None = None) -> int:
    return run_node(LunarLanderAgent, args)


if __name__ == "__main__":
    sys.exit(main())
