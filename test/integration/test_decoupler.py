"""The decoupler end to end: a plant agent process and the RL client over real DDS."""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from action_msgs.msg import GoalStatus, GoalStatusArray
from helpers import start_node
from rclpy.qos import qos_profile_action_status_default

from spin_decoupler_ros.core import ActionSpaceError, AgentNotFoundError, NotResetError, StepTimeoutError
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup

PLANT = "spin_decoupler_ros.examples.first_order_plant.agent"
NAMESPACE = "/plant"
TIMESTEP = 0.05
PERIOD = 0.01  # 100 Hz, the agents' default
# How late a tick may run is the machine's business, measured by the benchmarks
# (step_overhead, control_loop); tests check what holds however late it runs: an action
# never ends early, and LAT, durations and ATO agree with each other. Timeouts are
# checked never to fire early, and to fire (within this much).
HANG = 10.0
# A finished episode's goal leaves the action's status messages within this
# (episode_server.RESULT_KEPT_S, twice over, and a margin).
FINISHED_GOALS_GONE_WITHIN_S = 4.0


@pytest.fixture
def plant(processes: ProcessGroup, tmp_path: Path) -> NodeProcess:
    return start_node(
        processes,
        PLANT,
        tmp_path,
        namespace=NAMESPACE,
        params={"rl_timestep": TIMESTEP, "control_rate": 1 / PERIOD, "time_constant": 0.2, "gain": 2.0},
    )


@pytest.fixture
def client(plant: NodeProcess) -> Iterator[RLClient]:
    with RLClient(NAMESPACE, connect_timeout=20, step_timeout_margin=1.0, reset_timeout=5.0) as c:
        yield c


def test_reset_step_finish_round_trip(client: RLClient) -> None:
    assert client.action_spec.size == 1 and client.observation_size == 2
    assert client.rl_timestep == pytest.approx(TIMESTEP)
    reset = client.reset(seed=3)
    assert reset.seq == 0 and reset.observation.shape == (2,) and reset.lat == 0.0
    for seq in range(1, 6):
        answer = client.step([0.5])
        assert answer.seq == seq
        assert answer.observation[1] == pytest.approx(0.5)  # the input in effect is ours
    client.finish()
    # A finished client can start over: the agent is idle again.
    assert client.reset(seed=3).seq == 0


def test_seeded_resets_are_reproducible_and_options_reach_the_agent(client: RLClient) -> None:
    first = client.reset(seed=11).observation
    again = client.reset(seed=11).observation
    np.testing.assert_array_equal(first, again)
    placed = client.reset(options=[0.75]).observation
    assert placed[0] == pytest.approx(0.75)


def assert_timing_is_consistent(answers: list, requested: list[float]) -> None:  # type: ignore[type-arg]
    """What holds however late the agent's ticks run: each action ran at least its
    duration in whole control periods less half a period (its observation is due on the
    tick nearest that); the next step's LAT (the previous action's real duration) covers
    it; and each observation comes at least that duration after the one before."""
    for answer, duration in zip(answers, requested, strict=True):
        periods = max(1, round(duration / PERIOD))
        assert answer.duration >= (periods - 0.5) * PERIOD - 1e-9, (duration, answer.duration)
        assert answer.duration < duration + HANG
    for before, after in itertools.pairwise(answers):
        assert after.lat >= before.duration, (before.duration, after.lat)
        assert after.ato - before.ato >= after.duration, (before.ato, after.ato, after.duration)


def test_lat_and_durations_agree_with_the_requested_duration(client: RLClient) -> None:
    client.reset()
    answers = [client.step([0.1]) for _ in range(40)]
    assert_timing_is_consistent(answers, [TIMESTEP] * len(answers))


def test_ato_strictly_increases(client: RLClient) -> None:
    atos = [client.reset().ato] + [client.step([0.0]).ato for _ in range(20)]
    assert np.all(np.diff(atos) > 0)


def test_commanded_action_really_moves_the_plant(client: RLClient) -> None:
    """The ancestor's skeleton dropped the received action; here it must reach the plant."""
    client.reset(options=[0.0])
    xs = [client.step([1.0]).observation[0] for _ in range(20)]  # 1 s at u = 1, tau = 0.2 s
    assert np.all(np.diff(xs) > 0)
    assert xs[-1] == pytest.approx(2.0 * (1 - np.exp(-1.0 / 0.2)), abs=0.05)  # K u (1 - e^{-t/tau})
    down = [client.step([-1.0]).observation[0] for _ in range(5)]
    assert np.all(np.diff([xs[-1], *down]) < 0)


def test_variable_per_step_durations(client: RLClient) -> None:
    client.reset()
    requested = [0.02, 0.05, 0.12, 0.3, 0.01]
    answers = [client.step([0.0], duration=d) for d in requested]
    answers.append(client.step([0.0]))
    assert_timing_is_consistent(answers, [*requested, TIMESTEP])
    # The long one ran longer than the short ones could, however late their ticks were.
    assert answers[3].duration > 0.12 + PERIOD


def test_many_episodes_leave_nothing_behind_in_the_client(client: RLClient) -> None:
    """A training run is thousands of episodes, each an Episode goal: what the client keeps
    per goal (futures its executor walks on every callback, feedback callbacks, executor
    tasks) must not grow with their number."""
    action_client = client.channel._action_client
    for _ in range(30):
        client.reset()
        client.step([0.0])
    client.finish()
    client.reset()
    assert len(action_client._futures) <= 3, "futures of finished episodes are kept"
    assert len(action_client._feedback_callbacks) <= 3
    assert len(client.rl_node.executor._tasks) <= 3


def test_finished_episodes_leave_the_action_status_soon(client: RLClient) -> None:
    """Each status message of the Episode action lists every goal the agent keeps, and
    each client converts the whole list on every goal change: finished episodes must
    leave it within seconds, or short episodes make every reset slower."""
    latest: list[GoalStatusArray] = []
    client.rl_node.node.create_subscription(
        GoalStatusArray, f"{NAMESPACE}/episode/_action/status", latest.append, qos_profile_action_status_default
    )
    for _ in range(3):
        client.reset()
        client.step([0.0])
    client.finish()
    deadline = time.monotonic() + FINISHED_GOALS_GONE_WITHIN_S
    while time.monotonic() < deadline:
        client.rl_node.spin_once(0.05)
    latest.clear()
    client.reset()
    deadline = time.monotonic() + HANG
    while not latest and time.monotonic() < deadline:
        client.rl_node.spin_once(0.05)
    assert latest, "no status message came after the reset"
    kept = len(latest[-1].status_list)
    assert kept == 1, f"the status lists {kept} goals: finished episodes are kept"


def test_a_running_episode_is_an_executing_goal_until_it_ends(client: RLClient) -> None:
    """The Episode goal is EXECUTING while its episode runs (though no execute coroutine
    waits it out: episode_server.execute_goal) and SUCCEEDED once its client finishes it."""
    statuses: list[GoalStatusArray] = []
    client.rl_node.node.create_subscription(
        GoalStatusArray, f"{NAMESPACE}/episode/_action/status", statuses.append, qos_profile_action_status_default
    )

    def wait_for_status(expected: int) -> int | None:
        """The episode's goal status once it is ``expected``, or the last one seen in HANG."""
        deadline = time.monotonic() + HANG
        latest = None
        while time.monotonic() < deadline:
            client.rl_node.spin_once(0.05)
            latest = statuses[-1].status_list[-1].status if statuses and statuses[-1].status_list else None
            if latest == expected:
                break
        return latest

    client.reset()
    client.step([0.0])
    assert wait_for_status(GoalStatus.STATUS_EXECUTING) == GoalStatus.STATUS_EXECUTING
    client.step([0.0])  # (still served: nothing waits on the goal)
    client.finish()
    assert wait_for_status(GoalStatus.STATUS_SUCCEEDED) == GoalStatus.STATUS_SUCCEEDED


def test_a_step_answer_is_taken_while_polling(processes: ProcessGroup, tmp_path: Path) -> None:
    """An agent on simulated time answers long before a step's duration is up: from the
    second step on, the client polls for the answer from the sending and takes it where it
    waits, without spinning the executor (action_clients.feedback_taker); the answers are
    the same ones, in order. The client polls from the last round trip less ``busy_wait``
    to four ``busy_wait`` after it: here a window wider than a loaded machine's round-trip
    jitter (an answer outside it is spun for, which is correct but not what is tested),
    and a timestep long enough that every answer counts as early."""
    timestep, busy_wait = 0.2, 0.01  # (on simulated time neither costs wall time)
    start_node(
        processes,
        PLANT,
        tmp_path,
        namespace="/simulated",
        params={"rl_timestep": timestep, "control_rate": 1 / PERIOD, "timing_model": "none", "time_constant": 0.2},
        label="simulated_plant",
    )
    with RLClient(
        "/simulated", connect_timeout=20, step_timeout_margin=1.0, reset_timeout=5.0, busy_wait=busy_wait
    ) as client:
        assert client.channel.can_take_answers
        taken: list[bool] = []
        spins: list[float] = []
        take_answer, spin_once = client.channel.take_answer, client.rl_node.spin_once

        def counted_take_answer() -> bool:
            taken.append(take_answer())
            return taken[-1]

        def counted_spin_once(timeout: float) -> None:
            spins.append(timeout)
            spin_once(timeout)

        client.channel.take_answer = counted_take_answer  # type: ignore[method-assign]
        client.rl_node.spin_once = counted_spin_once  # type: ignore[method-assign]
        client.reset(seed=1)
        spins.clear()
        steps = 20
        for seq in range(1, steps + 1):
            answer = client.step([0.5])
            assert answer.seq == seq and answer.observation[1] == pytest.approx(0.5)
        # Each step taken is one the executor did not wake for.
        assert sum(taken) >= steps // 2, (sum(taken), len(spins))
        assert len(spins) < steps, spins


def test_client_side_checks_raise_before_sending(client: RLClient) -> None:
    with pytest.raises(NotResetError, match="reset"):
        client.step([0.0])
    client.reset()
    with pytest.raises(ActionSpaceError, match="has 2 values, the agent expects 1"):
        client.step([0.0, 0.0])
    with pytest.raises(ActionSpaceError, match="nan"):
        client.step([float("nan")])
    assert client.step([0.0]).seq == 1  # nothing was sent, so the episode goes on


def test_no_agent_is_a_clear_error(ros_domain: dict[str, str]) -> None:
    started = time.monotonic()
    with pytest.raises(AgentNotFoundError, match=r"no agent at '/nowhere'.*ROS_DOMAIN_ID"):
        RLClient("/nowhere", connect_timeout=1.0)
    assert 1.0 <= time.monotonic() - started < 1.0 + HANG


def test_step_times_out_with_a_clear_error_when_the_agent_freezes(client: RLClient, plant: NodeProcess) -> None:
    client.reset()
    client.step([0.0])
    plant.kill(signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(StepTimeoutError, match=r"step 2: agent '/plant' did not answer within 1.05 s"):
            client.step([0.0])
        assert 1.05 <= time.monotonic() - started < 1.05 + HANG
    finally:
        plant.kill(signal.SIGCONT)
    # The agent is alive again: a new episode works.
    assert client.reset().seq == 0


def test_after_a_stall_between_two_steps_the_next_step_is_served(client: RLClient, plant: NodeProcess) -> None:
    """A stalled agent (a long garbage collection, a loaded host) is reachable again once
    it runs: the learner's next step resumes the episode, past the watchdog too."""
    client.reset()
    for seq in range(1, 4):
        assert client.step([0.1]).seq == seq
        plant.kill(signal.SIGSTOP)
        try:
            time.sleep(3.0 if seq == 2 else 0.3)  # beyond the watchdog (0.5 s) once
        finally:
            plant.kill(signal.SIGCONT)
    answer = client.step([0.2])
    assert answer.seq == 4 and answer.observation[1] == pytest.approx(0.2)


def test_a_reset_against_a_frozen_agent_fails_once_its_liveliness_lapses(client: RLClient, plant: NodeProcess) -> None:
    """A frozen agent cannot be told from a dead one: the reset ends once its liveliness
    lapses (contract.AGENT_LIVELINESS_S, 2.5 s), before its own timeout (5 s)."""
    plant.kill(signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(
            StepTimeoutError,
            match=r"reset: agent '/plant' stopped asserting its liveliness for 2.5 s \(crashed, or frozen\) while this "
            "client waited for the agent to accept the episode goal",
        ):
            client.reset()
        assert 2.0 <= time.monotonic() - started < 5.0
    finally:
        plant.kill(signal.SIGCONT)


def test_agent_refuses_to_start_with_an_invalid_timestep(processes: ProcessGroup, tmp_path: Path) -> None:
    agent = start_node(
        processes,
        PLANT,
        tmp_path,
        params={"rl_timestep": 0.005, "control_rate": 100.0},
        ready_text=None,
    )
    assert agent.wait(timeout=20) == 2
    log = agent.log_text()
    assert "parameter 'rl_timestep' = 0.005 s must exceed the control period" in log
    assert "allowed: rl_timestep > 0.01 s" in log


def test_agent_refuses_an_out_of_range_parameter(processes: ProcessGroup, tmp_path: Path) -> None:
    agent = start_node(processes, PLANT, tmp_path, params={"control_rate": 0.5}, ready_text=None)
    assert agent.wait(timeout=20) == 2
    assert "parameter 'control_rate'" in agent.log_text() and "[1, 5000] Hz" in agent.log_text()


def test_a_node_on_simulated_time_stops_on_sigint_even_when_its_clock_has_stopped(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    """With use_sim_time and no /clock (the simulator already gone, as when launch stops
    everything at once) no timer ever fires; SIGINT must still end the node cleanly."""
    agent = start_node(
        processes, PLANT, tmp_path, params={"use_sim_time": True}, ready_text=None, label="sim_time_agent"
    )
    # Up (its action server and description are out: past start-up, its signal handlers
    # set) and waiting for a clock that never comes. A fixed sleep was too short for a
    # start-up on a loaded machine.
    with RLClient(connect_timeout=30):
        pass
    time.sleep(0.5)
    assert agent.running(), agent.log_text()
    agent.kill(signal.SIGINT)
    started = time.monotonic()
    code = agent.wait(timeout=10.0)
    assert time.monotonic() - started < HANG
    assert code == 0, agent.log_text()
