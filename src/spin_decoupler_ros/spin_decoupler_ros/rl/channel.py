"""AgentChannel: the RL side's link to one agent, driven by whoever spins the node.

A channel never spins or blocks. It sends (a reset as an Episode goal, a step as a
StepCommand) and, as callbacks deliver the agent's feedback and results, it turns
them into a ``StepAnswer`` or a typed error that ``poll()`` hands back. The
synchronous ``RLClient`` drives one channel; the VecEnv drives several at once on one
node, so N agents cost one executor, not N threads.
"""

from __future__ import annotations

import array
import enum
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.node import Node
from rclpy.task import Future

from spin_decoupler_msgs.action import Episode
from spin_decoupler_msgs.msg import AgentDescription, AgentStatus, StepCommand
from spin_decoupler_ros.action_clients import drop_orphaned_futures, feedback_taker
from spin_decoupler_ros.contract import COMMAND_QOS, LATCHED_QOS, STATUS_QOS, outcome_name
from spin_decoupler_ros.conversions import (
    float64_field,
    ns_to_duration,
    ns_to_time,
    time_to_ns,
)
from spin_decoupler_ros.core.auth import command_tag, new_key, takeover_proof
from spin_decoupler_ros.core.errors import (
    ActionSpaceError,
    AgentError,
    EpisodeEndedError,
    NotResetError,
    RobotStoppedError,
)
from spin_decoupler_ros.core.naming import join_name
from spin_decoupler_ros.core.spaces import ActionSpec
from spin_decoupler_ros.core.timing import (
    ClockOffsetEstimator,
    exchange_sample,
    heard_on_arrival,
    ns_to_seconds,
    seconds_to_ns,
)
from spin_decoupler_ros.qos_events import SubscriptionEventCallbacks
from spin_decoupler_ros.rl.recording import RunRecorder
from spin_decoupler_ros.rl.refusal import refusal_error, status_explains_refusal
from spin_decoupler_ros.rl.step_answer import StepAnswer


class _Waiting(enum.Enum):
    NOTHING = 0
    ACCEPTANCE = 1  # a reset goal was sent
    RESET_OBSERVATION = 2
    STEP = 3


@dataclass
class _Pending:
    seq: int
    sent_ns: int  # RL clock
    sent_wall: float = field(default_factory=time.perf_counter)


def make_client_id(node: Node) -> str:
    return f"{node.get_fully_qualified_name()}-{uuid.uuid4().hex[:8]}"


# Recorded messages written at once, while the agent runs a step (about five steps'
# worth: fewer calls, and still far shorter than any action).
RECORD_BATCH = 16
# How long a refused reset waits for the status that says why (the agent publishes it
# just before refusing; on another topic, it can come a moment after the refusal).
REFUSAL_STATUS_WAIT_S = 0.5


class AgentChannel:
    """One agent, seen from the RL side. Not thread-safe: use it from the spinning thread.

    :param node: the node whose executor delivers this channel's callbacks.
    :param agent_namespace: the agent's namespace ("" or "/panda0"); its names are
        ``<ns>/episode``, ``<ns>/step_command``, ``<ns>/status``, ``<ns>/description``.
    :param client_id: who this RL side is, for the agent's single-client policy.
    """

    def __init__(self, node: Node, agent_namespace: str = "", client_id: str | None = None) -> None:
        self.node = node
        self.namespace = agent_namespace
        self.client_id = client_id or make_client_id(node)
        self.description: AgentDescription | None = None
        self.status: AgentStatus | None = None
        self.status_heard_at = -1.0  # (monotonic) when the last status came: a dead agent says nothing new
        self.spec: ActionSpec | None = None
        self.offsets = ClockOffsetEstimator()
        self._action_client: ActionClient = ActionClient(node, Episode, join_name(agent_namespace, "episode"))
        self._take_feedback = feedback_taker(self._action_client)
        self._command_pub = node.create_publisher(StepCommand, join_name(agent_namespace, "step_command"), COMMAND_QOS)
        self._description_sub = node.create_subscription(
            AgentDescription, join_name(agent_namespace, "description"), self._on_description, LATCHED_QOS
        )
        # Status writers whose liveliness lapsed (contract.AGENT_LIVELINESS_S): a crashed
        # agent counts as gone from then on, long before the graph forgets it.
        self.lapsed_agents = 0
        self._status_sub = node.create_subscription(
            AgentStatus,
            join_name(agent_namespace, "status"),
            self._on_status,
            STATUS_QOS,
            event_callbacks=SubscriptionEventCallbacks(liveliness=self._on_liveliness),
        )
        self._waiting = _Waiting.NOTHING
        self._goal_future: Future | None = None
        self._goal_handle: ClientGoalHandle | None = None
        self._result_future: Future | None = None
        self._episode_uuid: bytes | None = None
        self._key = b""  # the last episode goal's key (core/auth.py)
        self._seq = 0
        self._pending: _Pending | None = None
        self._listening_from_ns: int | None = None  # since when the caller spins for the answer
        self._answer: StepAnswer | None = None
        self._error: Exception | None = None
        self._finishing = False
        self._early_feedback: list[Episode.Impl.FeedbackMessage] = []
        self._refused_at: float | None = None  # a refused reset, whose status has yet to come
        self._ended_because = ""  # why the last episode was given up here, if it was
        self._recorder: RunRecorder | None = None
        # Totals of the StepTiming that comes with each answer (Episode feedback).
        self.control_ticks = 0
        self.late_ticks = 0

    def record_to(self, recorder: RunRecorder) -> None:
        """Record this channel's traffic (commands, answers, their timing, status) with
        ``recorder``, all as it passes through this client: no subscription of its own."""
        self._recorder = recorder
        if self.status is not None:
            recorder.write(self._status_sub.topic_name, self.status)

    def stop_recording(self) -> None:
        """Stop recording; ``record_to`` resumes."""
        self._recorder = None

    def _agent_topic(self, name: str) -> str:
        """The agent's topic ``name``, as this client's node resolves it."""
        return self._command_pub.topic_name.rsplit("/", 1)[0] + "/" + name

    def _record_command(self, msg: StepCommand) -> None:
        """Record ``msg``, just sent; what waits to be written is written now, while the agent
        runs it, a few steps' worth at a time (``RECORD_BATCH`` messages)."""
        if self._recorder is not None:
            self._recorder.write(self._command_pub.topic_name, msg)
            if self._recorder.pending >= RECORD_BATCH:
                self._recorder.flush()

    # -- discovery ----------------------------------------------------------------------

    def server_ready(self) -> bool:
        """The Episode server is there and the agent's latched description and status have
        arrived (a refused reset names the client the agent serves from that status: test
        ``test_faults.py::test_a_second_client_is_refused_while_the_first_one_is_active``)."""
        if not (self._action_client.server_is_ready() and self.description is not None and self.status is not None):
            return False
        return self.live_agents()[0] > 0  # (not only a dead one, which the graph still holds)

    def agent_in_graph(self) -> bool:
        """Whether the agent is still there: it has not said it is shutting down, the graph
        holds its Episode server or its status publisher, and a status writer there is
        live. (A crashed agent stays in the graph until its DDS lease runs out, 20 s with
        Fast DDS's defaults; its liveliness lapses within contract.AGENT_LIVELINESS_S.)"""
        if self.status is not None and self.status.state == AgentStatus.OFFLINE:
            return False
        in_graph = self._action_client.server_is_ready() or self.node.count_publishers(self.status_topic) > 0
        return in_graph and self.live_agents()[0] > 0

    def _on_liveliness(self, info: Any) -> None:  # (QoSLivelinessChangedInfo: named apart on Humble)
        self.lapsed_agents = info.not_alive_count

    def live_agents(self) -> tuple[int, list[str]]:
        """How many agents answer in this namespace, and the names of the nodes that may
        (publishing its status or serving its Episode action): those in the graph, less
        those whose liveliness has lapsed (dead, or frozen), which the graph holds on to."""
        writers = self.node.get_publishers_info_by_topic(self.status_topic)
        servers = self.node.get_publishers_info_by_topic(self._agent_topic("episode/_action/feedback"))
        names = sorted(join_name(info.node_namespace, info.node_name) for info in writers or servers)
        return max(len(writers), len(servers)) - self.lapsed_agents, names

    def _on_description(self, msg: AgentDescription) -> None:
        self.description = msg
        self.spec = ActionSpec(np.asarray(msg.action_low), np.asarray(msg.action_high), clip=msg.clip_actions)

    def _on_status(self, msg: AgentStatus) -> None:
        if self._recorder is not None:
            self._recorder.write(self._status_sub.topic_name, msg)
        self.status = msg
        self.status_heard_at = time.monotonic()
        if self._refused_at is not None and self._status_explains_refusal():
            self._refuse()

    @property
    def seq(self) -> int:
        """Sequence number of the last step sent in this episode."""
        return self._seq

    @property
    def status_topic(self) -> str:
        return self._status_sub.topic_name

    @property
    def agent_name(self) -> str:
        """The agent's namespace as a name for messages, as this client resolves it (a
        namespace given by remapping the client's node included; "/" for the root)."""
        return self.status_topic.rsplit("/", 1)[0] or "/"

    # -- sending ------------------------------------------------------------------------

    @property
    def episode_running(self) -> bool:
        return self._episode_uuid is not None and self._error is None

    @property
    def waiting(self) -> bool:
        return self._waiting is not _Waiting.NOTHING

    def send_reset(self, seed: int | None = None, options: Sequence[float] | np.ndarray = ()) -> None:
        """Start a new episode: the running one, if any, is replaced by the agent."""
        self._forget_episode()
        self._ended_because = ""
        goal = Episode.Goal(client_id=self.client_id, has_seed=seed is not None, seed=int(seed or 0))
        goal.reset_options = float64_field(np.asarray(options, dtype=np.float64))
        # A fresh key signs this episode's commands; the proof under the last one lets
        # the goal replace an episode of this client's that the agent may still run.
        key = new_key()
        goal.key = array.array("B", key)
        if self._key:
            goal.takeover_proof = array.array("B", takeover_proof(self._key, key))
        self._key = key
        self._pending = _Pending(0, self._now_ns())
        self._waiting = _Waiting.ACCEPTANCE
        self._goal_future = self._action_client.send_goal_async(goal, feedback_callback=self._on_feedback)
        self._goal_future.add_done_callback(self._on_goal_response)
        drop_orphaned_futures(self._action_client)

    def send_step(
        self,
        action: np.ndarray | Sequence[float],
        duration: float | None = None,
        then_action: np.ndarray | Sequence[float] | None = None,
    ) -> None:
        """Send the next step's action (and ``then_action``, what runs from its observation
        until the next step; None: the action runs on), checked against the agent's action
        space first."""
        if not self.episode_running:
            why = f" ({self._ended_because})" if self._ended_because else ""
            raise NotResetError(f"no episode is running on {self.agent_name}{why}: call reset() first")
        if self._waiting is not _Waiting.NOTHING:
            raise RuntimeError("the previous reset or step has not been answered yet")
        assert self.spec is not None
        checked = self.spec.check(action)  # raises ActionSpaceError before anything is sent
        then = np.zeros(0) if then_action is None else self._checked_then_action(then_action)
        if duration is not None and not (np.isfinite(duration) and duration >= 0.0):
            raise ValueError(f"step duration must be a finite number of seconds >= 0, got {duration}")
        seq = self._seq + 1
        now = self._now_ns()
        msg = StepCommand(kind=StepCommand.STEP, seq=seq)
        assert self._episode_uuid is not None  # (an episode runs: checked above)
        msg.episode_id.uuid = np.frombuffer(self._episode_uuid, dtype=np.uint8)
        msg.action = float64_field(checked)
        msg.duration = ns_to_duration(seconds_to_ns(duration or 0.0))
        msg.then_action = float64_field(then)
        msg.sent_at = ns_to_time(now)
        self._sign(msg, checked, then)
        # A Ctrl-C may land between any two lines: before the next one nothing has changed,
        # after it the client waits, and an interrupt gives the episode up (RLClient.step),
        # never leaving seq counted for a step the agent did not get
        # (test_interrupts.py::test_a_learners_ctrl_c_anywhere_in_a_step_is_a_keyboard_interrupt).
        self._waiting = _Waiting.STEP
        self._seq = seq
        self._pending = _Pending(seq, now)
        self._listening_from_ns = None
        self._command_pub.publish(msg)
        self._record_command(msg)

    def send_finish(self) -> Future | None:
        """Tell the agent the experiment is over; return the episode's result future, if any."""
        if self._episode_uuid is None:
            return None
        msg = StepCommand(kind=StepCommand.FINISH, seq=self._seq)
        msg.episode_id.uuid = np.frombuffer(self._episode_uuid, dtype=np.uint8)
        msg.sent_at = ns_to_time(self._now_ns())
        self._sign(msg, np.zeros(0))
        self._finishing = True
        self._command_pub.publish(msg)
        self._record_command(msg)
        result, self._result_future = self._result_future, None
        self._episode_uuid = None
        self._waiting = _Waiting.NOTHING
        return result

    def require_then_action(self) -> None:
        """Raise ValueError naming the agent unless it takes a then_action (its description says)."""
        assert self.description is not None
        if not self.description.takes_then_action:
            raise ValueError(
                f"agent '{self.agent_name}' ({self.description.agent_type}) takes no then_action: its steps' "
                "actions run on until the next step"
            )

    def _checked_then_action(self, then_action: np.ndarray | Sequence[float]) -> np.ndarray:
        assert self.spec is not None
        self.require_then_action()
        try:
            return self.spec.check(then_action)
        except ActionSpaceError as exc:
            raise ActionSpaceError(f"then_action: {exc}") from None

    def _sign(self, msg: StepCommand, action: np.ndarray, then_action: np.ndarray | None = None) -> None:
        """Tag ``msg`` under the episode's key: the agent drops commands without it."""
        assert self._episode_uuid is not None
        tag = command_tag(
            self._key,
            msg.kind,
            self._episode_uuid,
            msg.seq,
            action,
            msg.duration.sec,
            msg.duration.nanosec,
            then_action,
        )
        msg.tag = array.array("B", tag)

    def listen(self) -> None:
        """Say that the caller spins from now until the answer: an answer taken after that
        was taken as it arrived (the first call after a send counts; see ``heard_on_arrival``)."""
        if self._listening_from_ns is None:
            self._listening_from_ns = self._now_ns()

    def cancel_wait(self, why: str = "") -> None:
        """Give up on the outstanding answer (after a timeout, an interrupt): the episode is
        unusable; ``why`` is said when a step is sent in it anyway."""
        waited = self.waiting_for()
        self._forget_episode()
        if why:
            self._ended_because = f"{why} while this client waited for {waited}"

    # -- receiving ----------------------------------------------------------------------

    def poll(self) -> StepAnswer | None:
        """The answer, once it arrived; raises the agent's error instead, if there was one."""
        if self._refused_at is not None and time.monotonic() - self._refused_at >= REFUSAL_STATUS_WAIT_S:
            self._refuse()  # (no status said why: the agent's last one is all there is)
        if self._error is not None:
            error, self._error = self._error, None
            self._waiting = _Waiting.NOTHING
            raise error
        if self._answer is not None:
            answer, self._answer = self._answer, None
            self._waiting = _Waiting.NOTHING
            return answer
        return None

    @property
    def can_take_answers(self) -> bool:
        """Whether ``take_answer`` can take answers here (else spin for them)."""
        return self._take_feedback is not None

    def take_answer(self) -> bool:
        """Take a step's answer that has arrived, without an executor (a caller polling for
        an answer due any moment: ``action_clients.feedback_taker``); then ``poll()`` has
        it. Other messages (a goal's result, a status) still wait for a spin. Whether a
        feedback message was taken."""
        if self._take_feedback is None:
            return False
        feedback = self._take_feedback()
        if feedback is None:
            return False
        self._on_feedback(feedback)
        return True

    def waiting_for(self) -> str:
        """What the outstanding wait is, for timeout messages."""
        seq = self._pending.seq if self._pending else 0
        return {
            _Waiting.ACCEPTANCE: "the agent to accept the episode goal",
            _Waiting.RESET_OBSERVATION: "the reset observation",
            _Waiting.STEP: f"the observation of step {seq}",
            _Waiting.NOTHING: "nothing",
        }[self._waiting]

    def _on_goal_response(self, future: Future) -> None:
        if future is not self._goal_future:
            return  # a reset we have since replaced
        goal_handle = future.result()
        assert isinstance(goal_handle, ClientGoalHandle)
        if not goal_handle.accepted:
            # The agent says why on its status topic just before refusing; that message
            # may come after the refusal (another topic): the error waits for it
            # (test_channel_refusal.py).
            self._refused_at = time.monotonic()
            if self._status_explains_refusal():
                self._refuse()
            return
        self._goal_handle = goal_handle
        self._episode_uuid = bytes(goal_handle.goal_id.uuid)
        if self._waiting is _Waiting.ACCEPTANCE:
            self._waiting = _Waiting.RESET_OBSERVATION
        self._result_future = goal_handle.get_result_async()
        self._result_future.add_done_callback(self._on_result)
        early, self._early_feedback = self._early_feedback, []
        for feedback in early:
            self._on_feedback(feedback)

    def _status_explains_refusal(self) -> bool:
        return status_explains_refusal(self.status, self.client_id)

    def _refuse(self) -> None:
        """Fail the refused reset with the error its reason calls for."""
        self._refused_at = None
        self._fail(refusal_error(self.status, self.client_id, self.agent_name))

    def _on_feedback(self, feedback_msg: Episode.Impl.FeedbackMessage) -> None:
        arrived_ns = self._now_ns()
        goal_uuid = bytes(feedback_msg.goal_id.uuid)
        if self._episode_uuid is None and self._waiting is _Waiting.ACCEPTANCE:
            # Feedback can overtake the goal response; keep it until the goal id is known.
            self._early_feedback.append(feedback_msg)
            return
        if goal_uuid != self._episode_uuid or self._pending is None:
            return  # an older episode's, or nothing asked
        result = feedback_msg.feedback.step
        timing = feedback_msg.feedback.timing
        if timing.seq > 0:  # (a reset's answer times no step)
            self.control_ticks += timing.control_ticks
            self.late_ticks += timing.late_ticks
        if self._recorder is not None:
            self._recorder.write(self._agent_topic("step_result"), result)
            if timing.seq > 0:
                self._recorder.write(self._agent_topic("step_timing"), timing)
        if result.seq != self._pending.seq:
            return  # late answer to a step we gave up on
        if result.error:
            self._fail(AgentError(f"agent {self.agent_name} rejected step {result.seq}: {result.error}"))
            return
        pending, self._pending = self._pending, None
        offset = None
        if result.seq > 0:
            received_ns, answered_ns = time_to_ns(result.command_received_at), time_to_ns(result.ato)
            listening_from_ns = self._listening_from_ns
            if listening_from_ns is not None and heard_on_arrival(
                listening_from_ns, pending.sent_ns, received_ns, answered_ns
            ):
                self.offsets.add(exchange_sample(pending.sent_ns, received_ns, answered_ns, arrived_ns))
            offset_ns = self.offsets.offset_ns
            offset = ns_to_seconds(offset_ns) if offset_ns is not None else None
        self._answer = StepAnswer.from_result(result, time.perf_counter() - pending.sent_wall, offset)

    def _on_result(self, future: Future) -> None:
        if future is not self._result_future:
            return
        response = future.result()
        assert response is not None
        result: Episode.Result = response.result
        self._episode_uuid = None
        ended_normally = response.status == GoalStatus.STATUS_SUCCEEDED and result.outcome in (
            Episode.Result.ENDED,
            Episode.Result.FINISHED,
        )
        if self._finishing or ended_normally:
            return
        text = result.error or "no reason given"
        outcome = outcome_name(result.outcome)
        message = f"agent {self.agent_name} ended the episode after {result.steps} steps ({outcome}): {text}"
        if result.outcome == Episode.Result.ROBOT_STOPPED:
            self._fail(RobotStoppedError(message, needs_person=result.needs_person))
        else:
            self._fail(EpisodeEndedError(message, outcome))

    def _fail(self, error: Exception) -> None:
        self._error = error
        self._pending = None
        self._episode_uuid = None

    def _forget_episode(self) -> None:
        self._refused_at = None
        self._episode_uuid = None
        self._goal_handle = None
        self._result_future = None
        self._goal_future = None
        self._early_feedback = []
        self._pending = None
        self._answer = None
        self._error = None
        self._seq = 0
        self._waiting = _Waiting.NOTHING
        self._finishing = False

    def _now_ns(self) -> int:
        return self.node.get_clock().now().nanoseconds

    def destroy(self) -> None:
        self._action_client.destroy()
        self.node.destroy_publisher(self._command_pub)
        self.node.destroy_subscription(self._description_sub)
        self.node.destroy_subscription(self._status_sub)
