"""The timing-feature wrappers over a real decoupled env and VecEnv (first-order plants
under a fixed think time, so every feature is known exactly)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from helpers import start_node
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from spin_decoupler_ros.rl import DecoupledEnv
from spin_decoupler_ros.rl.time_aware import TimingInObservation, VecTimingInObservation
from spin_decoupler_ros.rl.vec_env import DecoupledVecEnv
from spin_decoupler_ros.tools.processes import ProcessGroup

PLANT = "spin_decoupler_ros.examples.first_order_plant.agent"
LANDER = "spin_decoupler_ros.examples.lunar_lander.agent"
TIMESTEP = 0.05


def start_plant(processes: ProcessGroup, tmp_path: Path, namespace: str, think: float) -> None:
    params = {"rl_timestep": TIMESTEP, "control_rate": 100.0, "timing_model": f"fixed:{think}"}
    start_node(processes, PLANT, tmp_path, namespace=namespace, params=params, label=namespace.strip("/"))


def test_the_wrapped_env_shows_the_timing_and_passes_both_checkers(processes: ProcessGroup, tmp_path: Path) -> None:
    start_plant(processes, tmp_path, "/aware", 0.03)
    env = TimingInObservation(DecoupledEnv("/aware", client_options={"connect_timeout": 20}, max_episode_steps=4))
    try:
        observation, _ = env.reset(seed=1)
        assert observation.shape == (2 + 3 + 1,)
        np.testing.assert_array_equal(observation[2:], 0.0)
        first, *_ = env.step(np.array([0.5], dtype=np.float32))
        np.testing.assert_allclose(first[2:], [0.03, TIMESTEP, 0.03, 0.5], atol=1e-6)
        second, *_ = env.step(np.array([-0.25], dtype=np.float32))
        np.testing.assert_allclose(second[2:], [0.03 + TIMESTEP, TIMESTEP, 0.03, -0.25], atol=1e-6)
        assert env.observation_space.contains(second)
        gymnasium_check_env(env, skip_render_check=True)
        sb3_check_env(env, warn=False)
    finally:
        env.close()


def test_the_vec_wrapper_gives_each_agent_its_timing_and_restarts_it_with_each_episode(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    thinks = {"/slow": 0.04, "/fast": 0.01}
    for namespace, think in thinks.items():
        start_plant(processes, tmp_path, namespace, think)
    venv = VecTimingInObservation(
        DecoupledVecEnv(lambda client: DecoupledEnv(client=client, max_episode_steps=2), list(thinks))
    )
    try:
        observations = np.asarray(venv.reset())
        assert observations.shape == (2, 6) and np.all(observations[:, 2:] == 0.0)
        actions = np.array([[0.5], [-0.5]], dtype=np.float32)
        stepped, _, dones, _ = venv.step(actions)
        observations = np.asarray(stepped)
        assert not dones.any()
        np.testing.assert_allclose(observations[:, 4], list(thinks.values()), atol=1e-6)  # think, per agent
        np.testing.assert_allclose(observations[:, 5], [0.5, -0.5])
        stepped, _, dones, infos = venv.step(actions)
        observations = np.asarray(stepped)
        assert dones.all()  # the episodes end at 2 steps; the VecEnv resets them at once
        np.testing.assert_array_equal(observations[:, 2:], 0.0)
        for info, think in zip(infos, thinks.values(), strict=True):
            final = info["terminal_observation"]
            assert final.shape == (6,)
            np.testing.assert_allclose(final[2:5], [think + TIMESTEP, TIMESTEP, think], atol=1e-6)
    finally:
        venv.close()


def test_sb3_trains_through_the_vec_wrapper(processes: ProcessGroup, tmp_path: Path) -> None:
    from stable_baselines3 import PPO

    start_plant(processes, tmp_path, "/learner", 0.02)
    venv = VecTimingInObservation(
        DecoupledVecEnv(lambda client: DecoupledEnv(client=client, max_episode_steps=8), ["/learner"])
    )
    try:
        model = PPO("MlpPolicy", venv, n_steps=32, batch_size=16, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=64)
        assert model.num_timesteps >= 64
    finally:
        venv.close()


def test_a_lander_policy_chooses_its_engine_and_its_duration(processes: ProcessGroup, tmp_path: Path) -> None:
    """LunarLander with ``duration_choices``: a MultiDiscrete action whose second element
    picks one of the durations evenly over the range, run by the agent as asked (here
    under ``none``: exact frames of simulated time), seen in the timing features."""
    from spin_decoupler_ros.examples.lunar_lander.task import LunarLanderEnv

    params = {"control_rate": 1000.0, "rl_timestep": 0.004, "timing_model": "none"}
    start_node(processes, LANDER, tmp_path, namespace="/lander", params=params, label="lander")
    env = LunarLanderEnv(
        "/lander", duration_range=(0.001, 0.007), duration_choices=4, client_options={"connect_timeout": 20}
    )
    wrapped = TimingInObservation(env)
    try:
        wrapped.reset(seed=2)
        for choice, frames in ((0, 1), (3, 7), (1, 3)):
            observation, _, _, _, info = wrapped.step(np.array([2, choice]))
            assert info["frames"] == frames
            np.testing.assert_allclose(observation[8 + 1], frames / 1000.0, atol=1e-9)  # the duration feature
            np.testing.assert_array_equal(observation[8 + 3 :], np.eye(4)[2].tolist() + np.eye(4)[choice].tolist())
        gymnasium_check_env(wrapped, skip_render_check=True)
    finally:
        wrapped.close()


def test_the_learners_work_runs_while_the_agent_acts(processes: ProcessGroup, tmp_path: Path) -> None:
    """``while_acting`` runs once the command is out: the agent executes the action
    meanwhile, so the observation is taken one duration after sending, not after the
    learner's work (here 0.6 s, twelve durations), for one env and for the VecEnv's agents.
    An answer taken after that work gives no clock offset (it would be off by half the
    wait); one taken as it arrived gives the offset within its uncertainty (the same host:
    the true offset is 0)."""
    work = 0.6
    period = 0.01  # (control_rate 100 Hz: an action ends on the tick nearest its duration)
    for namespace in ("/single", "/vec"):
        params = {"rl_timestep": TIMESTEP, "control_rate": 100.0, "timing_model": "wall", "use_sim_time": False}
        start_node(processes, PLANT, tmp_path, namespace=namespace, params=params, label=namespace.strip("/"))

    def taken_after_sending(info: dict[str, float], sent: float) -> float:
        return info["ato"] - (info["clock_offset"] or 0.0) - sent

    env = DecoupledEnv("/single", client_options={"connect_timeout": 20})
    venv = DecoupledVecEnv(lambda client: DecoupledEnv(client=client), ["/vec"])
    try:
        env.reset(seed=1)
        venv.reset()
        calls: list[float] = []

        def learners_work() -> None:
            calls.append(time.time())
            time.sleep(work)

        env.while_acting = venv.while_acting = learners_work
        for _ in range(3):
            sent = time.time()
            _, _, _, _, info = env.step(np.array([0.5], dtype=np.float32))
            assert TIMESTEP - period <= taken_after_sending(info, sent) < work, info
            sent = time.time()
            _, _, _, (vec_info,) = venv.step(np.array([[0.5]], dtype=np.float32))
            assert TIMESTEP - period <= taken_after_sending(vec_info, sent) < work, vec_info
            assert info["clock_offset"] is None and vec_info["clock_offset"] is None, (info, vec_info)
        assert len(calls) == 6
        env.while_acting = None
        _, _, _, _, info = env.step(np.array([0.5], dtype=np.float32))
        uncertainty_ns = env.client.channel.offsets.uncertainty_ns
        assert info["clock_offset"] is not None and uncertainty_ns is not None, info
        assert abs(info["clock_offset"]) <= uncertainty_ns * 1e-9 + 1e-6, (info, uncertainty_ns)
    finally:
        venv.close()
        env.close()


@pytest.mark.parametrize(
    ("duration_choices", "then_action"),
    [(0, False), (8, False), (0, True), (8, True)],
    ids=["fixed_durations", "chosen_durations", "then_action", "then_action_chosen_durations"],
)
def test_the_twin_is_the_decoupled_lander_under_jitter(
    processes: ProcessGroup, tmp_path: Path, duration_choices: int, then_action: bool
) -> None:
    """``LunarLanderTwin`` against a real LunarLander agent under a lognormal think time,
    the same seed and actions over three episodes (the first seeded, as SB3 does): the
    same observations, rewards, episode ends, LAT and durations, to the bit, with fixed
    durations, durations the actions choose, and a ``then_action`` firing while the
    learner thinks; and the think time the twin reveals (``upcoming_think_s``) is the one
    the next step's LAT shows. bench/time_aware.py --twin counts on it."""
    from spin_decoupler_ros.examples.lunar_lander.task import LunarLanderEnv, LunarLanderTwin

    model = "lognormal:0.002,0.008"
    params = {"control_rate": 1000.0, "rl_timestep": 0.004, "timing_model": model}
    start_node(processes, LANDER, tmp_path, namespace="/twin", params=params, label="lander")
    choosing: dict[str, Any] = (
        {"duration_range": (0.001, 0.008), "duration_choices": duration_choices} if duration_choices else {}
    )
    choosing["then_action"] = then_action
    rng = np.random.default_rng(7)
    engines, thens = rng.integers(0, 4, size=60), rng.integers(0, 4, size=60)
    choices = rng.integers(0, max(duration_choices, 1), size=60)
    actions: list[Any] = [
        np.array([engine, *([then] if then_action else []), *([choice] if duration_choices else [])])
        for engine, then, choice in zip(engines, thens, choices, strict=True)
    ]
    if not (duration_choices or then_action):
        actions = [int(action[0]) for action in actions]

    drawn: list[float] = []  # the twin's think times

    def play(env: Any) -> list[tuple[Any, ...]]:
        trace: list[tuple[Any, ...]] = []
        for episode in range(3):
            observation, _ = env.reset(seed=11 if episode == 0 else None)
            trace.append((observation.tolist(),))
            for action in actions:
                think = getattr(env, "upcoming_think_s", None)
                observation, reward, terminated, truncated, info = env.step(action)
                trace.append((observation.tolist(), reward, terminated, truncated, info["lat"], info["duration"]))
                if think is not None:  # (the twin: the think time it drew is the one LAT shows)
                    drawn.append(think)
                    assert info["lat"] - (trace[-2][-1] if len(trace[-2]) > 1 else 0.0) == pytest.approx(think)
                if terminated or truncated:
                    break
        return trace

    twin = play(LunarLanderTwin(4, model, **choosing))
    env = LunarLanderEnv("/twin", client_options={"connect_timeout": 20}, **choosing)
    try:
        decoupled = play(env)
    finally:
        env.close()
    assert len(twin) > 3 * 5
    assert len(set(drawn)) > 3  # (think times ran, and varied)
    if duration_choices:  # (the durations were the chosen ones, and more than one)
        assert len({step[-1] for step in twin if len(step) > 1}) > 3
    assert twin == decoupled
