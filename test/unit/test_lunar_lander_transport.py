"""The RL side's LunarLander reward and termination, rebuilt from what the agent sends,
against Gymnasium's own LunarLander step for step (no ROS)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.envs.box2d.lunar_lander import LunarLander

from spin_decoupler_ros.examples.lunar_lander import transport

# The agent sends float32 observations (Gymnasium's); shaping multiplies them by 100, so
# a step's rebuilt reward may differ from Gymnasium's float64 sum by ~1e-5.
TOLERANCE = 1e-4


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("frames_per_step", [1, 2, 4])
def test_rebuilt_reward_and_termination_match_gymnasium_step_for_step(seed: int, frames_per_step: int) -> None:
    rng = np.random.default_rng(seed)
    plant = transport.LanderPlant()
    reference = LunarLander()
    plant.reset(seed)
    reference.reset(seed=seed)
    start = plant.transported()
    for _ in range(1000 // frames_per_step):
        action = int(rng.integers(4)) if rng.random() < 0.7 else 2  # enough main engine to land sometimes
        expected, terminated = 0.0, False
        for _ in range(frames_per_step):
            _, reward, terminated, _, _ = reference.step(action)
            plant.frame(action)
            expected += float(reward)
            if terminated:
                break
        end = plant.transported()
        rebuilt, rebuilt_terminated = transport.step_reward(start, end)
        assert rebuilt == pytest.approx(expected, abs=TOLERANCE)
        assert rebuilt_terminated == terminated
        start = end
        if terminated:
            break


def test_a_held_action_across_an_rl_step_boundary_still_adds_up() -> None:
    """Frames between an observation and the next action run on the old action; the
    counters and the last frame's action keep the sum exact."""
    plant = transport.LanderPlant()
    reference = LunarLander()
    plant.reset(3)
    reference.reset(seed=3)
    start = plant.transported()
    total, rebuilt_total = 0.0, 0.0
    for step in range(300):
        held, action = (step - 1) % 4, step % 4
        for frame_action in (held, action, action):  # one frame still on the previous action
            _, reward, terminated, _, _ = reference.step(frame_action)
            plant.frame(frame_action)
            total += float(reward)
            if terminated:
                break
        end = plant.transported()
        rebuilt, _ = transport.step_reward(start, end)
        rebuilt_total += rebuilt
        start = end
        if terminated:
            break
    assert rebuilt_total == pytest.approx(total, abs=TOLERANCE * 300)
