"""Timing models on a self-clocked agent (the first-order plant process, over real DDS)
and on an agent on a lockstep simulator's clock (the Panda agent and its MuJoCo mock):
the world runs on for the think time the model draws, not the machine's, so LAT, the
durations and the observations are exact and a seeded run repeats."""

from __future__ import annotations

import csv
import itertools
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
from helpers import start_node, start_panda_agent, start_panda_mock

from franka_agent.core.profile_file import load_profile
from franka_agent.robots import read_limit_violations, timing_model_overrides
from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.core.think_time import TimingModel, TimingModelKind
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.rl.training import logged_steps
from spin_decoupler_ros.tools.isolation import isolated_ros_environment
from spin_decoupler_ros.tools.paths import find_config
from spin_decoupler_ros.tools.processes import ProcessGroup, find_process

PANDA = load_profile("panda")

PLANT = "spin_decoupler_ros.examples.first_order_plant.agent"
PANDA_AGENT = "franka_agent.panda_agent_node"
TIMESTEP = 0.05
PERIOD = 0.01
TAU = 0.2
GAIN = 2.0
ACTIONS = [0.5, -0.3, 1.0, 0.0, -1.0, 0.7, 0.2, -0.6]


def start_plant(processes: ProcessGroup, tmp_path: Path, model: str, namespace: str = "/timed") -> RLClient:
    params = {"rl_timestep": TIMESTEP, "control_rate": 1 / PERIOD, "time_constant": TAU, "gain": GAIN}
    start_node(processes, PLANT, tmp_path, namespace=namespace, params={**params, "timing_model": model})
    return RLClient(namespace, connect_timeout=20, step_timeout_margin=1.0, reset_timeout=5.0)


def relax(x: float, u: float, seconds: float) -> float:
    """The plant's exact solution over ``seconds`` at input ``u``."""
    target = GAIN * u
    return target + (x - target) * math.exp(-seconds / TAU)


def run_episode(client: RLClient, seed: int) -> list:  # type: ignore[type-arg]
    answers = [client.reset(seed=seed)]
    answers += [client.step([u]) for u in ACTIONS]
    return answers


@pytest.mark.parametrize("think", [0.0, 0.03])
def test_the_world_runs_on_for_exactly_the_think_time_the_model_gives(
    processes: ProcessGroup, tmp_path: Path, think: float
) -> None:
    model = "none" if think == 0.0 else f"fixed:{think}"
    with start_plant(processes, tmp_path, model) as client:
        answers = run_episode(client, seed=4)
        client.finish()
    x = answers[0].observation[0]
    previous_u: float | None = None  # the plant keeps a reset's x0 until the first action
    for answer, u, before in zip(answers[1:], ACTIONS, answers[:-1], strict=True):
        assert answer.duration == pytest.approx(TIMESTEP, abs=1e-9)
        assert answer.lat == pytest.approx(think + (before.duration if before.seq else 0.0), abs=1e-9)
        assert answer.ato - before.ato == pytest.approx(think + TIMESTEP, abs=1e-9)
        if previous_u is not None:
            x = relax(x, previous_u, think)
        x = relax(x, u, TIMESTEP)
        assert answer.observation == pytest.approx([x, u], abs=1e-12)
        previous_u = u


def test_a_seeded_run_under_a_jittery_model_repeats_exactly(processes: ProcessGroup, tmp_path: Path) -> None:
    with start_plant(processes, tmp_path, "lognormal:0.03,0.3") as client:
        first = run_episode(client, seed=9)
        other = run_episode(client, seed=10)
        again = run_episode(client, seed=9)
        client.finish()

    def record(answers: list) -> list[tuple[float, ...]]:  # type: ignore[type-arg]
        return [(*a.observation, a.lat, a.duration, round(a.ato - answers[0].ato, 9)) for a in answers]

    assert record(first) == record(again)
    lats = [a.lat for a in first[2:]]
    assert len(set(np.round(lats, 9))) > 1  # the think times did vary
    assert [a.lat for a in other[2:]] != lats  # and come from the seed
    for lat in lats:  # whole control periods: the plant changes its input on a tick
        assert lat / PERIOD == pytest.approx(round(lat / PERIOD), abs=1e-6)


def train_and_log(processes: ProcessGroup, tmp_path: Path, name: str, seed: int) -> list[dict[str, str]]:
    """A short SB3 SAC run on a fresh plant under a jittery model, one torch thread: its
    steps.csv rows (``StepLogCallback``, as the trainers write it)."""
    import csv

    import torch
    from stable_baselines3 import SAC

    from spin_decoupler_ros.examples.first_order_plant.task import PlantTrackingEnv
    from spin_decoupler_ros.rl.training import StepLogCallback

    torch.set_num_threads(1)
    namespace = f"/{name}"
    run_dir = tmp_path / name
    run_dir.mkdir()
    with start_plant(processes, run_dir, "lognormal:0.02,0.1", namespace=namespace) as client:
        env = PlantTrackingEnv(client=client, max_episode_steps=25)
        model = SAC("MlpPolicy", env, learning_starts=60, batch_size=32, policy_kwargs={"net_arch": [16]}, seed=seed)
        log = StepLogCallback(run_dir / "steps.csv", extra_fields=("tracking_error",))
        model.learn(total_timesteps=150, callback=log)
        client.finish()
    with open(run_dir / "steps.csv", newline="") as file:
        return list(csv.DictReader(file))


def test_a_seeded_training_run_repeats_its_steps_csv(processes: ProcessGroup, tmp_path: Path) -> None:
    """Deterministic simulated runs: the same seed, the same steps.csv in every column the
    world and the learner make (an observation's tracking error, reward, LAT, durations,
    ATO), with gradient steps in between; another seed, another run."""
    repeated = ("seq", "episode", "tracking_error", "reward", "lat", "ato", "requested_duration", "duration", "hold")
    first = train_and_log(processes, tmp_path, "first", seed=3)
    again = train_and_log(processes, tmp_path, "again", seed=3)
    other = train_and_log(processes, tmp_path, "other", seed=4)
    assert len(first) == 150 and len({row["episode"] for row in first}) == 6
    assert [[row[key] for key in repeated] for row in first] == [[row[key] for key in repeated] for row in again]
    assert [row["wall_time"] for row in first] != [row["wall_time"] for row in again]  # (two runs indeed)
    assert len({row["lat"] for row in first if row["seq"] != "1"}) > 1  # the think times varied
    assert [row["lat"] for row in other] != [row["lat"] for row in first]
    assert [row["reward"] for row in other] != [row["reward"] for row in first]


def succeed(processes: Iterable[subprocess.Popen[str]], timeout: float) -> None:
    """Wait for each process to end, each with exit code 0 (else its output is the failure)."""
    for process in processes:
        output, _ = process.communicate(timeout=timeout)
        assert process.returncode == 0, output


def panda_steps(run_dir: Path) -> list[list[str]]:
    """The main job's steps.csv in ``run_dir``: what the world and the learner made, with
    ATO counted from the run's first (the mock's epoch is its start's wall time)."""
    with open(run_dir / "steps.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    first_ato = float(rows[0]["ato"])
    made = ("episode", "seq", "lat", "requested_duration", "duration", "hold", "reward", "distance", "is_success")
    return [[row[key] for key in made] + [f"{float(row['ato']) - first_ato:.6f}"] for row in rows]


def panda_answers(run_dir: Path) -> list[tuple[float, ...]]:
    """The agent's answers in the main job's run.mcap (resets' and steps'): seq, reward and
    the float64 observation, as sent."""
    from mcap.reader import make_reader
    from rclpy.serialization import deserialize_message

    from spin_decoupler_msgs.msg import StepResult

    with open(run_dir / "run.mcap", "rb") as file:
        messages = make_reader(file).iter_messages(topics=["/panda/step_result"])
        answers = (deserialize_message(message.data, StepResult) for _, _, message in messages)
        return [(answer.seq, answer.reward, *answer.observation) for answer in answers]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_seeded_panda_training_run_repeats_its_steps_csv_in_one_process_or_two(tmp_path: Path) -> None:
    """The main job (SAC against the lockstep mock under the default replay) with one seed,
    twice at once, each in its own DDS domain, so that the two load the machine: the same
    steps.csv, past the start of learning, whether the mock and the agent share a process
    (the default, sim_robot.py) or not; and the same answers to the last bit of every
    float64 observation (run.mcap), which steps.csv's float32 distance rounds away: the
    mock's clock stands elsewhere in each run when the first command comes, and nothing
    may depend on that (test_trajectory_model.py::
    test_the_desired_state_does_not_depend_on_where_the_clock_stands)."""
    steps = 320  # learning starts at 200 (config/panda_reach.yaml)

    def train(name: str) -> subprocess.Popen[str]:
        one_process = "yes" if name == "first" else "no"
        options: tuple[str, ...] = ("--seed", "0", "--total-timesteps", str(steps), "--eval-episodes", "1")
        options += ("--real-time-eval", "no", "--one-process", one_process)
        return subprocess.Popen(
            [sys.executable, "-m", "franka_agent.pipeline", *options, "--run-dir", str(tmp_path / name)],
            env={**os.environ, **isolated_ros_environment()},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    runs = {name: train(name) for name in ("first", "again")}
    try:
        succeed(runs.values(), timeout=400)
    finally:
        for process in runs.values():
            process.kill()
    first, again = panda_steps(tmp_path / "first"), panda_steps(tmp_path / "again")
    assert (tmp_path / "first" / "sim_robot.log").exists() and (tmp_path / "again" / "panda_agent.log").exists()
    assert len(first) == steps and len({row[0] for row in first}) > 5
    assert first == again
    answers = panda_answers(tmp_path / "first")
    assert len(answers) > steps and answers == panda_answers(tmp_path / "again")


# steps.csv's columns the machine makes (wall clock, round trips, the clock offset):
# everything else is the simulated world's and the learner's, and must repeat.
MACHINE_COLUMNS = ("wall_time", "round_trip", "clock_offset")


def simulated_columns(run_dir: Path, resumed_after: int = 0) -> list[dict[str, str]]:
    """Every column of steps.csv but the machine's; ATO counted from the first step of the
    run, and after ``resumed_after`` steps from the first of the resumed run (a mock's
    epoch is its start's wall time)."""
    with open(run_dir / "steps.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    epochs = {0: float(rows[0]["ato"]), 1: float(rows[resumed_after]["ato"]) if resumed_after else 0.0}
    for index, row in enumerate(rows):
        for column in MACHINE_COLUMNS:
            del row[column]
        row["ato"] = f"{float(row['ato']) - epochs[int(0 < resumed_after <= index)]:.6f}"
    return rows


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_seeded_run_repeats_through_terminations_resets_and_a_resume(tmp_path: Path) -> None:
    """The main job under the default timing model (replay), twice at once with one seed,
    on short episodes with a wide success radius, so that many end early (a termination)
    and many at the step limit, each followed by a reset; each run is killed (SIGKILL to
    its trainer) after its first checkpoint and resumed: every simulated column of the
    two steps.csv files is equal, row for row. A reset that began at the wall time its
    goal came, with the arm still running on for the think time, once made runs part at
    the first termination (agent_base.py: _waiting_goal)."""
    steps, checkpoint = 400, 150
    config = (find_config("panda_reach.yaml", package="franka_agent")).read_text()
    short = config.replace("episode_steps: 50 ", "episode_steps: 20 ").replace(
        "success_distance: 0.02 ", "success_distance: 0.25 "
    )
    assert short.count("episode_steps: 20 ") == 1 and short.count("success_distance: 0.25 ") == 1
    (tmp_path / "short.yaml").write_text(short)
    environments = {name: {**os.environ, **isolated_ros_environment()} for name in ("first", "again")}

    def pipeline(name: str, *options: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "franka_agent.pipeline", *options],
            env=environments[name],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    options: tuple[str, ...] = ("--seed", "0", "--total-timesteps", str(steps), "--eval-episodes", "1")
    options += ("--real-time-eval", "no")
    options += ("--checkpoint-every", str(checkpoint), "--config", str(tmp_path / "short.yaml"))
    runs = {name: pipeline(name, *options, "--run-dir", str(tmp_path / name)) for name in environments}
    try:
        for name, process in runs.items():  # killed once past their first checkpoint
            deadline = time.monotonic() + 400
            while len(logged_steps(tmp_path / name / "steps.csv")) < checkpoint + 20:
                assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0]
                time.sleep(0.2)
            trainer = find_process("franka_agent.train", str(tmp_path / name))
            assert trainer is not None
            os.kill(trainer, signal.SIGKILL)
        for process in runs.values():
            process.communicate(timeout=60)
        runs = {name: pipeline(name, "--resume", str(tmp_path / name)) for name in environments}
        succeed(runs.values(), timeout=400)
    finally:
        for process in runs.values():
            process.kill()
    first, again = (simulated_columns(tmp_path / name, resumed_after=checkpoint) for name in environments)
    assert [int(row["step"]) for row in first] == list(range(1, steps + 1))
    terminations = sum(row["terminated"] == "True" for row in first)
    truncations = sum(row["truncated"] == "True" for row in first)
    for row, other in zip(first, again, strict=True):
        assert row == other
    assert terminations >= 3 and truncations >= 3, (terminations, truncations)
    # The killed trainers' recordings were recovered by the resume: any reader opens them.
    from mcap.reader import make_reader

    for name in environments:
        assert sorted(path.name for path in (tmp_path / name).glob("run*.mcap")) == ["run.2.mcap", "run.mcap"]
        with open(tmp_path / name / "run.mcap", "rb") as file:
            summary = make_reader(file).get_summary()
            assert summary is not None and summary.statistics is not None
            assert summary.statistics.message_count > 0


@pytest.mark.parametrize(
    ("module", "params", "named"),
    [
        (PLANT, {"timing_model": "later"}, "parameter 'timing_model': timing model 'later': unknown kind"),
        (PLANT, {"timing_model": "none", "use_sim_time": True}, "FirstOrderPlantAgent runs on /clock"),
        (PANDA_AGENT, {"timing_model": "fixed:0.1"}, "PandaAgent runs on wall time against a plant"),
    ],
)
def test_a_timing_model_the_agent_cannot_honour_is_refused_at_start(
    processes: ProcessGroup, tmp_path: Path, module: str, params: dict[str, object], named: str
) -> None:
    agent = start_node(processes, module, tmp_path, params=params, ready_text=None)
    assert agent.wait(timeout=20) == 2
    assert named in agent.log_text()


@pytest.mark.parametrize(("model", "think"), [("fixed:0.05", 0.05), ("none", 0.0)])
def test_the_panda_mock_waits_for_the_learner_for_exactly_the_models_think_time(
    processes: ProcessGroup, tmp_path: Path, model: str, think: float
) -> None:
    """The Panda agent stops commanding where the world is to wait, and the lockstep mock
    (``lockstep_timeout: 0``) waits with it however long the learner takes (here up to
    0.6 s of wall time, three times the timeout the mock has otherwise): every action
    starts exactly the think time after the observation, in simulated time, and no
    command breaks a limit. (The first starts where the reset's last command, sent at the
    reset observation's tick, lets the mock run: a whole number of periods on.)"""
    agent_params, mock_params = timing_model_overrides(model, mock=True)
    assert mock_params == {"lockstep": True, "lockstep_timeout": 0.0}
    start_panda_mock(processes, tmp_path, speed=0.0, **mock_params)
    start_panda_agent(processes, tmp_path, **agent_params)
    rng = np.random.default_rng(5)
    with RLClient(connect_timeout=30, reset_timeout=30) as client:
        answers = [client.reset(seed=3)]
        for i in range(12):
            time.sleep((0.0, 0.02, 0.6)[i % 3])  # a learner of uneven pace
            answers.append(client.step(rng.uniform(-1.0, 1.0, 3)))
        client.finish()
    first = answers[1].lat
    assert first >= think - 1e-9 and first / 0.01 == pytest.approx(round(first / 0.01), abs=1e-6)
    for before, answer in itertools.pairwise(answers[1:]):
        assert answer.duration == pytest.approx(0.1, abs=1e-9)
        assert answer.lat == pytest.approx(think + before.duration, abs=1e-9)
        # (ATO is seconds since the epoch here, as a float: exact to 0.24 µs.)
        assert answer.ato - before.ato == pytest.approx(think + answer.duration, abs=1e-6)
        assert answer.hold == 0.0  # the watchdog never saw a silent learner: the world waited
    assert read_limit_violations([""])["/"] == 0


def test_a_timing_model_is_refused_on_a_real_panda_and_wall_changes_nothing() -> None:
    with pytest.raises(ParameterError, match="refused on a real Panda"):
        timing_model_overrides("fixed:0.1", mock=False)
    with pytest.raises(ParameterError, match="unknown kind"):
        timing_model_overrides("later", mock=True)
    assert timing_model_overrides("wall", mock=False) == ({}, {})


def test_the_training_default_replays_recorded_think_times_on_the_mock_and_is_wall_on_the_arm() -> None:
    """An empty model (the launch files' and ``./ws main``'s default) is the recording of
    this learner's think times at real time, on the mock; a real Panda keeps ``wall``."""
    agent_params, mock_params = timing_model_overrides("", mock=True)
    model = TimingModel.parse(str(agent_params["timing_model"]))
    assert model.kind is TimingModelKind.REPLAY and model.recorded_s is not None and len(model.recorded_s) >= 500
    assert mock_params == {"lockstep": True, "lockstep_timeout": 0.0}
    assert timing_model_overrides("", mock=False) == ({}, {})


def test_a_mock_without_a_lockstep_timeout_waits_at_its_horizon_and_repeats_its_clock(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    """``lockstep_timeout: 0``: once commanded, the mock simulates to the command's first
    point and stands there however long; meanwhile it repeats its last /clock (best
    effort for rclpy's time source: one lost would leave the agent short of its tick)."""
    from builtin_interfaces.msg import Duration
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rosgraph_msgs.msg import Clock
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from spin_decoupler_ros.rl.client import init_private_context

    start_panda_mock(processes, tmp_path, speed=0.0, lockstep=True, lockstep_timeout=0.0)
    context = init_private_context()
    node = Node("lockstep_commander", context=context)
    stamps: list[int] = []
    node.create_subscription(Clock, "/clock", lambda msg: stamps.append(msg.clock.sec * 10**9 + msg.clock.nanosec), 10)
    publisher = node.create_publisher(JointTrajectory, "/joint_trajectory_controller/joint_trajectory", 10)

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)

    def spin(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.01)

    try:
        deadline = time.monotonic() + 10
        while (publisher.get_subscription_count() == 0 or not stamps) and time.monotonic() < deadline:
            spin(0.05)
        assert stamps, "no /clock from the mock"
        hold = JointTrajectoryPoint(
            positions=list(PANDA.home), velocities=[0.0] * 7, time_from_start=Duration(nanosec=100_000_000)
        )
        # The first sample can go before the mock's reader knows this writer (then it is
        # not delivered): send the hold until the mock has run towards its point.
        start = stamps[-1]
        deadline = time.monotonic() + 10
        while stamps[-1] < start + 50_000_000 and time.monotonic() < deadline:
            publisher.publish(JointTrajectory(joint_names=list(PANDA.joint_names), points=[hold]))
            spin(0.1)
        assert stamps[-1] >= start + 50_000_000, "the mock never ran to the command's point"
        spin(0.3)  # it simulates to the point (at once, flat out), then waits
        before = len(stamps)
        spin(1.0)
        waiting = stamps[before:]
    finally:
        node.destroy_node()
        context.try_shutdown()
    assert len(waiting) >= 5, f"{len(waiting)} /clock messages in a second of waiting"
    assert len(set(waiting)) == 1, "time moved without a command"
