"""Many agents behind one SB3 VecEnv: agent processes in their own namespaces, over DDS."""

from __future__ import annotations

import csv
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers import run_module, start_node

from spin_decoupler_ros.examples.first_order_plant.task import PlantTrackingEnv
from spin_decoupler_ros.rl.vec_env import DecoupledVecEnv, agent_namespaces
from spin_decoupler_ros.tools.processes import ProcessGroup

PLANT_AGENT = "spin_decoupler_ros.examples.first_order_plant.agent"
RL_TIMESTEP = 0.05
EPISODE_STEPS = 4


@pytest.fixture
def plant_vec_env(processes: ProcessGroup, tmp_path: Path) -> Iterator[DecoupledVecEnv]:
    namespaces = agent_namespaces(3, prefix="/plant")
    for namespace in namespaces:
        start_node(
            processes,
            PLANT_AGENT,
            tmp_path,
            namespace=namespace,
            params={"rl_timestep": RL_TIMESTEP, "control_rate": 200.0, "initial_state_range": 0.0},
            label=namespace.strip("/"),
        )
    venv = DecoupledVecEnv(lambda client: PlantTrackingEnv(client=client, max_episode_steps=EPISODE_STEPS), namespaces)
    yield venv
    venv.close()


def test_each_agent_gets_its_own_action_and_reports_its_own_timing(plant_vec_env: DecoupledVecEnv) -> None:
    plant_vec_env.seed(7)
    observations = plant_vec_env.reset()
    assert isinstance(observations, np.ndarray) and observations.shape == (3, 4)
    assert [info["agent"] for info in plant_vec_env.reset_infos] == ["/plant0", "/plant1", "/plant2"]
    actions = np.array([[1.0], [-1.0], [0.0]], dtype=np.float32)
    for _ in range(EPISODE_STEPS - 1):
        observations, _, dones, infos = plant_vec_env.step(actions)
        assert isinstance(observations, np.ndarray) and not dones.any()
    x = observations[:, 0]
    assert x[0] > 0.3 and x[1] < -0.3 and abs(x[2]) < 1e-6  # the plants started at 0
    assert np.allclose(observations[:, 1], actions[:, 0])  # the input in effect is the one sent
    for index, info in enumerate(infos):
        assert info["agent"] == f"/plant{index}" and info["seq"] == EPISODE_STEPS - 1
        # Each agent's own timing: the action ran its whole duration, up to a control
        # period's rounding (5 ms), and LAT, the previous action's span, as long at least.
        # Both end at a tick on the wall clock, which a loaded 2-core machine delays (an
        # action's end 11 ms late, LAT 56.5 ms over, seen once each), so they are bounded
        # below only: a bound above would time the machine, not the agent.
        assert info["duration"] > RL_TIMESTEP - 0.006
        assert info["lat"] > RL_TIMESTEP - 0.006
        assert info["clock_offset"] is not None


def test_finished_episodes_reset_at_once_following_sb3_conventions(plant_vec_env: DecoupledVecEnv) -> None:
    plant_vec_env.reset()
    actions = np.full((3, 1), 0.5, dtype=np.float32)
    for _ in range(EPISODE_STEPS - 1):
        plant_vec_env.step(actions)
    observations, _, dones, infos = plant_vec_env.step(actions)
    assert isinstance(observations, np.ndarray) and dones.all()
    for index, info in enumerate(infos):
        assert info["TimeLimit.truncated"] is True
        terminal = info["terminal_observation"]
        assert terminal[1] == pytest.approx(0.5)  # the last step's input
        assert observations[index][1] == 0.0  # the new episode's reset observation (input 0)
        assert plant_vec_env.reset_infos[index]["seq"] == 0
    _, _, dones, infos = plant_vec_env.step(actions)
    assert not dones.any() and all(info["seq"] == 1 for info in infos)  # a fresh episode


def test_agents_step_concurrently_not_one_after_another(plant_vec_env: DecoupledVecEnv) -> None:
    """In every VecEnv step, the three agents' actions run at the same time: each one's
    interval (its start to its observation, on the agents' shared wall clock) overlaps
    the others'. One after another, none would. (How fast a VecEnv step is, is the
    scaling benchmark's.)"""
    plant_vec_env.reset()
    actions = np.zeros((3, 1), dtype=np.float32)
    for _ in range(EPISODE_STEPS - 1):
        _, _, dones, infos = plant_vec_env.step(actions)
        if dones.any():
            break
        intervals = [(info["ato"] - info["duration"], info["ato"]) for info in infos]
        latest_start = max(start for start, _ in intervals)
        earliest_end = min(end for _, end in intervals)
        assert latest_start < earliest_end, intervals


def test_sb3_trains_on_the_vec_env(plant_vec_env: DecoupledVecEnv) -> None:
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", plant_vec_env, n_steps=16, batch_size=24, n_epochs=1, seed=0, verbose=0)
    model.learn(total_timesteps=96)
    assert model.num_timesteps == 96


def test_an_agent_missing_from_the_vec_env_is_named(processes: ProcessGroup, tmp_path: Path) -> None:
    from spin_decoupler_ros.core.errors import AgentNotFoundError

    start_node(processes, PLANT_AGENT, tmp_path, namespace="/plant0", label="plant0")
    with pytest.raises(AgentNotFoundError, match="/plant1"):
        DecoupledVecEnv(lambda client: PlantTrackingEnv(client=client), ["/plant0", "/plant1"], connect_timeout=3)


def test_an_agent_dying_mid_step_fails_the_vec_step_with_its_name(processes: ProcessGroup, tmp_path: Path) -> None:
    from spin_decoupler_ros.core.errors import StepTimeoutError

    agents = [
        start_node(processes, PLANT_AGENT, tmp_path, namespace=ns, params={"rl_timestep": RL_TIMESTEP}, label=ns[1:])
        for ns in ("/plant0", "/plant1")
    ]
    venv = DecoupledVecEnv(
        lambda client: PlantTrackingEnv(client=client),
        ["/plant0", "/plant1"],
        client_options={"step_timeout_margin": 1.0},
    )
    try:
        venv.reset()
        agents[1].kill()
        started = time.monotonic()
        with pytest.raises(StepTimeoutError, match="/plant1"):
            venv.step(np.zeros((2, 1), dtype=np.float32))
        assert time.monotonic() - started < 1.0 + 10.0  # its step timeout, and not hung
    finally:
        venv.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_main_job_trains_on_several_mock_pandas(ros_domain: dict[str, str], tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = run_module(
        "franka_agent.pipeline",
        "--num-agents",
        "2",
        "--total-timesteps",
        "200",
        "--eval-episodes",
        "1",
        "--real-time-eval",
        "no",
        "--run-dir",
        str(run_dir),
        timeout=540,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for log in ("sim_robot_panda0", "sim_robot_panda1"):  # each mock and its agent in one process
        assert (run_dir / f"{log}.log").exists(), log
    with open(run_dir / "steps.csv") as file:
        rows = list(csv.DictReader(file))
    assert {row["agent"] for row in rows} == {"/panda0", "/panda1"}
    assert len(rows) == 200
    # Each mock runs its own simulated clock (its /clock is remapped into its namespace).
    last_ato = {row["agent"]: float(row["ato"]) for row in rows}
    assert last_ato["/panda0"] != last_ato["/panda1"]
