"""Faults injected for real: processes killed and frozen, hooks that raise, and a
hand-written rogue client sending what RLClient never would. Each must end in a clear
error, with nothing commanded from bad input and nothing left hanging."""

from __future__ import annotations

import array
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rclpy
from action_msgs.msg import GoalStatus
from action_msgs.srv import CancelGoal
from helpers import start_node
from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.client import Client
from rclpy.node import Node

from spin_decoupler_msgs.action import Episode
from spin_decoupler_msgs.msg import AgentStatus, StepCommand
from spin_decoupler_ros.contract import COMMAND_QOS, STATUS_QOS
from spin_decoupler_ros.core import AgentBusyError, EpisodeEndedError, StepTimeoutError
from spin_decoupler_ros.core.auth import command_tag, new_key, takeover_proof
from spin_decoupler_ros.examples.first_order_plant.task import PlantTrackingEnv
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.rl.client import init_private_context
from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup, ros_args

PLANT = "spin_decoupler_ros.examples.first_order_plant.agent"
LANDER = "spin_decoupler_ros.examples.lunar_lander.agent"
NODES = Path(__file__).resolve().parents[1] / "nodes"
FAST = {"rl_timestep": 0.05, "control_rate": 100.0, "watchdog_timeout": 0.5}


class RogueClient:
    """Speaks the Episode protocol by hand, with none of RLClient's checks."""

    def __init__(self, client_id: str = "rogue") -> None:
        self.context = init_private_context()
        self.node = Node("rogue", context=self.context)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.client_id = client_id
        self.actions: ActionClient = ActionClient(self.node, Episode, "episode")
        self.commands = self.node.create_publisher(StepCommand, "step_command", COMMAND_QOS)
        self.feedback: list[Episode.Feedback] = []
        self.statuses: list[AgentStatus] = []
        self.node.create_subscription(AgentStatus, "status", self.statuses.append, STATUS_QOS)
        self.goal: ClientGoalHandle | None = None
        self.key = b""
        self._answered = 0
        assert self.actions.wait_for_server(timeout_sec=20)
        self.spin_until(lambda: self.commands.get_subscription_count() > 0)

    def spin_until(self, condition, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.05)
        return bool(condition())

    def reset(self, replace: bool = False) -> bool:
        """Start an episode; ``replace``: with the proof that replaces this client's running one."""
        old_key, self.key = self.key, new_key()
        goal = Episode.Goal(client_id=self.client_id, key=array.array("B", self.key))
        if replace:
            goal.takeover_proof = array.array("B", takeover_proof(old_key, self.key))
        answered = len(self.feedback)
        future = self.actions.send_goal_async(goal, feedback_callback=lambda m: self.feedback.append(m.feedback))
        assert self.spin_until(future.done)
        self.goal = future.result()
        assert self.goal is not None
        if not self.goal.accepted:
            return False
        return self.spin_until(lambda: any(f.step.seq == 0 for f in self.feedback[answered:]))

    def send(
        self,
        seq: int,
        action: list[float],
        kind: int = StepCommand.STEP,
        episode: bytes | None = None,
        duration: tuple[int, int] = (0, 0),
        then_action: list[float] | None = None,
    ) -> None:
        """A command signed under this client's episode key, as its owner sends it."""
        self._answered = len(self.feedback)  # answer() waits for one that comes after this
        msg = StepCommand(kind=kind, seq=seq)
        assert episode is not None or self.goal is not None
        uuid = episode if episode is not None else bytes(self.goal.goal_id.uuid)  # type: ignore[union-attr]
        msg.episode_id.uuid = np.frombuffer(uuid, dtype=np.uint8)
        msg.action = action
        msg.duration.sec, msg.duration.nanosec = duration
        then = np.asarray(then_action or [], dtype=np.float64)
        msg.then_action = then.tolist()
        tag = command_tag(self.key, kind, uuid, seq, np.asarray(action, dtype=np.float64), *duration, then)
        msg.tag = array.array("B", tag)
        self.commands.publish(msg)

    def answer(self, seq: int) -> Episode.Feedback:
        """The answer to the last command sent (with sequence number ``seq``)."""

        def fresh() -> list[Episode.Feedback]:
            return [f for f in self.feedback[self._answered :] if f.step.seq == seq]

        assert self.spin_until(lambda: bool(fresh())), f"no answer to step {seq}"
        return fresh()[-1]

    def status_mentioning(self, text: str) -> AgentStatus | None:
        self.spin_until(lambda: any(text in s.message for s in self.statuses), timeout=5)
        return next((s for s in reversed(self.statuses) if text in s.message), None)

    def close(self) -> None:
        self.actions.destroy()
        self.node.destroy_node()
        self.context.try_shutdown()


@pytest.fixture
def rogue(processes: ProcessGroup, tmp_path: Path) -> Iterator[RogueClient]:
    start_node(processes, PLANT, tmp_path, params={**FAST, "clip_actions": False})
    client = RogueClient()
    yield client
    client.close()


# -- bad goals and commands ---------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "then_action", "error"),
    [
        ([0.5, 0.5, 0.5], None, "action has 3 values, the agent expects 1"),
        ([float("nan")], None, "action[0] is nan: actions must be finite"),
        ([float("inf")], None, "action[0] is inf: actions must be finite"),
        ([3.0], None, "action[0] = 3 is outside [-1, 1] and clip_actions is false"),
        ([0.5], [0.5, 0.5], "step 2's then_action: action has 2 values, the agent expects 1"),
        ([0.5], [float("nan")], "step 2's then_action: action[0] is nan"),
    ],
)
def test_bad_actions_are_rejected_by_name_and_never_applied(
    rogue: RogueClient, action: list[float], then_action: list[float] | None, error: str
) -> None:
    assert rogue.reset()
    rogue.send(1, [0.25])
    assert rogue.answer(1).step.error == ""
    rogue.send(2, action, then_action=then_action)
    answer = rogue.answer(2).step
    assert error in answer.error
    # Not applied: the agent keeps the last good action, and goes on serving the episode.
    rogue.send(2, [-0.5])
    good = rogue.answer(2).step
    assert good.error == "" and good.observation[1] == pytest.approx(-0.5)


def test_out_of_order_and_unknown_commands_are_rejected(rogue: RogueClient) -> None:
    assert rogue.reset()
    rogue.send(5, [0.0])
    assert "step seq 5 is out of order: the agent expects 1" in rogue.answer(5).step.error
    rogue.send(1, [0.0], kind=7)
    assert "unknown command kind 7" in rogue.answer(1).step.error
    rogue.send(1, [0.0])
    assert rogue.answer(1).step.error == ""


def test_a_step_before_any_reset_is_refused_on_the_status_topic(rogue: RogueClient) -> None:
    rogue.send(1, [0.5], episode=os.urandom(16))
    status = rogue.status_mentioning("no episode is running")
    assert status is not None and "send an Episode goal (reset) first" in status.message
    assert status.rejected_commands >= 1
    assert rogue.reset()  # and the agent still serves


def test_a_second_client_is_refused_while_the_first_one_is_active(processes: ProcessGroup, tmp_path: Path) -> None:
    # A watchdog (5 s) far longer than any delivery delay on a loaded machine: the second
    # client's reset must come while the first one still counts as active (past the
    # watchdog it counts as gone and a new client may take over).
    start_node(processes, PLANT, tmp_path, params={**FAST, "watchdog_timeout": 5.0})
    rogue = RogueClient()
    try:
        assert rogue.reset()
        with RLClient(connect_timeout=20) as second:
            rogue.send(1, [0.0])  # (discovery done, the first client steps)
            rogue.answer(1)
            with pytest.raises(AgentBusyError, match="client 'rogue'"):
                second.reset()
        rogue.send(2, [0.0])
        assert rogue.answer(2).step.error == ""  # the first one carries on
    finally:
        rogue.close()


def test_a_malformed_time_field_is_rejected_by_name(rogue: RogueClient) -> None:
    assert rogue.reset()
    rogue.send(1, [0.5], duration=(0, 4_000_000_000))  # (not 4 s: nanosec must be below 1e9)
    assert "duration.nanosec = 4000000000 is not below 1e9" in rogue.answer(1).step.error
    rogue.send(1, [0.5], duration=(0, 50_000_000))
    assert rogue.answer(1).step.error == ""


def test_an_episode_belongs_to_its_client(processes: ProcessGroup, tmp_path: Path) -> None:
    """Another process on the domain that knows the episode's id (every command names
    it, in clear) and copies its commands cannot drive, end, cancel or take over the
    episode: what it sends is dropped and counted on the status topic, and the owner
    never sees an error it did not cause."""
    agent = start_node(processes, PLANT, tmp_path, params={**FAST, "watchdog_timeout": 5.0})
    with RLClient(connect_timeout=20) as owner:
        forger = RogueClient(client_id=owner.channel.client_id)  # (its goal names the owner, too)
        heard: list[StepCommand] = []
        forger.node.create_subscription(StepCommand, "step_command", heard.append, COMMAND_QOS)
        canceller: Client = forger.node.create_client(CancelGoal, "episode/_action/cancel_goal")
        try:
            owner.reset(options=[0.0])
            for _ in range(50):  # until the forger hears the owner's steps (discovery)
                seq = owner.step([0.2]).seq
                if forger.spin_until(lambda seq=seq: any(c.seq == seq for c in heard), timeout=0.2):  # type: ignore[misc]
                    break
            copy = next(c for c in heard if c.seq == seq)
            episode = bytes(copy.episode_id.uuid)
            # ... and until the agent hears the forger (a command for no episode is refused).
            for _ in range(20):
                forger.send(1, [0.0], episode=os.urandom(16))
                if forger.spin_until(lambda: any("rejected a command" in s.message for s in forger.statuses), 0.5):
                    break
            forged = [copy]  # a copy of the owner's own signed step
            for kind, action, nanosec in (
                (StepCommand.STEP, [float("nan")], 0),
                (StepCommand.STEP, [1.0], 0),  # well formed
                (StepCommand.STEP, [1.0], 4_000_000_000),  # malformed too
                (StepCommand.FINISH, [], 0),
            ):
                msg = StepCommand(kind=kind, seq=seq + 1 if kind == StepCommand.STEP else seq)
                msg.episode_id.uuid = np.frombuffer(episode, dtype=np.uint8)
                msg.action, msg.duration.nanosec = action, nanosec
                msg.tag = array.array("B", os.urandom(32))
                forged.append(msg)
            for msg in forged:
                forger.commands.publish(msg)
            # A goal under the owner's name without the proof of its key is another client's.
            assert not forger.reset()
            # Said in the agent's log (the status topic keeps only the latest state: a
            # "dropped" status right after it may replace the refusal before it is read).
            assert agent.wait_for_log("without the proof of its key", timeout=10), agent.log_text()
            # A cancel of the running goal is refused.
            assert canceller.wait_for_service(timeout_sec=10)
            request = CancelGoal.Request()
            request.goal_info.goal_id.uuid = np.frombuffer(episode, dtype=np.uint8)
            cancel = canceller.call_async(request)
            assert forger.spin_until(cancel.done)
            response = cancel.result()
            assert response is not None and len(response.goals_canceling) == 0  # (rclpy: nothing is canceling)
            # The owner goes on as if nothing happened: its next step is the next one (a
            # forged step taken would have made it out of order, an error it never caused).
            assert owner.step([0.2]).seq == seq + 1
            assert owner.step([0.2]).seq == seq + 2
            assert forger.spin_until(lambda: forger.statuses[-1].dropped_commands >= len(forged) + 1, timeout=10), (
                f"dropped {forger.statuses[-1].dropped_commands}, forged {len(forged)} and a cancel"
            )
        finally:
            forger.close()


# -- hooks that raise ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("hook", "text"),
    [
        ("apply_action", "apply_action raised RuntimeError: injected fault in apply_action"),
        ("build_observation", "build_observation raised RuntimeError: injected fault in build_observation"),
        ("wrong_size", "build_observation raised ValueError: returned 5 values, the agent declared"),
        ("nan", "build_observation raised ValueError: observation[0] is nan"),
        ("reset_workspace", "reset_workspace raised ValueError: injected fault in reset_workspace"),
    ],
)
def test_a_failing_hook_aborts_the_episode_with_its_text_and_the_loop_survives(
    processes: ProcessGroup, tmp_path: Path, hook: str, text: str
) -> None:
    processes.start(
        NodeProcess(
            "faulty_agent",
            ros_args(params={**FAST, "fail_hook": hook, "fail_at_step": 0 if hook == "reset_workspace" else 3}),
            log_path=tmp_path / "faulty.log",
            env={"PYTHONPATH": f"{NODES}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
        )
    )
    with RLClient(connect_timeout=30, reset_timeout=5) as client:
        with pytest.raises(EpisodeEndedError, match="ABORTED") as failure:
            client.reset(seed=1)
            for _ in range(10):
                client.step([0.5])
        assert text in str(failure.value)
        assert failure.value.outcome == "ABORTED"
        # Holding now (the plant's null action), and the next episode works.
        answer = client.reset(seed=2)
        assert answer.seq == 0
        assert client.step([0.2]).seq == 1


# -- a side dies or stalls ----------------------------------------------------------


def test_agent_killed_mid_step_ends_in_a_typed_error_within_the_timeout(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    agent = start_node(processes, PLANT, tmp_path, params=FAST)
    with RLClient(connect_timeout=20) as client:
        client.reset()
        client.step([0.1])
        agent.kill(signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(StepTimeoutError, match=r"did not answer within|has left the ROS graph") as failed:
            client.step([0.1])
        waited = time.monotonic() - started
    # Default: the step's duration plus max(2 s, 10 RL timesteps), never before it; or as
    # soon as the graph shows the agent gone. Not much after either (how much after is
    # the machine's, not the decoupler's).
    assert waited < 2.0 + 10.0
    if "did not answer" in str(failed.value):
        assert waited > 2.0


def test_a_reset_against_an_agent_that_left_fails_at_once(processes: ProcessGroup, tmp_path: Path) -> None:
    """A wait whose outcome is decided ends: an agent gone from the graph cannot answer."""
    agent = start_node(processes, PLANT, tmp_path, params=FAST)
    with RLClient(connect_timeout=20, reset_timeout=30.0) as client:
        client.reset()
        client.step([0.1])
        assert agent.stop() == 0  # (SIGINT: it leaves the graph)
        started = time.monotonic()
        with pytest.raises(StepTimeoutError, match="has left the ROS graph") as failed:
            client.reset()
        assert time.monotonic() - started < 5.0, str(failed.value)  # a couple of graph checks, not the 30 s timeout


def test_an_agent_restarted_after_a_kill_is_taken_as_soon_as_it_is_ready(
    processes: ProcessGroup, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The killed agent stays in the ROS graph until its DDS lease ends (20 s); its
    liveliness lapses within AGENT_LIVELINESS_S of the kill, and the new one is taken
    within 2 s of being ready: once discovered (participants announce themselves every
    0.5 s: dds_profile.py) and the dead one's liveliness has lapsed (1.1-1.3 s after
    ready, measured); the wait is said, then its end."""

    agent = start_node(processes, PLANT, tmp_path, params=FAST, label="first_agent")
    env = PlantTrackingEnv(
        on_agent_lost="truncate",
        agent_wait_timeout=60,
        reconnect_attempt_timeout=2,
        client_options={"connect_timeout": 20, "step_timeout_margin": 1.0},
    )
    try:
        env.reset(seed=0)
        env.step(np.array([0.5], dtype=np.float32))
        agent.kill(signal.SIGKILL)
        _, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
        assert truncated and not terminated and reward == 0.0
        assert "did not answer" in info["truncated_reason"]
        start_node(processes, PLANT, tmp_path, params=FAST, label="second_agent")
        ready = time.monotonic()
        observation, info = env.reset(seed=1)  # waits for the new agent
        assert time.monotonic() - ready < 2.0  # (before: 17.6 s, the dead agent's lease; up to 2.1 s, discovery)
        assert info["seq"] == 0 and observation.shape == (4,)
        assert env.step(np.array([0.5], dtype=np.float32))[4]["seq"] == 1
    finally:
        env.close()
    said = capfd.readouterr().err
    assert "waiting for agent '/' to come back (up to 60 s): step 2: agent '/' did not answer" in said, said
    assert "agent '/' answers again after" in said, said


def test_a_reset_against_a_killed_agent_fails_once_its_liveliness_lapses(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    from spin_decoupler_ros.contract import AGENT_LIVELINESS_S

    agent = start_node(processes, PLANT, tmp_path, params=FAST)
    with RLClient(connect_timeout=20, reset_timeout=30.0) as client:
        client.reset()
        agent.kill(signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(StepTimeoutError, match=r"reset: agent '/' stopped asserting its liveliness for 2.5 s"):
            client.reset()
        assert time.monotonic() - started < AGENT_LIVELINESS_S + 2.0  # (the lease, two graph checks, a margin)


@pytest.mark.parametrize(
    ("agent", "params"),
    [
        (PLANT, FAST),  # on wall time
        (LANDER, {"control_rate": 1000.0, "rl_timestep": 0.004, "timing_model": "none"}),  # self-clocked
    ],
    ids=["wall_time", "self_clocked"],
)
def test_a_new_reset_ends_the_clients_running_episode(
    processes: ProcessGroup, tmp_path: Path, agent: str, params: dict[str, object]
) -> None:
    """A client's new reset replaces its running episode: the old goal succeeds, ENDED
    after the steps it took, and the new one starts with its reset observation."""
    start_node(processes, agent, tmp_path, params=params)
    client = RogueClient()
    try:
        assert client.reset()
        for seq in (1, 2):
            client.send(seq, [0.0])
            assert not client.answer(seq).step.error
        assert client.goal is not None
        old_result = client.goal.get_result_async()
        assert client.reset(replace=True)
        assert client.spin_until(old_result.done)
        response = old_result.result()
        assert response is not None
        assert response.status == GoalStatus.STATUS_SUCCEEDED
        assert response.result.outcome == Episode.Result.ENDED
        assert response.result.steps == 2 and not response.result.error
        client.send(1, [0.0])
        assert not client.answer(1).step.error
    finally:
        client.close()


@pytest.mark.parametrize("how", ["kill", "freeze"])
def test_agent_holds_when_the_rl_side_dies_or_stalls_and_takes_a_new_client(
    processes: ProcessGroup, tmp_path: Path, how: str
) -> None:
    start_node(processes, PLANT, tmp_path, params={**FAST, "gain": 2.0})
    learner = processes.start(
        NodeProcess(
            "stepping_client",
            ["", "1.0"],
            log_path=tmp_path / "learner.log",
            env={"PYTHONPATH": f"{NODES}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
        )
    )
    assert learner.wait_for_log("stepping", 30), learner.log_text()
    observer = RogueClient("observer")
    try:
        learner.kill(signal.SIGKILL if how == "kill" else signal.SIGSTOP)
        silenced = time.monotonic()
        status = observer.status_mentioning("(watchdog): holding position")
        assert status is not None and status.state == AgentStatus.HOLDING
        # The watchdog (0.5 s) fired, and not much later than that (how much later is the
        # machine's: a test asserts no tighter bound than a hang's).
        assert time.monotonic() - silenced < 0.5 + 10.0
        # A new client takes over; the plant holds (u = 0: x relaxes towards 0).
        with RLClient(connect_timeout=20) as client:
            start = client.reset(seed=3)
            assert start.observation[1] == 0.0
            assert client.step([0.0]).seq == 1
    finally:
        observer.close()
        learner.kill(signal.SIGCONT)


# -- isolation ----------------------------------------------------------------------


def test_two_pipelines_in_one_domain_under_different_namespaces_never_cross_talk(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    start_node(processes, PLANT, tmp_path, namespace="/left", params={**FAST, "gain": 2.0}, label="left")
    start_node(processes, PLANT, tmp_path, namespace="/right", params={**FAST, "gain": -2.0}, label="right")
    with RLClient("/left", connect_timeout=20) as left, RLClient("/right", connect_timeout=20) as right:
        left.reset(options=[0.0])
        right.reset(options=[0.0])
        for _ in range(10):  # interleaved, both at once
            x_left = left.step([1.0]).observation[0]
            x_right = right.step([1.0]).observation[0]
        assert x_left > 0.5 and x_right < -0.5  # each drove its own plant only


def test_two_pipelines_in_different_domains_never_cross_talk(tmp_path: Path) -> None:
    from spin_decoupler_ros.tools.isolation import isolated_ros_environment

    domains = [isolated_ros_environment(), isolated_ros_environment()]
    groups = [ProcessGroup(), ProcessGroup()]
    try:
        for group, domain, gain in zip(groups, domains, (2.0, -2.0), strict=True):
            process = group.start(
                NodeProcess(
                    PLANT, ros_args(params={**FAST, "gain": gain}), log_path=tmp_path / f"{gain}.log", env=domain
                )
            )
            assert process.wait_for_log("agent ready", 30)
        xs = []
        for domain in domains:
            previous = {k: os.environ.get(k) for k in domain}
            os.environ.update(domain)
            try:
                with RLClient(connect_timeout=20) as client:
                    client.reset(options=[0.0])
                    xs.append([client.step([1.0]).observation[0] for _ in range(8)][-1])
                    # Exactly one agent answers in this domain.
                    assert client.node.count_publishers(client.channel.status_topic) == 1
            finally:
                for key, value in previous.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
        assert xs[0] > 0.5 and xs[1] < -0.5
    finally:
        for group in groups:
            group.stop()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
