"""The Gymnasium env against running agents: API checks, the skeletons, the plant task."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from helpers import start_node, start_panda_agent, start_panda_mock
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from spin_decoupler_ros.core.errors import ActionSpaceError
from spin_decoupler_ros.examples.first_order_plant.task import PlantTrackingEnv
from spin_decoupler_ros.rl import DecoupledEnv
from spin_decoupler_ros.rl.vec_env import DecoupledVecEnv
from spin_decoupler_ros.skeletons.skeleton_env import SkeletonEnv
from spin_decoupler_ros.tools.processes import ProcessGroup

FAST = {"rl_timestep": 0.02, "control_rate": 250.0}


@pytest.fixture
def plant(processes: ProcessGroup, tmp_path: Path) -> None:
    start_node(processes, "spin_decoupler_ros.examples.first_order_plant.agent", tmp_path, params=FAST)


@pytest.fixture
def skeleton(processes: ProcessGroup, tmp_path: Path) -> None:
    start_node(processes, "spin_decoupler_ros.skeletons.skeleton_agent", tmp_path, params=FAST)


@pytest.fixture
def plant_env(plant: None) -> Iterator[PlantTrackingEnv]:
    env = PlantTrackingEnv(max_episode_steps=20, client_options={"connect_timeout": 20})
    yield env
    env.close()


def test_base_env_builds_its_spaces_from_the_agent(plant: None) -> None:
    env = DecoupledEnv(client_options={"connect_timeout": 20}, max_episode_steps=5)
    try:
        assert env.action_space == gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        assert env.observation_space.shape == (2,)
        observation, info = env.reset(seed=1)
        assert observation.dtype == np.float32 and info["seq"] == 0
        observation, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert set(info) >= {"lat", "ato", "wall_time", "seq", "duration", "clock_offset"}
        assert info["seq"] == 1 and reward == 0.0 and not terminated and not truncated
    finally:
        env.close()


def test_env_passes_gymnasium_check_env(plant_env: PlantTrackingEnv) -> None:
    gym_check_env(plant_env, skip_render_check=True)


def test_env_passes_sb3_check_env(plant_env: PlantTrackingEnv) -> None:
    sb3_check_env(plant_env, warn=True, skip_render_check=True)


def test_episode_truncates_after_max_steps_and_info_carries_timing(plant_env: PlantTrackingEnv) -> None:
    plant_env.reset(seed=0)
    for step in range(1, 21):
        _, reward, terminated, truncated, info = plant_env.step(np.array([0.5], dtype=np.float32))
        assert info["seq"] == step and info["lat"] > 0 and reward <= 0
        assert truncated == (step == 20) and not terminated


def test_policy_chosen_durations(plant: None) -> None:
    env = DecoupledEnv(duration_range=(0.02, 0.1), client_options={"connect_timeout": 20})
    try:
        assert env.action_space.shape == (2,)
        env.reset(seed=0)
        _, _, _, _, short = env.step(np.array([0.0, -1.0], dtype=np.float32))
        _, _, _, _, long = env.step(np.array([0.0, 1.0], dtype=np.float32))
        assert short["duration"] == pytest.approx(0.02, abs=0.004)
        assert long["duration"] == pytest.approx(0.1, abs=0.004)
    finally:
        env.close()


def test_policy_chosen_then_actions(plant: None) -> None:
    """``then_action=True``: the agent's box twice, then the duration element; a then_action
    the agent's box refuses is named before anything is sent; a VecEnv of such envs sends
    each env's then_action with its action."""
    env = DecoupledEnv(then_action=True, duration_range=(0.02, 0.1), client_options={"connect_timeout": 20})
    try:
        assert env.client.description.takes_then_action
        assert env.action_space.shape == (3,)
        request = env.prepare_step(np.array([0.5, -0.5, 1.0], dtype=np.float32))
        np.testing.assert_array_equal(request.action, [0.5])
        np.testing.assert_array_equal(request.then_action, [-0.5])
        assert request.duration == pytest.approx(0.1)
        env.reset(seed=0)
        _, _, _, _, info = env.step(np.array([0.5, -0.5, 1.0], dtype=np.float32))
        assert info["duration"] == pytest.approx(0.1, abs=0.004)
        with pytest.raises(ActionSpaceError, match="then_action: action has 2 values"):
            env.client.step([0.5], then_action=[0.1, 0.2])
        _, _, _, _, info = env.step(np.array([0.5, -0.5, -1.0], dtype=np.float32))
        assert info["seq"] == 2
    finally:
        env.close()
    venv = DecoupledVecEnv(lambda client: DecoupledEnv(client=client, then_action=True), [""])
    try:
        assert venv.action_space.shape == (2,)
        venv.reset()
        channel = venv.clients[0].channel
        sent: list[tuple[Any, ...]] = []
        send_step = channel.send_step

        def recording_send_step(*args: Any) -> None:
            sent.append(args)
            send_step(*args)

        channel.send_step = recording_send_step  # type: ignore[method-assign, assignment]
        _, _, _, (info,) = venv.step(np.array([[0.5, -0.5]], dtype=np.float32))
        assert info["seq"] == 1
        ((action, _, then_action),) = sent
        np.testing.assert_array_equal(action, [0.5])
        np.testing.assert_array_equal(then_action, [-0.5])
    finally:
        venv.close()


def test_skeleton_env_and_agent_work_together(skeleton: None) -> None:
    env = SkeletonEnv(max_episode_steps=30, client_options={"connect_timeout": 20})
    try:
        gym_check_env(env, skip_render_check=True)
        observation, _ = env.reset(seed=4)
        start = observation[:2].copy()
        # Head straight for the goal at full speed: the point must move towards it.
        for _ in range(5):
            direction = observation[2:] / max(np.linalg.norm(observation[2:]), 1e-6)
            observation, _, terminated, _, _ = env.step(direction.astype(np.float32))
            if terminated:
                break
        assert np.linalg.norm(observation[2:]) < np.linalg.norm(env.goal - start)
    finally:
        env.close()


@pytest.mark.parametrize("task", ["first_order_plant", "panda_reach", "lunar_lander"])
def test_the_shipped_tasks_built_the_trainers_way_are_made_again_from_their_specs(
    task: str, processes: ProcessGroup, tmp_path: Path
) -> None:
    """The plant, the Panda reach env and the lander as their trainers build them, each
    from a client made first in the agent's namespace: the spec keeps the namespace and
    the task's arguments, the env made from it is the same task, and both checkers pass
    (Gymnasium's makes the env again from its spec)."""
    from spin_decoupler_ros.rl import RLClient

    if task == "first_order_plant":
        namespace = "/plant_a"
        start_node(
            processes, "spin_decoupler_ros.examples.first_order_plant.agent", tmp_path, namespace=namespace, params=FAST
        )
        arguments: dict[str, Any] = {"setpoint_range": 0.25, "max_episode_steps": 7}
        env: DecoupledEnv = PlantTrackingEnv(client=RLClient(namespace, connect_timeout=20), **arguments)
    elif task == "panda_reach":
        from franka_agent.reach_task import ReachEnv

        start_panda_mock(processes, tmp_path, speed=0.0)
        start_panda_agent(processes, tmp_path)
        arguments = {
            "target_low": [0.4, -0.1, 0.3],
            "target_high": [0.5, 0.1, 0.4],
            "max_episode_steps": 4,
        }
        env = ReachEnv(client=RLClient("", connect_timeout=30), **arguments)
        namespace = ""
    else:
        from spin_decoupler_ros.examples.lunar_lander.task import LunarLanderEnv

        namespace = "/lander_spec"
        start_node(
            processes, "spin_decoupler_ros.examples.lunar_lander.agent", tmp_path, namespace=namespace, label="lander"
        )
        arguments = {"max_episode_steps": 30}
        env = LunarLanderEnv(client=RLClient(namespace, connect_timeout=20), **arguments)
    try:
        assert env.spec is not None
        assert env.spec.kwargs == {"agent_namespace": namespace, **arguments}
        again = env.spec.make()
        try:
            inner = again.unwrapped
            assert type(inner) is type(env) and inner.client.channel.namespace == namespace
            assert again.observation_space == env.observation_space and again.action_space == env.action_space
        finally:
            again.close()
        gym_check_env(env, skip_render_check=True)
        sb3_check_env(env, warn=True, skip_render_check=True)
    finally:
        env.close()
