"""RLClient: reset/step/finish on a remote agent, synchronous for its caller.

Like nav2's BasicNavigator, it owns a private node (in its own rclpy context) that is
spun only inside its own calls, and every wait has a timeout that ends in a typed
error naming what was awaited. Between calls nothing spins: the agent's control loop
keeps running on its own, which is the point.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from spin_decoupler_msgs.msg import AgentDescription
from spin_decoupler_ros.contract import AGENT_LIVELINESS_S
from spin_decoupler_ros.conversions import duration_to_ns
from spin_decoupler_ros.core.errors import AgentConflictError, AgentError, AgentNotFoundError, StepTimeoutError
from spin_decoupler_ros.core.spaces import ActionSpec
from spin_decoupler_ros.core.timing import ns_to_seconds
from spin_decoupler_ros.dds_profile import use_dds_profile
from spin_decoupler_ros.rl.channel import AgentChannel
from spin_decoupler_ros.rl.interrupts import interruptible, raise_dropped_ctrl_c, recover_executor, watch_for_ctrl_c
from spin_decoupler_ros.rl.step_answer import StepAnswer

_STATUS_NAMES = {0: "IDLE", 1: "RUNNING", 2: "HOLDING", 3: "FAULT", 4: "INACTIVE", 5: "STOPPED", 6: "OFFLINE"}
# How long connect() lets discovery settle before counting the agents in the namespace.
SECOND_AGENT_SETTLE_S = 0.2
# Callbacks taken (at most) before agents are counted, should news be waiting.
NEWS_TAKEN_AT_ONCE = 8
# How long a conflict's message waits for the agents' node names to be discovered.
NAME_SETTLE_S = 2.0
_UNKNOWN = "_UNKNOWN_"  # (rmw's _NODE_NAME_UNKNOWN_ before a node's name is known)
# How often a wait asks the graph whether the agent is still there (two misses: gone).
GRAPH_CHECK_S = 0.25
# An answer that comes within this fraction of its step's duration came early: the agent
# computes steps rather than living them (a simulated timing model).
EARLY_ANSWER_FRACTION = 0.5


def init_private_context(args: Sequence[str] | None = None) -> Context:
    """A fresh rclpy context that leaves signal handling (Ctrl-C) to the host program,
    on the decoupler's DDS profile (``dds_profile``) unless the process has one already.

    :param args: command-line arguments; rclpy reads the ``--ros-args`` part of them
        (remappings such as ``-r __ns:=/plant``, ``--params-file``, ``-p name:=value``).
    """
    use_dds_profile()
    context = Context()
    args = list(args) if args is not None else None
    try:
        from rclpy.signals import SignalHandlerOptions

        rclpy.init(args=args, context=context, signal_handler_options=SignalHandlerOptions.NO)
    except ImportError:  # very old rclpy
        rclpy.init(args=args, context=context)
    return context


class RLNode:
    """The RL side's private rclpy context, node and executor. One RLClient owns one by
    default; a VecEnv's clients share one, so N agents cost one executor.

    :param ros_args: command-line arguments whose ``--ros-args`` part configures the node.
    """

    def __init__(
        self, node_name: str = "rl_client", ros_args: Sequence[str] | None = None, parameter_services: bool = False
    ) -> None:
        self.context = init_private_context(ros_args)
        self.node = Node(node_name, context=self.context, start_parameter_services=parameter_services)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        watch_for_ctrl_c()

    def spin_once(self, timeout: float) -> None:
        """Run at most one ready callback, waiting up to ``timeout`` s for one; Ctrl-C
        meanwhile raises KeyboardInterrupt (``interrupts.py``)."""
        try:
            with interruptible():
                self.executor.spin_once(timeout_sec=max(timeout, 0.0))
            raise_dropped_ctrl_c()  # (the executor drops a task, with its finalizer, per callback)
        except KeyboardInterrupt:
            recover_executor(self.executor, [self.node])  # (the next spin serves the node again)
            raise

    def ok(self) -> bool:
        return self.context.ok()

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


class RLClient:
    """The RL side of one agent.

    :param agent_namespace: the agent node's namespace ("" or e.g. "/panda0").
    :param node_name: name of this side's private node.
    :param connect_timeout: seconds to wait for the agent's action server and description.
    :param reset_timeout: seconds to wait for a reset observation (a real arm may need
        several to go home).
    :param step_timeout_margin: seconds allowed beyond a step's duration before
        ``step()`` gives up; None derives it from the agent's RL timestep
        (10 timesteps, at least 2 s).
    :param parameter_services: offer the node's parameter services (off by default:
        each one is one more entity every spin has to wait on).
    :param busy_wait: seconds before a step's answer is due during which ``step()``
        polls instead of sleeping (and at most 4x that after). A process that slept
        through a whole action wakes slowly, 0.3-0.5 ms on a VM; polling the last
        moments costs this much CPU per step and saves most of that. An answer is due
        at the end of the step's duration or, where the last one came well before its
        own (an agent on simulated time), as long after the sending as that one took.
        Polling takes the answer where it waits, without spinning the executor
        (``AgentChannel.take_answer``). 0 disables it.
    :param ros_args: command-line arguments whose ``--ros-args`` part configures the
        private node: e.g. ``["--ros-args", "-r", "__ns:=/plant"]`` puts it in the agent's
        namespace, so the agent's relative names resolve without ``agent_namespace``.
    :param connect: connect in the constructor (else call ``connect()``).
    :param rl_node: an RLNode to share with other clients (then ``node_name``,
        ``parameter_services`` and ``ros_args`` are its own business); closing this client
        leaves it open.
    """

    def __init__(
        self,
        agent_namespace: str = "",
        *,
        node_name: str = "rl_client",
        connect_timeout: float = 10.0,
        reset_timeout: float = 30.0,
        step_timeout_margin: float | None = None,
        parameter_services: bool = False,
        busy_wait: float = 0.001,
        ros_args: Sequence[str] | None = None,
        connect: bool = True,
        rl_node: RLNode | None = None,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.reset_timeout = reset_timeout
        self.step_timeout_margin = step_timeout_margin
        self.busy_wait = max(0.0, busy_wait)
        # The last step's round trip, where it came well before its duration was up (an
        # agent on simulated time answers once it has computed the step): when the next
        # answer is expected. None: at the end of its duration.
        self._answered_in: float | None = None
        self._owns_rl_node = rl_node is None
        self.rl_node = rl_node or RLNode(node_name, ros_args, parameter_services)
        self.node = self.rl_node.node
        self.channel = AgentChannel(self.node, agent_namespace)
        self._closed = False
        if connect:
            try:
                self.connect()
            except BaseException:
                self.close()  # (nothing of a client that never connected lingers)
                raise

    # -- connection ---------------------------------------------------------------------

    def connect(self, timeout: float | None = None) -> AgentDescription:
        """Wait for a live agent's action server and its latched description (a dead
        agent, which the graph holds on to for a while, does not count)."""
        timeout = self.connect_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        self._take_news(0.0)
        while not self.channel.server_ready():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                missing = "a live agent's Episode action server" if not self.channel.server_ready() else ""
                if self.channel.description is None:
                    missing = "its description" if not missing else missing + " and its description"
                raise AgentNotFoundError(
                    f"no agent at '{self.channel.agent_name}' after {timeout:g} s (missing {missing}). "
                    "Is the agent node running, in the same ROS_DOMAIN_ID and namespace, with the same "
                    "discovery range (ROS_AUTOMATIC_DISCOVERY_RANGE / ROS_LOCALHOST_ONLY)?"
                )
            self.rl_node.spin_once(min(remaining, 0.05))
        assert self.channel.description is not None
        self._refuse_a_second_agent(SECOND_AGENT_SETTLE_S)
        return self.channel.description

    def _refuse_a_second_agent(self, settle: float = 0.0) -> None:
        """Two live agents in one namespace (most often a stray one, left by another run)
        would both take this client's goals: refuse, naming them. Asked at connect (after
        ``settle`` s: a second agent is discovered a moment after the first), before every
        reset, and when a wait fails (test_no_orphans.py::
        test_a_second_agent_is_named_whenever_it_started)."""
        self._take_news(settle)
        count, names = self.channel.live_agents()
        if count <= 1:
            return
        # A publisher is discovered before its node's name is (the graph says
        # _NODE_NAME_UNKNOWN_ meanwhile): give the names a moment to arrive.
        deadline = time.monotonic() + NAME_SETTLE_S
        while any(_UNKNOWN in name for name in names) and time.monotonic() < deadline:
            time.sleep(0.02)
            count, names = self.channel.live_agents()
        raise AgentConflictError(
            f"{count} agents answer at '{self.channel.agent_name}' ({', '.join(names)}): another run's agent may "
            "still be running on this ROS domain; stop it, or use another namespace or ROS_DOMAIN_ID"
        )

    def _take_news(self, seconds: float) -> None:
        """Spin for ``seconds`` and take what is ready (at least once): the agents' status
        and liveliness news is in before they are counted."""
        deadline = time.monotonic() + seconds
        for _ in range(NEWS_TAKEN_AT_ONCE):
            self.rl_node.spin_once(0.0)
        while (remaining := deadline - time.monotonic()) > 0:
            self.rl_node.spin_once(min(remaining, 0.02))

    @property
    def description(self) -> AgentDescription:
        if self.channel.description is None:
            self.connect()
        assert self.channel.description is not None
        return self.channel.description

    @property
    def action_spec(self) -> ActionSpec:
        self.description  # noqa: B018 - connects if needed
        assert self.channel.spec is not None
        return self.channel.spec

    @property
    def rl_timestep(self) -> float:
        return ns_to_seconds(duration_to_ns(self.description.rl_timestep))

    @property
    def observation_size(self) -> int:
        return int(self.description.observation_size)

    # -- the protocol -------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: Sequence[float] | np.ndarray = ()) -> StepAnswer:
        """Start a new episode; return the agent's reset observation (seq 0) and ATO."""
        self.description  # noqa: B018
        self._refuse_a_second_agent()
        self.channel.send_reset(seed, options)
        return self._wait(self.reset_timeout, "reset")

    def step(
        self,
        action: Sequence[float] | np.ndarray,
        duration: float | None = None,
        while_acting: Callable[[], None] | None = None,
        *,
        then_action: Sequence[float] | np.ndarray | None = None,
    ) -> StepAnswer:
        """Execute ``action`` for ``duration`` seconds (None: the agent's rl_timestep).

        Returns the observation, with LAT (the previous action's measured duration) and ATO.
        From the observation until the next step, ``then_action`` runs (None: ``action``
        runs on), for agents that take one (``description.takes_then_action``).
        ``while_acting`` runs once the command is out, while the agent executes it (the
        learner's own work, e.g. gradient steps); the timeout counts from the sending.
        """
        try:
            self.channel.send_step(action, duration, then_action)
            sent = time.monotonic()
            if while_acting is not None:
                while_acting()
            due_in = duration if duration else self.rl_timestep
            expected_in = self._answered_in if self._answered_in is not None else due_in
            answer = self._wait(self.step_timeout(duration), f"step {self.channel.seq}", expected_in, start=sent)
        except BaseException as error:  # (an answer still due would arrive into the next step)
            if self.channel.waiting:
                why = "was interrupted (Ctrl-C)" if isinstance(error, KeyboardInterrupt) else f"raised {error!r}"
                self.channel.cancel_wait(f"step {self.channel.seq} {why}")
            raise
        early = answer.round_trip < EARLY_ANSWER_FRACTION * due_in
        self._answered_in = answer.round_trip if early else None
        return answer

    def finish(self, timeout: float = 5.0) -> None:
        """End the experiment: the agent ends the episode and holds. Idempotent."""
        future = self.channel.send_finish()
        if future is None:
            return
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            self.rl_node.spin_once(0.05)

    def step_timeout(self, duration: float | None) -> float:
        """Seconds to wait for a step of ``duration`` (None: the RL timestep) to be answered."""
        timestep = self.rl_timestep
        margin = self.step_timeout_margin
        if margin is None:
            margin = max(2.0, 10.0 * timestep)
        return (duration if duration else timestep) + margin

    def _wait(self, timeout: float, what: str, due_in: float | None = None, start: float | None = None) -> StepAnswer:
        """The answer, or StepTimeoutError ``timeout`` after ``start`` (default: now), or at
        once (within two graph checks) once the agent has left the ROS graph: no answer can
        come then (test_faults.py::test_a_reset_against_an_agent_that_left_fails_at_once).
        Ctrl-C meanwhile raises KeyboardInterrupt and gives the episode up: a step sent
        after it says so, and reset() goes on (test_interrupts.py)."""
        try:
            return self._await_answer(timeout, what, due_in, start)
        except KeyboardInterrupt:
            self.channel.cancel_wait(f"{what} was interrupted (Ctrl-C)")
            raise
        except (AgentError, StepTimeoutError) as error:
            try:
                self._refuse_a_second_agent()  # (two agents' answers interleaved: say why)
            except AgentConflictError as conflict:
                raise conflict from error
            raise

    def _await_answer(self, timeout: float, what: str, due_in: float | None, start: float | None) -> StepAnswer:
        start = time.monotonic() if start is None else start
        self.channel.listen()
        deadline = start + timeout
        poll_from = poll_until = deadline
        if due_in is not None and self.busy_wait > 0:
            poll_from = start + due_in - self.busy_wait
            poll_until = min(deadline, start + due_in + 4 * self.busy_wait)
        next_check, seen_gone = start + GRAPH_CHECK_S, 0
        while True:
            raise_dropped_ctrl_c()
            answer = self.channel.poll()
            if answer is not None:
                return answer
            now = time.monotonic()
            if now >= next_check:
                next_check = now + GRAPH_CHECK_S
                seen_gone = seen_gone + 1 if self._agent_left_graph() else 0
                if seen_gone >= 2:
                    raise self.timed_out(what, now - start, gone=True)
            if poll_from <= now < poll_until:  # poll: the answer is due any moment
                with interruptible():
                    taken = self.channel.take_answer()
                if not taken and not self.channel.can_take_answers:
                    self.rl_node.spin_once(0.0)
                continue
            remaining = deadline - now
            if remaining <= 0:
                raise self.timed_out(what, timeout)
            wait = poll_from - now if now < poll_from else remaining
            self.rl_node.spin_once(min(wait, max(next_check - now, 0.0)))

    def _agent_left_graph(self) -> bool:
        return not self.channel.agent_in_graph()

    def timed_out(self, what: str, timeout: float, gone: bool = False) -> StepTimeoutError:
        """Give up the outstanding wait; the error that says what was awaited and why."""
        waiting = self.channel.waiting_for()
        self.channel.cancel_wait(f"{what} timed out")
        if gone:
            how = (
                f"stopped asserting its liveliness for {AGENT_LIVELINESS_S:g} s (crashed, or frozen)"
                if self.channel.lapsed_agents
                else "has left the ROS graph (stopped or crashed)"
            )
            return StepTimeoutError(
                f"{what}: agent '{self.channel.agent_name}' {how} while this client waited for {waiting}: no "
                f"answer can come; given up after {timeout:.3g} s"
            )
        return StepTimeoutError(
            f"{what}: agent '{self.channel.agent_name}' did not answer within {timeout:.3g} s "
            f"(waiting for {waiting}); {self._liveness()}"
        )

    def _liveness(self) -> str:
        status = self.channel.status
        last = (
            f"its last status was {_STATUS_NAMES.get(status.state, status.state)}: '{status.message}'"
            if status is not None
            else "it never published a status"
        )
        if self.node.count_publishers(self.channel.status_topic) == 0:
            return f"it has left the ROS graph (stopped or crashed); {last}"
        return f"{last}. If it crashed, the graph may take a while to notice"

    # -- paper-level names (rl_spin_decoupler's RLSide) ----------------------------------

    def resetGetObs(self) -> tuple[np.ndarray, float]:  # noqa: N802 - the paper's name
        """Alias of ``reset()``: (observation, ATO)."""
        answer = self.reset()
        return answer.observation, answer.ato

    def stepSendActGetObs(  # noqa: N802 - the paper's name
        self, action: Sequence[float] | np.ndarray, duration: float | None = None
    ) -> tuple[float, np.ndarray, float | None, float]:
        """Alias of ``step()``: (LAT, observation, agent reward or None, ATO), the ancestor's order."""
        answer = self.step(action, duration)
        return answer.lat, answer.observation, answer.agent_reward, answer.ato

    def stepExpFinished(self) -> None:  # noqa: N802 - the paper's name
        """Alias of ``finish()``."""
        self.finish()

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Finish the episode, if any, and release the node and its context. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.rl_node.ok():
                self.finish(timeout=1.0)
        finally:
            self.channel.destroy()
            if self._owns_rl_node:
                self.rl_node.close()

    def __enter__(self) -> RLClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
