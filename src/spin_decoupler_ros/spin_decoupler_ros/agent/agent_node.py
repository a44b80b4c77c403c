"""AgentNode: the base of every agent, a timer-driven control loop that serves RL steps.

One step, on this side::

    Episode goal (reset)  -> reset_workspace() ... reset_done() -> feedback seq 0
    step_command (topic)  -> checked by AgentProtocol -> apply_action() at once,
                             control timer re-phased to the action's start
    control timer ticks   -> apply_action(last action) every period
    tick where due        -> build_observation() -> feedback seq n (LAT, ATO);
                             the step's then_action, if any, runs from here on

Nothing here blocks, sleeps or waits: an Episode goal is EXECUTING while its episode
runs, and its execute callback runs once, when the episode ends (``execute_goal``,
``report_goal``); steps are handed to the control loop through the protocol state, not
through a queue a callback waits on.

Subclasses implement the hooks (``build_observation``, ``apply_action``,
``reset_workspace``, ``null_action``; optionally ``reset_done``, ``on_action_start``,
``agent_reward``, ``safe_hold``). A hook that raises ends the episode ABORTED; one that
raises ``RobotStoppedError`` (the plant stopped on its own) ends it ROBOT_STOPPED.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.clock import Clock, ClockType, ROSClock
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.node import Node
from rclpy.timer import Timer

from spin_decoupler_msgs.action import Episode
from spin_decoupler_msgs.msg import AgentDescription, AgentStatus, StepCommand, StepTiming
from spin_decoupler_ros.agent.diagnostics import AgentDiagnostics, Check, declare_health_parameters
from spin_decoupler_ros.contract import AGENT_ALIVE_EVERY_S, COMMAND_QOS, LATCHED_QOS, STATUS_QOS, TIMING_QOS
from spin_decoupler_ros.conversions import (
    duration_to_ns,
    float64_field,
    ns_to_duration,
    ns_to_time,
    set_stamp,
)
from spin_decoupler_ros.core.auth import KEY_BYTES, command_tag, tags_match, takeover_proof
from spin_decoupler_ros.core.errors import ParameterError, RobotStoppedError
from spin_decoupler_ros.core.health import Figures, LearnerState, assess_control_loop, assess_learner
from spin_decoupler_ros.core.protocol import AgentProtocol, AgentState, CommandRejected, StepStart, TickEvent
from spin_decoupler_ros.core.spaces import ActionSpec
from spin_decoupler_ros.core.think_time import TimingModel, WorldGate
from spin_decoupler_ros.core.timing import TickMonitor, WakeLatency, ns_to_seconds, seconds_to_ns
from spin_decoupler_ros.node_runner import ExitRequested
from spin_decoupler_ros.params import (
    check_no_unknown_parameters,
    declare_bool,
    declare_float,
    declare_int,
    declare_str,
)
from spin_decoupler_ros.tools.realtime import request_realtime

# The same refusal (a client retrying while the agent is paused) is logged at most this
# often, with a count (test_lifecycle.py).
REFUSAL_LOG_EVERY_S = 10.0
# A self-clocked agent simulates ticks back to back for at most this long (wall) per
# callback, so commands, cancels and goals are taken in between.
SIMULATION_SLICE_S = 0.002
# What /diagnostics says of the learner, from the agent's status.
LEARNER_STATES = {
    AgentStatus.IDLE: LearnerState.IDLE,
    AgentStatus.RUNNING: LearnerState.RUNNING,
    AgentStatus.HOLDING: LearnerState.HOLDING,
    AgentStatus.FAULT: LearnerState.FAULT,
    AgentStatus.INACTIVE: LearnerState.INACTIVE,
    AgentStatus.STOPPED: LearnerState.ROBOT_STOPPED,
    AgentStatus.OFFLINE: LearnerState.INACTIVE,
}

# Lifecycle states an agent can be brought to at start (parameter start_state).
START_STATES = ("active", "inactive", "unconfigured")

# How long a finished episode's goal is kept for its result (rclpy drops it within twice
# this). Each status message of the action lists every kept goal and each client converts
# the whole list on every goal change, so the list must stay short however short the
# episodes. The client asks for the result as soon as its goal is accepted, long before
# the episode ends. (test_decoupler.py::test_finished_episodes_leave_the_action_status_soon)
RESULT_KEPT_S = 1  # (an int: rclpy types it so)


@dataclass
class _EpisodeHandle:
    goal_handle: ServerGoalHandle
    received_ns: int  # when the goal arrived: the reset's "command received" time


def execute_goal(goal_handle: ServerGoalHandle) -> None:
    """Mark an accepted goal EXECUTING without starting its execute callback.

    ``ServerGoalHandle.execute`` would start it as a coroutine that waits out the whole
    episode, and executors resume a waiting coroutine on every wake-up: rclpy's
    EventsExecutor back to back, a core's worth for as long as the episode runs (its
    ``IterateTask``). The episode's end calls the callback instead (``report_goal``),
    which returns at once (test_executors.py::test_an_agent_waiting_for_its_learner_takes_no_cpu).
    """
    if not goal_handle.is_cancel_requested:  # (as ServerGoalHandle.execute does)
        goal_handle._update_state(_rclpy.GoalEvent.EXECUTE)


def report_goal(action_server: ActionServer, goal_handle: ServerGoalHandle, result: Episode.Result) -> None:
    """End a goal that ``execute_goal`` marked EXECUTING with ``result``: its execute
    callback runs once, from the executor, and returns it."""

    def finish(handle: ServerGoalHandle) -> Episode.Result:
        if result.outcome == Episode.Result.CANCELED and handle.is_cancel_requested:
            handle.canceled()
        elif result.outcome in (Episode.Result.ENDED, Episode.Result.FINISHED):
            handle.succeed()
        else:
            handle.abort()
        return result

    action_server.notify_execute(goal_handle, finish)


def _unexpected_execute(goal_handle: ServerGoalHandle) -> Episode.Result:
    """The action server's default execute callback: never called (``report_goal`` gives
    each goal its own), so a goal that gets here is aborted rather than left running."""
    goal_handle.abort()
    return Episode.Result(outcome=Episode.Result.ABORTED, error="the agent executed a goal it did not run")


@dataclass(frozen=True)
class AgentSpaces:
    """What an agent takes and gives: its action box and its observation's size."""

    action_low: Sequence[float] | np.ndarray
    action_high: Sequence[float] | np.ndarray
    observation_size: int
    observation_names: Sequence[str] = ()


@dataclass(frozen=True)
class AgentParameters:
    """The base parameters, validated (see ``declare_agent_parameters``)."""

    rl_timestep_ns: int
    control_period_ns: int
    watchdog_ns: int
    max_step_duration_ns: int
    clip_actions: bool
    exit_on_finish: bool
    realtime_priority: int
    period_log: str
    timing_model: TimingModel


def rephase_timer(timer: Timer, period_ns: int, lead_ns: int) -> None:
    """Make ``timer``'s next tick due ``period_ns - lead_ns`` from now, then every
    ``period_ns`` after it: so that it *runs* one period from now, its callbacks running
    ``lead_ns`` (see WakeLatency) after they are due. rcl's reset counts from now with
    the period at that moment, and every later call adds the period it has then."""
    timer.timer_period_ns = period_ns - lead_ns
    timer.reset()
    timer.timer_period_ns = period_ns


def declare_agent_parameters(node: Node) -> AgentParameters:
    """Declare and check the parameters every agent has; raise ParameterError naming a bad one."""
    rl_timestep = declare_float(
        node, "rl_timestep", 0.1, "default duration of one RL step's action", unit="s", low=1e-4, high=60.0
    )
    control_rate = declare_float(node, "control_rate", 100.0, "control loop frequency", unit="Hz", low=1.0, high=5000.0)
    period = 1.0 / control_rate
    if rl_timestep <= period:
        raise ParameterError(
            f"parameter 'rl_timestep' = {rl_timestep:g} s must exceed the control period "
            f"1/control_rate = {period:g} s; allowed: rl_timestep > {period:g} s (or raise control_rate)"
        )
    watchdog = declare_float(
        node,
        "watchdog_timeout",
        0.0,
        "hold position when the RL side is silent this long after an observation; 0 = 5 RL timesteps, at least 0.5 s",
        unit="s",
        low=0.0,
        high=3600.0,
    )
    if watchdog == 0.0:
        watchdog = max(0.5, 5.0 * rl_timestep)
    elif watchdog <= rl_timestep:
        raise ParameterError(
            f"parameter 'watchdog_timeout' = {watchdog:g} s must exceed rl_timestep ({rl_timestep:g} s)"
        )
    max_duration = declare_float(
        node, "max_step_duration", 10.0, "longest action duration a step may request", unit="s", low=1e-4, high=3600.0
    )
    if max_duration < rl_timestep:
        raise ParameterError(
            f"parameter 'max_step_duration' = {max_duration:g} s is below rl_timestep ({rl_timestep:g} s)"
        )
    model_text = declare_str(
        node,
        "timing_model",
        "wall",
        "how long the world runs on while the learner thinks: none, fixed:<s>, lognormal:<median>,<p99>, "
        "replay:<steps.csv> or wall (docs/time_models.md)",
    )
    try:
        timing_model = TimingModel.parse(model_text)
    except ParameterError as error:
        raise ParameterError(f"parameter 'timing_model': {error}") from None
    return AgentParameters(
        timing_model=timing_model,
        rl_timestep_ns=seconds_to_ns(rl_timestep),
        control_period_ns=seconds_to_ns(period),
        watchdog_ns=seconds_to_ns(watchdog),
        max_step_duration_ns=seconds_to_ns(max_duration),
        clip_actions=declare_bool(
            node, "clip_actions", True, "clip finite out-of-range actions (true) or reject them (false)"
        ),
        exit_on_finish=declare_bool(node, "exit_on_finish", False, "exit the node when the RL side finishes"),
        realtime_priority=declare_int(
            node,
            "realtime_priority",
            0,
            "SCHED_FIFO priority for the control loop thread; 0 keeps normal scheduling",
            low=0,
            high=99,
        ),
        period_log=declare_str(
            node,
            "period_log",
            "",
            "write every control period to this .npy file at exit, rows of (tick that ended it, length) in ns "
            "on the agent's clock; for benchmarks",
        ),
    )


class AgentNode(LifecycleNode):
    """Base class of an agent node: subclass it and implement the hooks.

    Give the action box and observation size to the constructor, or, when they depend
    on the agent's own parameters, override ``configure()`` to declare those parameters
    and return them. Create what talks to the plant in ``setup()``.

    A managed (lifecycle) node, with the standard services (``~/change_state``,
    ``~/get_state``): *configure* declares and checks the parameters and creates the
    control loop, the topics and the plant's interface (``configure()``, ``setup()``),
    and from then on the loop holds the plant (``safe_hold``); *activate* serves
    episodes; *deactivate* ends the running one (outcome DEACTIVATED), brakes and holds,
    and refuses episodes; *cleanup* destroys what configure made; *shutdown* also ends
    the process. ``run_node`` brings it to ``start_state`` (active by default;
    test_lifecycle.py holds these rules).

    :param node_name: the node's name.
    :param action_low: lower bounds of the action box.
    :param action_high: upper bounds of the action box.
    :param observation_size: length of what ``build_observation`` returns.
    :param observation_names: optional names of the observation elements.
    :param agent_type: a label published in the description (defaults to the class name).

    Under a ``timing_model`` other than ``wall`` the world runs on for a think time the
    model draws, not the machine's (docs/time_models.md). An agent whose plant lives in
    the node sets ``simulates_its_plant``: it then keeps its own clock, ticking back to
    back while the world runs and idle while it waits for the learner. An agent on a
    simulator's clock (``use_sim_time``) stops commanding where the world is to wait; a
    lockstep simulator (the Panda mock with ``lockstep_timeout: 0``) then waits with it,
    and the next action's first command lets it go on (at the earliest where the
    commands already sent let the simulator run: ``commitment_ns``, ``commit_world``).
    Any other agent refuses such a model: a real robot's time is what it is.
    """

    simulates_its_plant: ClassVar[bool] = False
    # run_node lets the last episode result and status go out before the node goes.
    flush_on_exit: ClassVar[bool] = True
    # Set by an agent that calls commit_world() for every command it sends (see commitment_ns).
    reports_commitments: ClassVar[bool] = False
    # Why this agent takes no StepCommand.then_action; empty: it takes one (what runs from
    # a step's observation until the next step starts, in place of the step's action).
    then_action_refusal: ClassVar[str] = ""

    def __init__(
        self,
        node_name: str,
        *,
        action_low: Sequence[float] | np.ndarray | None = None,
        action_high: Sequence[float] | np.ndarray | None = None,
        observation_size: int | None = None,
        observation_names: Sequence[str] = (),
        agent_type: str | None = None,
        **node_kwargs: object,
    ) -> None:
        super().__init__(node_name, **node_kwargs)  # type: ignore[arg-type]
        self._given_spaces = (
            AgentSpaces(action_low, action_high, observation_size, observation_names)
            if action_low is not None and action_high is not None and observation_size is not None
            else None
        )
        self._agent_type = agent_type or type(self).__name__
        # Read before configure: run_node takes the node this far (bring_up).
        self.start_state = declare_str(
            self,
            "start_state",
            "active",
            "the lifecycle state run_node brings the node to at start; inactive or unconfigured leave the rest "
            "to an operator (ros2 lifecycle set <node> activate) or a lifecycle manager",
            choices=START_STATES,
        )
        # What a failed transition raised (run_node exits with it: a ParameterError names the parameter).
        self.transition_error: BaseException | None = None
        self._configured = False
        self._active = False
        # What configure makes, cleanup destroys: all but what exists now (the lifecycle services).
        self._kept_entities = self._entity_ids()

    # -- lifecycle transitions -----------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._transition("configure", self._configure_agent)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._transition("activate", self._activate)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._transition("deactivate", self._deactivate)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._transition("cleanup", self._cleanup)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._transition("shutdown", self._shutdown)

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        if self._configured:  # a transition failed half way: hold, then release it all
            self._hold_safely()
            self._release()
        return TransitionCallbackReturn.SUCCESS  # to unconfigured

    def _transition(self, name: str, body: Callable[[], None]) -> TransitionCallbackReturn:
        """Run a transition. A refused parameter fails it (the node stays where it was);
        anything else is an error (the node holds and releases everything: unconfigured).
        rclpy turns an exception into ERROR without a word: here it is said."""
        self.transition_error = None
        try:
            body()
        except ParameterError as exc:
            self.transition_error = exc
            self.get_logger().error(f"{name} failed: {exc}")
            if name == "configure":
                self._release()
            return TransitionCallbackReturn.FAILURE
        except Exception as exc:
            self.transition_error = exc
            self.get_logger().error(f"{name} raised {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            return TransitionCallbackReturn.ERROR
        return TransitionCallbackReturn.SUCCESS

    def _entity_ids(self) -> set[int]:
        entities = (*self.publishers, *self.subscriptions, *self.clients, *self.services, *self.timers)
        return {id(entity) for entity in (*entities, *self.guards, *self.waitables)}

    def _release(self) -> None:
        """Destroy what configure made (timers, topics, the Episode server, the plant's
        interface), so configure can run again. Parameters stay declared, with their
        values: most are read-only, and a configure after this reads them again."""
        kept = self._kept_entities
        made: tuple[tuple[Iterable[Any], Callable[[Any], object]], ...] = (
            (self.timers, self.destroy_timer),
            # (an action server removes itself; any other waitable is removed)
            (self.waitables, lambda w: getattr(w, "destroy", lambda: self.remove_waitable(w))()),
            (self.subscriptions, self.destroy_subscription),
            (self.publishers, self.destroy_publisher),
            (self.clients, self.destroy_client),
            (self.services, self.destroy_service),
        )
        for entities, destroy in made:
            for entity in [e for e in entities if id(e) not in kept]:
                destroy(entity)
        self._configured = False
        self._active = False

    def _configure_agent(self) -> None:
        """Declare and check the parameters; create the loop, the topics, the Episode
        server and (``setup()``) the plant's interface. The loop holds from here on."""
        self._configured = True  # (so that a failure half way releases what was made)
        self.params = declare_agent_parameters(self)
        diagnostics_period, self.health_thresholds = declare_health_parameters(self)
        clock = self.get_clock()
        self._on_simulated_time = isinstance(clock, ROSClock) and clock.ros_time_is_active
        model = self.params.timing_model
        self._self_clocked = model.simulated and self.simulates_its_plant and not self._on_simulated_time
        # On a simulator's clock under a model: the world waits where the agent stops commanding.
        self._waits_on_clock = model.simulated and not self.simulates_its_plant and self._on_simulated_time
        self._clock_ran_on_logged = False
        if model.simulated and not (self._self_clocked or self._waits_on_clock):
            where = (
                "on /clock (use_sim_time), but it simulates its plant and keeps its own clock under a timing "
                "model: run it without use_sim_time"
                if self._on_simulated_time
                else "on wall time against a plant it does not simulate, and a real robot's time is what it is: "
                "use 'wall', or run it on a lockstep simulator's clock (use_sim_time)"
            )
            raise ParameterError(
                f"parameter 'timing_model' = '{model.describe()}' is refused: {type(self).__name__} runs {where} "
                "(docs/time_models.md)"
            )
        self._world = WorldGate(model, self.params.control_period_ns)
        self._simulated_now_ns = 0  # a self-clocked agent's time: its next tick
        # Arrived while the world runs on for the learner's think time: a step, a finish or
        # a new episode starts where the think time ends, never at the wall time it came
        # (test_timing_models.py::test_a_seeded_run_repeats_through_terminations_resets_and_a_resume).
        self._waiting_command: StepCommand | None = None
        self._waiting_goal: ServerGoalHandle | None = None
        spaces = self._given_spaces if self._given_spaces is not None else self.configure()
        spec = ActionSpec(np.asarray(spaces.action_low), np.asarray(spaces.action_high), clip=self.params.clip_actions)
        observation_names = tuple(spaces.observation_names)
        if observation_names and len(observation_names) != spaces.observation_size:
            raise ValueError(f"{len(observation_names)} observation names for {spaces.observation_size} elements")
        self.observation_size = int(spaces.observation_size)
        self._protocol = AgentProtocol(
            spec,
            rl_timestep_ns=self.params.rl_timestep_ns,
            control_period_ns=self.params.control_period_ns,
            watchdog_ns=self.params.watchdog_ns,
            max_duration_ns=self.params.max_step_duration_ns,
            then_action_refusal=self.then_action_refusal,
        )
        history = 2_000_000 if self.params.period_log else 0  # 32 MB: over an hour at 500 Hz
        self._tick_monitor = TickMonitor(self.params.control_period_ns, history=history)
        self._wake_latency = WakeLatency(self.params.control_period_ns)
        self._episodes: dict[bytes, _EpisodeHandle] = {}
        self._current_step: StepStart | None = None
        self._rejected = 0
        self._refusal_said, self._refusal_said_at, self._refusals_unsaid = "", 0.0, 0  # (_say_refusal)
        self._dropped = 0  # commands for the running episode that its client did not send
        self._dropped_said_at = -1.0
        self._dropped_published = 0  # the count the last status carried
        self._status_state = -1
        self._status_message = ""
        self._status_client = ""
        self._faulted_hold_logged = False
        self._stopped_reason: str | None = None  # the robot stopped and a person must act
        self._feedback_msg = Episode.Feedback()

        self._last_duration_ns = 0  # the last observed action's, for the learner's think time
        self._diagnostics = AgentDiagnostics(self, diagnostics_period, self._health_checks)
        self._status_pub = self.create_publisher(AgentStatus, "status", STATUS_QOS)
        self._alive_timer = self.create_timer(
            AGENT_ALIVE_EVERY_S, self._status_pub.assert_liveliness, clock=Clock(clock_type=ClockType.STEADY_TIME)
        )
        self._description_pub = self.create_publisher(AgentDescription, "description", LATCHED_QOS)
        self._timing_pub = self.create_publisher(StepTiming, "step_timing", TIMING_QOS)
        self._command_sub = self.create_subscription(StepCommand, "step_command", self._on_step_command, COMMAND_QOS)
        self._action_server = ActionServer(
            self,
            Episode,
            "episode",
            execute_callback=_unexpected_execute,
            goal_callback=self._on_goal,
            handle_accepted_callback=self._on_goal_accepted,
            cancel_callback=self._on_cancel,
            result_timeout=RESULT_KEPT_S,
        )
        # A self-clocked agent's timer fires back to back while its world runs, and is
        # cancelled while the world waits (nothing to simulate: the CPU is the learner's).
        timer_period = 0.0 if self._self_clocked else ns_to_seconds(self.params.control_period_ns)
        self._control_timer = self.create_timer(timer_period, self._on_control_timer)
        if self._self_clocked:
            self._control_timer.cancel()

        self._description_pub.publish(
            AgentDescription(
                agent_type=self._agent_type,
                action_low=float64_field(spec.low),
                action_high=float64_field(spec.high),
                clip_actions=spec.clip,
                takes_then_action=not self.then_action_refusal,
                observation_size=self.observation_size,
                observation_names=list(observation_names),
                rl_timestep=ns_to_duration(self.params.rl_timestep_ns),
                control_period=ns_to_duration(self.params.control_period_ns),
            )
        )
        self._ready_logged = False
        self._set_status(AgentStatus.INACTIVE, "configured, not active: holding; activate to serve episodes", "")
        self.setup()
        check_no_unknown_parameters(self)  # (everything is declared by now: a typo is named)
        self._request_realtime(self.params.realtime_priority)

    def _activate(self) -> None:
        self._active = True
        if self._stopped_reason is not None:
            self.get_logger().info("activated after a robot stop: episodes are served again")
            self._stopped_reason = None
        self._set_status(AgentStatus.IDLE, "waiting for an RL client", "")
        if self._self_clocked:  # (a clocked agent says it from its first active tick)
            self._log_ready()

    def _deactivate(self) -> None:
        self._active = False
        self._ready_logged = False
        self._end_episode(Episode.Result.DEACTIVATED, "the agent was deactivated: it holds until activated again")
        self._set_status(AgentStatus.INACTIVE, "deactivated, not active: holding; activate to serve episodes", "")
        self._hold_safely()
        self.get_logger().info("deactivated: holding, refusing episodes until activated")

    def _cleanup(self) -> None:
        self._hold_safely()  # the last command: the loop stops here
        self._save_period_log()
        self._release()

    def _shutdown(self) -> None:
        if self._configured:
            self._end_episode(Episode.Result.ABORTED, "the agent is shutting down")
            self._set_status(AgentStatus.OFFLINE, "the agent is shutting down", "")
            self._cleanup()
        self._exit_timer = self.create_timer(0.0, self._exit)  # leave spin: the process ends

    # -- hooks for subclasses ---------------------------------------------------------

    def configure(self) -> AgentSpaces:
        """Declare the agent's own parameters and return its spaces (when not given to
        the constructor). Runs after the base parameters are declared, before anything
        is created."""
        raise NotImplementedError("give the action box and observation size, or override configure()")

    def setup(self) -> None:
        """Declare the agent's own parameters, create what talks to the plant (its topics,
        clients) and set the plant's initial state. Runs at the end of configure, once
        everything of the base exists; what it creates, cleanup destroys, and a configure
        after that runs it again."""

    def build_observation(self) -> Sequence[float] | np.ndarray:
        """The observation now: ``observation_size`` finite numbers."""
        raise NotImplementedError

    def apply_action(self, action: np.ndarray) -> None:
        """Command the plant with ``action`` (already checked against the action box).

        Called on every control tick with the current action, and once at the moment a
        new action arrives.
        """
        raise NotImplementedError

    def reset_workspace(self, seed: int | None, options: np.ndarray) -> None:
        """Start resetting the plant for a new episode. Must not block: the control loop
        then polls ``reset_done()`` each tick."""
        raise NotImplementedError

    def null_action(self) -> np.ndarray:
        """The safe action: what the agent applies when no RL action is current."""
        return np.zeros(self._protocol.spec.size)

    def reset_done(self) -> bool:
        """Whether the reset has finished; the reset observation goes out on the first tick it is."""
        return True

    def on_action_start(self, action: np.ndarray) -> None:
        """A new action starts now (called once, before its first ``apply_action``): a
        step's, or, once its observation is taken, the step's ``then_action``."""

    def agent_reward(self) -> float | None:
        """An agent-side reward for the step just observed, or None (the RL side computes it)."""
        return None

    def safe_hold(self) -> None:
        """Hold the plant safely: applied when idle, holding, or after a hook failed."""
        self.apply_action(self.null_action())

    def diagnostic_checks(self, figures: Figures) -> list[Check]:
        """Statuses of the agent's own to publish on /diagnostics beside the control loop's
        and the learner's (the Panda: its joint states). Runs once per diagnostics period."""
        return []

    # -- public state -----------------------------------------------------------------

    @property
    def protocol(self) -> AgentProtocol:
        return self._protocol

    @property
    def action_spec(self) -> ActionSpec:
        return self._protocol.spec

    def commitment_ns(self, now_ns: int) -> int:
        """How far a command sent at ``now_ns`` lets a lockstep simulator run at least: to
        the next tick. (The last tick that commands is the one this puts at the point where
        the world is to wait; a command that reaches further says so with ``commit_world``.)"""
        return now_ns + self.params.control_period_ns

    def commit_world(self, horizon_ns: int) -> None:
        """A command that lets a lockstep simulator run to ``horizon_ns`` went out (for an
        agent that ``reports_commitments``; the base assumes ``commitment_ns`` of every
        tick that applies an action otherwise). The next action cannot start before it.
        (Kept only where the world waits for commands: elsewhere nothing reads it.)"""
        if self._waits_on_clock:
            self._world.commit(horizon_ns)

    def _commanded(self, now: int) -> None:
        if self._waits_on_clock and not self.reports_commitments:
            self._world.commit(self.commitment_ns(now))

    @property
    def waits_on_clock(self) -> bool:
        """Under a timing model on a lockstep simulator's clock: the simulator runs only as
        far as the commands sent let it, so no command can arrive late, and a tick that
        sends none leaves the world standing (a stall guard must not skip one)."""
        return self._waits_on_clock

    @property
    def events_executor_fit(self) -> bool:
        """Whether the process may spin this agent on rclpy's EventsExecutor (executors.py):
        only a self-clocked one, whose time is its simulation's, on no clock."""
        return getattr(self, "_self_clocked", False)

    def world_waits(self) -> bool:
        """Whether, under a timing model, the world stands still waiting for the learner
        (or, self-clocked, for an episode): no tick is then due."""
        if self._self_clocked:
            return self._control_timer.is_canceled()
        return self._waits_on_clock and self._world.waits_from_ns is not None

    def _health_checks(self, figures: Figures) -> list[Check]:
        """The base's statuses for /diagnostics (core/health.py holds the rules). Also,
        once a period, the status topic catches up with drops its throttle left unsaid."""
        if self._dropped != self._dropped_published:
            self._publish_status(self._status_message)
        thresholds = self.health_thresholds
        values = figures.key_values()
        level, text = assess_control_loop(figures, thresholds, waiting=self.world_waits())
        checks = [Check("control loop", level, text, tuple(values[:4]))]
        level, text = assess_learner(LEARNER_STATES.get(self._status_state, LearnerState.IDLE), figures, thresholds)
        about = (("client", self._status_client or "-"), ("status", self._status_message))
        checks.append(Check("learner", level, text, (*about, *values[4:])))
        checks.extend(self.diagnostic_checks(figures))
        return checks

    def now_ns(self) -> int:
        """The agent's time: its clock's, or a self-clocked agent's simulated time. Known
        once the agent is configured: from ``setup()`` on, not in ``__init__``."""
        try:
            self_clocked = self._self_clocked
        except AttributeError:
            raise RuntimeError(
                f"{type(self).__name__} asked now_ns() before it was configured: the agent's time is known from "
                "setup() on (the plant's state belongs there, not in __init__; docs/writing_an_agent.md)"
            ) from None
        if self_clocked:
            return self._simulated_now_ns
        return self.get_clock().now().nanoseconds

    def control_periods(self) -> np.ndarray:
        """Control periods recorded so far, rows of (tick that ended it, length) in ns;
        empty unless ``period_log`` is set."""
        return self._tick_monitor.period_log()

    def readWhatToDo(self) -> AgentState:  # noqa: N802 - rl_spin_decoupler's AgentSide name
        """What the agent is doing now. The ancestor polled its socket with this call; here
        commands arrive as events and the control loop acts on them, so it only reports."""
        return self._protocol.state

    # -- the control loop ---------------------------------------------------------------

    def _log_ready(self) -> None:
        self._ready_logged = True
        spec = self._protocol.spec
        self.get_logger().info(
            f"agent ready: action size {spec.size}, observation size {self.observation_size}, "
            f"rl_timestep {ns_to_seconds(self.params.rl_timestep_ns):g} s, "
            f"control period {ns_to_seconds(self.params.control_period_ns) * 1e3:g} ms, "
            f"watchdog {ns_to_seconds(self.params.watchdog_ns):g} s, "
            f"timing model {self.params.timing_model.describe()}"
        )

    def _on_control_timer(self) -> None:
        if self._self_clocked:
            self._simulate()
            return
        if not self._ready_logged and self._active:  # said from the loop itself: ready means running
            self._log_ready()
        now = self.now_ns()
        self._note_period(now, self._tick_monitor.on_tick(now))
        if not self._on_simulated_time:
            # On wall time, how late this tick ran (the timer already counts from its next
            # due time). On simulated time a tick runs when /clock reaches it: nothing to learn.
            until_next = self._control_timer.time_until_next_call()
            if until_next is not None:
                self._wake_latency.on_tick(self.params.control_period_ns - until_next)
        self._control_step(now)

    def _simulate(self) -> None:
        """A self-clocked agent's ticks, back to back while its world runs (for one slice
        of wall time at most); the timer stops when the world waits."""
        period = self.params.control_period_ns
        slice_end = time.monotonic() + SIMULATION_SLICE_S
        while True:
            now = self._simulated_now_ns
            self._note_period(now, self._tick_monitor.on_tick(now))
            if not self._control_step(now):
                self._control_timer.cancel()
                return
            self._simulated_now_ns = now + period
            if time.monotonic() >= slice_end:
                return

    def _note_period(self, now: int, period: int | None) -> None:
        if period is not None:
            self._diagnostics.window.on_period(now, period, period > self._tick_monitor.late_threshold_ns)

    def _resume_world(self) -> None:
        if self._self_clocked and self._control_timer.is_canceled():
            self._control_timer.reset()

    def _control_step(self, now: int) -> bool:
        """One control tick at ``now``; False when the world waits there for the learner
        (nothing was applied: the tick is to be run again when it may go on)."""
        protocol = self._protocol
        goal = self._waiting_goal
        if goal is not None and self._world.may_start(now):
            self._waiting_goal = None
            self._begin_episode(goal, now)  # the reset's first tick is this one (below)
        command = self._waiting_command
        if command is not None and self._world.may_start(now):
            self._waiting_command = None
            if command.kind == StepCommand.FINISH:
                self._finish(bytes(command.episode_id.uuid))
            else:
                self._begin_step(command, now)  # applies the new action for this tick
            return True
        if protocol.state is AgentState.AFTER_RESET:
            # The reset hook drives the plant until it reports done.
            done = self._call_hook("reset_done", self.reset_done)
            self._commanded(now)
            if done:
                self._send_reset_observation(now)
                return self._world.may_run(now)
            return True
        if self._self_clocked and protocol.state is AgentState.IDLE:
            return False  # no episode: a paused simulation holds
        event = protocol.on_tick(now)
        observed = False
        if event is TickEvent.OBSERVE:
            observed = self._send_step_observation(now)  # first: the RL side is waiting for it
            if observed:
                self._world.observed(now)
                step = self._current_step
                if step is not None and step.then_action is not None:  # it runs from here on
                    self._call_hook("on_action_start", self.on_action_start, step.then_action)
        elif event is TickEvent.WATCHDOG:
            self._on_watchdog(now)
        if self._waits_on_clock:
            runs = protocol.state is AgentState.EXECUTING or self._world.may_commit(self.commitment_ns(now))
            if not runs:
                self._check_the_clock_waits(now)
        else:
            runs = self._world.may_run(now) or protocol.state is AgentState.EXECUTING
        if runs:
            self._apply_current()
            self._commanded(now)
        if observed and self._timing_pub.get_subscription_count() > 0:
            # After the commands, and only for a listener: it is for logs (the client
            # has each step's timing in its answer).
            self._timing_pub.publish(self._feedback_msg.timing)
        return runs

    def _check_the_clock_waits(self, now: int) -> None:
        """Say once if the simulator's clock runs on although the world waits for the
        learner: it is not lockstep, and think times are the machine's, not the model's."""
        until = self._world.waits_from_ns
        if until is None or self._clock_ran_on_logged:
            return
        if now > until + self.params.control_period_ns:
            self._clock_ran_on_logged = True
            self.get_logger().error(
                f"timing model {self.params.timing_model.describe()}: the simulator's clock ran on past "
                f"{ns_to_seconds(now - until):.3f} s after where the world waits for the learner; it does not "
                "wait for commands (the Panda mock waits with lockstep: true and lockstep_timeout: 0), so think "
                "times are longer than the model's"
            )

    def _apply_current(self) -> None:
        action = self._protocol.active_action
        if action is not None:
            self._call_hook("apply_action", self.apply_action, action)
        else:
            self._hold_safely()

    def _hold_safely(self) -> None:
        try:
            self.safe_hold()
            self._faulted_hold_logged = False
        except Exception as exc:
            if not self._faulted_hold_logged:
                self.get_logger().error(f"safe_hold raised {type(exc).__name__}: {exc}; retrying every tick")
                self._faulted_hold_logged = True

    def _call_hook(self, name: str, hook, *args):  # type: ignore[no-untyped-def]
        """Run a user hook; if it raises, abort the episode, hold, and keep the loop alive."""
        try:
            return hook(*args)
        except RobotStoppedError as stop:
            self._robot_stopped(stop)
            return None
        except Exception as exc:
            self._fault(name, exc)
            return None

    def _fault(self, hook: str, exc: BaseException) -> None:
        text = f"{hook} raised {type(exc).__name__}: {exc}"
        self.get_logger().error(f"{text}; aborting the episode and holding\n{traceback.format_exc()}")
        self._end_episode(Episode.Result.ABORTED, text)
        self._set_status(AgentStatus.FAULT, f"{text}; holding until the next reset", "")
        self._hold_safely()

    def _robot_stopped(self, stop: RobotStoppedError) -> None:
        """The plant stopped on its own (a hook said so): end the episode with outcome
        ROBOT_STOPPED and hold. If a person must act, refuse episodes until the agent is
        activated again (test_robot_stops.py holds these rules)."""
        text = str(stop)
        if stop.needs_person:
            name = self.get_fully_qualified_name()
            text += (
                f"; then bring the agent back: ros2 lifecycle set {name} deactivate, then ros2 lifecycle set "
                f"{name} activate (episodes are refused until then)"
            )
        self.get_logger().error(f"robot stopped: {text}")
        self._end_episode(Episode.Result.ROBOT_STOPPED, text, needs_person=stop.needs_person)
        if stop.needs_person:
            self._stopped_reason = text
            self._set_status(AgentStatus.STOPPED, text, "")
        else:
            self._set_status(AgentStatus.FAULT, f"{text}; holding until the next reset", "")
        self._hold_safely()

    # -- observations -----------------------------------------------------------------

    def _checked_observation(self) -> np.ndarray | None:
        raw = self._call_hook("build_observation", self.build_observation)
        if raw is None:
            return None
        obs = np.asarray(raw, dtype=np.float64).reshape(-1)
        if obs.size != self.observation_size:
            self._fault(
                "build_observation",
                ValueError(f"returned {obs.size} values, the agent declared observation_size {self.observation_size}"),
            )
            return None
        if not np.all(np.isfinite(obs)):
            bad = int(np.argmax(~np.isfinite(obs)))
            self._fault("build_observation", ValueError(f"observation[{bad}] is {obs[bad]}"))
            return None
        return obs

    def _send_reset_observation(self, now: int) -> None:
        episode = self._protocol.episode
        assert episode is not None
        handle = self._episodes.get(episode.episode_id)
        obs = self._checked_observation()
        if obs is None or handle is None:
            return
        self._protocol.reset_observed(now)
        self._world.observed(now)
        self._last_duration_ns = 0
        self._tick_monitor.start_step()
        self._feedback_msg.timing = StepTiming()  # a reset's answer times no step
        self._publish_answer(
            handle, 0, obs, None, now, lat_ns=0, hold_ns=0, duration_ns=0, received_ns=handle.received_ns
        )

    def _send_step_observation(self, now: int) -> bool:
        step = self._current_step
        episode = self._protocol.episode
        assert step is not None and episode is not None
        handle = self._episodes.get(episode.episode_id)
        obs = self._checked_observation()
        if obs is None or handle is None:
            return False
        reward = self._call_hook("agent_reward", self.agent_reward)
        self._last_duration_ns = now - step.start_ns
        self._fill_timing(self._feedback_msg.timing, episode.episode_id, step, now)
        self._publish_answer(
            handle,
            step.seq,
            obs,
            reward,
            now,
            lat_ns=step.lat_ns,
            hold_ns=step.hold_ns,
            duration_ns=now - step.start_ns,
            received_ns=step.start_ns,
        )
        return True

    def _publish_answer(
        self,
        handle: _EpisodeHandle,
        seq: int,
        obs: np.ndarray,
        reward: float | None,
        now: int,
        *,
        lat_ns: int,
        hold_ns: int,
        duration_ns: int,
        received_ns: int,
    ) -> None:
        """Publish a StepResult as the episode's feedback; the RL side is waiting for it."""
        result = self._feedback_msg.step  # reused: filled in place, serialised by publish
        result.seq = seq
        result.observation = float64_field(obs)
        result.has_reward = reward is not None
        result.reward = float(reward) if reward is not None else 0.0
        set_stamp(result.lat, lat_ns)
        set_stamp(result.hold, hold_ns)
        set_stamp(result.ato, now)
        set_stamp(result.duration, duration_ns)
        set_stamp(result.command_received_at, received_ns)
        result.error = ""
        handle.goal_handle.publish_feedback(self._feedback_msg)

    def _fill_timing(self, timing: StepTiming, episode_id: bytes, step: StepStart, now: int) -> None:
        """The StepTiming of ``step``, observed at ``now``: sent with its answer, and on
        ``step_timing`` for logs."""
        stats = self._tick_monitor.start_step()
        timing.episode_id.uuid = np.frombuffer(episode_id, dtype=np.uint8)
        timing.seq = step.seq
        set_stamp(timing.action_start, step.start_ns)
        set_stamp(timing.lat, step.lat_ns)
        set_stamp(timing.duration, step.duration_ns)
        set_stamp(timing.ato, now)
        timing.control_ticks = stats.ticks
        timing.late_ticks = stats.late_ticks
        set_stamp(timing.max_period, stats.max_period_ns)

    def _on_watchdog(self, now: int) -> None:
        episode = self._protocol.episode
        client = episode.client_id if episode else ""
        message = (
            f"RL client '{client}' silent for {ns_to_seconds(self.params.watchdog_ns):g} s "
            "(watchdog): holding position; its next step resumes the episode, or another client may reset"
        )
        self.get_logger().warning(message)
        self._set_status(AgentStatus.HOLDING, message, client)

    # -- step commands ------------------------------------------------------------------

    def _on_step_command(self, msg: StepCommand) -> None:
        now = self.now_ns()
        episode_id = bytes(msg.episode_id.uuid)
        if not self._authentic(msg, episode_id):
            return
        for name, stamp in (("duration", msg.duration), ("sent_at", msg.sent_at)):
            if stamp.nanosec >= 1_000_000_000:
                self._reject_step(
                    episode_id, msg.seq, f"{name}.nanosec = {stamp.nanosec} is not below 1e9 (a malformed time field)"
                )
                return
        if msg.kind == StepCommand.STEP:
            if self._world.may_start(now):
                self._begin_step(msg, now)
                if self._self_clocked and not self._control_timer.is_canceled():
                    # The step's ticks at once, in this callback: a short step is answered
                    # without another round of the executor for the timer.
                    self._simulate()
            elif self._waiting_command is not None:
                waiting = self._waiting_command.seq
                self._reject_step(episode_id, msg.seq, f"step {msg.seq} came while step {waiting} waits to start")
            else:  # the world runs on for the think time the model drew; then it starts
                self._waiting_command = msg
        elif msg.kind == StepCommand.FINISH:
            if self._world.may_start(now):
                self._waiting_command = None
                self._finish(episode_id)
            else:  # the action runs on for the think time, as before a step; then the hold
                self._waiting_command = msg
        else:
            self._reject_step(episode_id, msg.seq, f"unknown command kind {msg.kind}: expected STEP (0) or FINISH (1)")

    def _authentic(self, msg: StepCommand, episode_id: bytes) -> bool:
        """Whether a command naming the running episode comes from its client: tagged
        under the episode's key, and not a copy of a step already taken. Anything else is
        dropped and counted, never answered on the client's feedback nor executed
        (test_faults.py::test_an_episode_belongs_to_its_client). A command naming no
        running episode goes on, to be refused on the status topic."""
        episode = self._protocol.episode
        if episode is None or episode.episode_id != episode_id:
            return True
        action = np.asarray(msg.action, dtype=np.float64)
        then_action = np.asarray(msg.then_action, dtype=np.float64)
        expected = command_tag(
            episode.key, msg.kind, episode_id, msg.seq, action, msg.duration.sec, msg.duration.nanosec, then_action
        )
        if not tags_match(expected, bytes(msg.tag)):
            self._drop_command(f"a command for the running episode that its client did not sign (seq {msg.seq})")
            return False
        waiting = self._waiting_command
        if msg.kind == StepCommand.STEP and (
            msg.seq <= episode.steps or (waiting is not None and waiting.seq == msg.seq and waiting.tag == msg.tag)
        ):
            self._drop_command(f"a copy of step {msg.seq}, already taken")
            return False
        return True

    def _drop_command(self, what: str) -> None:
        self._dropped += 1
        self.get_logger().warning(f"dropped {what}", throttle_duration_sec=1.0)
        wall = time.monotonic()
        if wall - self._dropped_said_at >= 1.0:  # (a flood of them must not flood the status topic)
            self._dropped_said_at = wall
            self._publish_status(f"dropped {what}")

    def _begin_step(self, msg: StepCommand, now: int) -> None:
        episode_id = bytes(msg.episode_id.uuid)
        try:
            step = self._protocol.start_step(
                episode_id, msg.seq, msg.action, duration_to_ns(msg.duration), now, msg.then_action
            )
        except CommandRejected as exc:
            self._reject_step(episode_id, msg.seq, str(exc))
            return
        self._world.start_ns(now)
        lat_s = ns_to_seconds(step.lat_ns)
        self._diagnostics.window.on_step(lat_s, lat_s - ns_to_seconds(self._last_duration_ns))
        self._start_step(step, now)
        self._commanded(now)
        if self._self_clocked:  # the start applied the action for this tick's period
            self._simulated_now_ns = now + self.params.control_period_ns
        self._resume_world()

    def _start_step(self, step: StepStart, now: int) -> None:
        self._current_step = step
        if self._status_state != AgentStatus.RUNNING:
            episode = self._protocol.episode
            self._set_status(AgentStatus.RUNNING, "RL client is back: running", episode.client_id if episode else "")
        # The action starts now, not at the next tick: run a control step for it and
        # re-phase the timer so its ticks (and the observation) count from this instant.
        # (A self-clocked agent's ticks fall on its own grid, where actions start.)
        if not self._self_clocked:
            rephase_timer(self._control_timer, self.params.control_period_ns, self._wake_latency.lead_ns)
        self._tick_monitor.on_tick(now, scheduled=False)
        self._call_hook("on_action_start", self.on_action_start, step.action)
        if self._protocol.state is AgentState.EXECUTING:  # not if the hook just failed
            self._call_hook("apply_action", self.apply_action, step.action)

    def _reject_step(self, episode_id: bytes, seq: int, reason: str) -> None:
        self._rejected += 1
        episode = self._protocol.episode
        handle = self._episodes.get(episode_id) if episode and episode.episode_id == episode_id else None
        self.get_logger().warning(f"rejected a command: {reason}", throttle_duration_sec=1.0)
        if handle is not None:
            feedback = Episode.Feedback()
            feedback.step.seq = seq
            feedback.step.error = reason
            feedback.step.ato = ns_to_time(self.now_ns())
            handle.goal_handle.publish_feedback(feedback)
        # Always say it on the status topic too: a client with no episode has no feedback.
        self._publish_status(f"rejected a command: {reason}")

    def _finish(self, episode_id: bytes) -> None:
        try:
            ended = self._protocol.finish(episode_id)
        except CommandRejected as exc:
            self._reject_step(episode_id, 0, str(exc))
            return
        self._current_step = None
        self._complete(ended.episode_id, Episode.Result.FINISHED, ended.steps, "")
        self._set_status(AgentStatus.IDLE, f"client '{ended.client_id}' finished; holding, waiting for a client", "")
        self._hold_safely()
        if self.params.exit_on_finish:
            self.get_logger().info("the RL side finished and exit_on_finish is set: exiting")
            self._exit_timer = self.create_timer(0.2, self._exit)

    def _exit(self) -> None:
        raise ExitRequested()

    # -- the Episode action -------------------------------------------------------------

    def _on_goal(self, goal: Episode.Goal) -> GoalResponse:
        if not self._active:
            reason: str | None = self._inactive_reason()
        elif self._stopped_reason is not None:
            reason = self._stopped_reason
        elif len(goal.key) != KEY_BYTES:
            reason = (
                f"the goal carries a key of {len(goal.key)} bytes: an episode needs a fresh {KEY_BYTES}-byte key, "
                "with which its step commands are signed (spin_decoupler_ros/core/auth.py)"
            )
        else:
            reason = self._protocol.goal_rejection(goal.client_id, self._owns_running(goal))
        if reason is None:
            return GoalResponse.ACCEPT
        self._rejected += 1
        self._say_refusal(f"rejected an episode from '{goal.client_id}': {reason}")
        self._publish_status(f"rejected an episode from '{goal.client_id}': {reason}")
        return GoalResponse.REJECT

    def _say_refusal(self, text: str) -> None:
        """Log a refusal: a new one at once; the same one again (a client retrying while
        the agent is paused) at most every REFUSAL_LOG_EVERY_S, with how many there were."""
        now = time.monotonic()
        if text == self._refusal_said and now - self._refusal_said_at < REFUSAL_LOG_EVERY_S:
            self._refusals_unsaid += 1
            return
        again = (
            f" ({self._refusals_unsaid} more like it since)"
            if text == self._refusal_said and self._refusals_unsaid
            else ""
        )
        self.get_logger().warning(text + again)
        self._refusal_said, self._refusal_said_at, self._refusals_unsaid = text, now, 0

    def _owns_running(self, goal: Episode.Goal) -> bool:
        """Whether ``goal`` proves it comes from the client of the running episode."""
        episode = self._protocol.episode
        if episode is None:
            return False
        return tags_match(takeover_proof(episode.key, bytes(goal.key)), bytes(goal.takeover_proof))

    def _inactive_reason(self) -> str:
        state = self._state_machine.current_state[1]
        return f"the agent is not active (lifecycle state '{state}'): activate it to serve episodes"

    def _on_goal_accepted(self, goal_handle: ServerGoalHandle) -> None:
        now = self.now_ns()
        if not self._world.may_start(now):
            # The previous action runs on for the learner's think time, then the reset
            # begins (at a tick: _control_step), wherever the wall clock stood when it came.
            if self._waiting_goal is not None:
                self._abort_waiting_goal("a newer episode came before it began")
            self._waiting_goal = goal_handle
            return
        self._begin_episode(goal_handle, now)
        if self._waits_on_clock and self._protocol.state is AgentState.AFTER_RESET:
            # The world may be waiting for a command: the reset's first one lets it go on
            # (the reset observation is a tick's, as always).
            self._call_hook("reset_done", self.reset_done)
            self._commanded(now)
        if self._self_clocked:
            # The reset observation at once, in this callback, as a short step's is
            # (_on_step_command): the learner waits for it.
            self._simulate()

    def _abort_waiting_goal(self, reason: str) -> None:
        """End the goal that waits for the think time to run out, unbegun."""
        handle, self._waiting_goal = self._waiting_goal, None
        if handle is None:
            return
        execute_goal(handle)
        report_goal(self._action_server, handle, Episode.Result(outcome=Episode.Result.ABORTED, steps=0, error=reason))

    def _begin_episode(self, goal_handle: ServerGoalHandle, now: int) -> None:
        """Begin the accepted goal's episode at ``now``: the reset hook starts."""
        goal: Episode.Goal = goal_handle.request
        episode_id = bytes(goal_handle.goal_id.uuid)
        previous = self._protocol.episode
        owner = self._owns_running(goal)
        try:
            self._protocol.begin_episode(episode_id, goal.client_id, now, bytes(goal.key), owner)
        except CommandRejected as exc:  # another client got in between accept and here
            self._episodes[episode_id] = _EpisodeHandle(goal_handle, now)
            execute_goal(goal_handle)
            self._complete(episode_id, Episode.Result.ABORTED, 0, str(exc))
            return
        self._current_step = None
        self._waiting_command = None
        self._episodes[episode_id] = _EpisodeHandle(goal_handle, now)
        execute_goal(goal_handle)
        self._set_status(AgentStatus.RUNNING, "episode running", goal.client_id)
        seed = int(goal.seed) if goal.has_seed else None
        self._world.new_episode(seed)
        self._resume_world()
        options = np.asarray(goal.reset_options, dtype=np.float64)
        self._call_hook("reset_workspace", self.reset_workspace, seed, options)
        if previous is not None:
            # The replaced episode's result after that: only its client's logs wait for it
            # (test_faults.py::test_a_new_reset_ends_the_clients_running_episode).
            same_client = owner and previous.client_id == goal.client_id
            self._complete(
                previous.episode_id,
                Episode.Result.ENDED if same_client else Episode.Result.WATCHDOG,
                previous.steps,
                "" if same_client else f"client went silent; '{goal.client_id}' took over",
            )

    def _on_cancel(self, goal_handle: ServerGoalHandle) -> CancelResponse:
        """A cancel request carries no proof of who sent it (any process can name the
        running goal, which the action's status topic shows): the running episode is
        not canceled; its client ends it with FINISH or a new reset, both signed. A goal
        that is over anyway may be canceled."""
        episode = self._protocol.episode
        if episode is not None and episode.episode_id == bytes(goal_handle.goal_id.uuid):
            self._drop_command("a cancel of the running episode (a cancel carries no proof of its sender)")
            return CancelResponse.REJECT
        return CancelResponse.ACCEPT

    def _complete(self, episode_id: bytes, outcome: int, steps: int, error: str, *, needs_person: bool = False) -> None:
        handle = self._episodes.pop(episode_id, None)
        if handle is None:  # (over already)
            return
        result = Episode.Result(outcome=outcome, steps=steps, error=error, needs_person=needs_person)
        report_goal(self._action_server, handle.goal_handle, result)

    # -- status -------------------------------------------------------------------------

    def _set_status(self, state: int, message: str, client_id: str) -> None:
        if state == self._status_state and message == self._status_message:
            return
        self._status_state = state
        self._status_message = message
        self._status_client = client_id
        self._publish_status(message)

    def _publish_status(self, message: str) -> None:
        if self._status_state == AgentStatus.STOPPED and message != self._status_message:
            message = f"{message}; {self._status_message}"  # what a person must do stays said
        self._dropped_published = self._dropped
        self._status_pub.publish(
            AgentStatus(
                state=max(self._status_state, 0),
                client_id=self._status_client,
                message=message,
                stamp=self.get_clock().now().to_msg(),
                rejected_commands=self._rejected,
                dropped_commands=self._dropped,
            )
        )

    # -- lifecycle ----------------------------------------------------------------------

    def _request_realtime(self, priority: int) -> None:
        if priority <= 0:
            return
        granted, text = request_realtime(priority)
        if granted:
            self.get_logger().info(f"control loop: {text}")
        else:
            self.get_logger().warning(text)

    def close(self) -> None:
        """End any episode (its client gets an ABORTED result) and hold the plant."""
        if not self._configured:
            return
        self._end_episode(Episode.Result.ABORTED, "the agent is shutting down")
        self._set_status(AgentStatus.OFFLINE, "the agent is shutting down", "")
        self._hold_safely()
        self._save_period_log()

    def _end_episode(self, outcome: int, reason: str, *, needs_person: bool = False) -> None:
        self._abort_waiting_goal(reason)
        ended = self._protocol.end_episode()
        self._current_step = None
        self._waiting_command = None
        if ended is not None:
            self._complete(ended.episode_id, outcome, ended.steps, reason, needs_person=needs_person)

    def _save_period_log(self) -> None:
        if self.params.period_log:
            np.save(self.params.period_log, self.control_periods())
