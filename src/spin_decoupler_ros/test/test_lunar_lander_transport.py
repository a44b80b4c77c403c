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


def test_the_twin_under_none_is_the_frame_skipping_lander() -> None:
    """``LunarLanderTwin`` with no think time flies as ``FrameSkipLunarLander`` does (its
    reward rebuilt as the RL side rebuilds it), seeded as a decoupled env seeds its agent."""
    from gymnasium.utils import seeding

    from spin_decoupler_ros.examples.lunar_lander.task import FrameSkipLunarLander, LunarLanderTwin

    twin, frame_skip = LunarLanderTwin(4, "none"), FrameSkipLunarLander(4)
    agent_seed = int(seeding.np_random(5)[0].integers(0, 2**31 - 1))
    observation, _ = twin.reset(seed=5)
    expected, _ = frame_skip.reset(seed=agent_seed)
    np.testing.assert_array_equal(observation, expected)
    for step, action in enumerate(np.random.default_rng(5).integers(0, 4, size=200)):
        observation, reward, terminated, truncated, info = twin.step(int(action))
        expected, expected_reward, expected_terminated, expected_truncated, _ = frame_skip.step(int(action))
        np.testing.assert_array_equal(observation, expected)
        assert reward == pytest.approx(expected_reward, abs=TOLERANCE)
        assert (terminated, truncated) == (expected_terminated, expected_truncated)
        assert (info["lat"], info["duration"]) == (0.004 if step else 0.0, 0.004)  # (LAT: the previous action's)
        if terminated or truncated:
            break
    else:
        pytest.fail("200 random actions never ended the episode")


def test_the_twin_passes_both_env_checkers_and_refuses_wall_time() -> None:
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from spin_decoupler_ros.examples.lunar_lander.task import LunarLanderTwin

    for twin in (
        LunarLanderTwin(4, "lognormal:0.002,0.008"),
        LunarLanderTwin(4, "lognormal:0.002,0.008", duration_range=(0.001, 0.008), duration_choices=8),
        LunarLanderTwin(4, "lognormal:0.002,0.008", then_action=True),
    ):
        gymnasium_check_env(twin, skip_render_check=True)
        sb3_check_env(twin)
    with pytest.raises(ValueError, match="'wall' has no twin"):
        LunarLanderTwin(4, "wall")
    for half_choice in (
        {"duration_choices": 8},
        {"duration_range": (0.001, 0.008)},
        {"duration_choices": 1, "duration_range": (0.001, 0.008)},
    ):
        with pytest.raises(ValueError, match="choosing durations needs both"):
            LunarLanderTwin(4, "none", **half_choice)  # type: ignore[arg-type]
