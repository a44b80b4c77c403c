"""AgentNode: the base of every agent, a timer-driven control loop that serves RL steps.

One step, on this side::

    Episode goal (reset)  -> reset_workspace() ... reset_done() -> feedback seq 0
    step_command (topic)  -> checked by AgentProtocol -> apply_action() at once,
                             control timer re-phased to the action's start
    control timer ticks   -> apply_action(last action) every period
    tick where due        -> build_observation() -> feedback seq n (LAT, ATO);
                             the step's then_action, if any, runs from here on

Nothing blocks, sleeps or waits: an Episode goal is EXECUTING while its episode runs,
and its execute callback runs once, when the episode ends (``episode_server.py``); steps
are handed to the control loop through the protocol state, not through a queue a
callback waits on.

This file keeps the lifecycle and the hooks; the rest is in rooms of one purpose
(``agent_base.py`` lists them).

Subclasses implement the hooks (``build_observation``, ``apply_action``,
``reset_workspace``, ``null_action``; optionally ``reset_done``, ``on_action_start``,
``agent_reward``, ``safe_hold``). A hook that raises ends the episode ABORTED; one that
raises ``RobotStoppedError`` (the plant stopped on its own) ends it ROBOT_STOPPED.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
from rclpy.clock import ROSClock
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn

from spin_decoupler_msgs.action import Episode
from spin_decoupler_msgs.msg import AgentDescription, AgentStatus, StepTiming
from spin_decoupler_ros.agent.answers import Answers
from spin_decoupler_ros.agent.command_intake import CommandIntake
from spin_decoupler_ros.agent.control_loop import ControlLoop
from spin_decoupler_ros.agent.diagnostics import AgentDiagnostics, Check, declare_health_parameters
from spin_decoupler_ros.agent.episode_server import EpisodeServer
from spin_decoupler_ros.agent.parameters import START_STATES, AgentParameters, AgentSpaces, declare_agent_parameters
from spin_decoupler_ros.agent.status import StatusReporting
from spin_decoupler_ros.contract import LATCHED_QOS, TIMING_QOS
from spin_decoupler_ros.conversions import float64_field, ns_to_duration
from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.core.health import Figures
from spin_decoupler_ros.core.protocol import AgentProtocol, AgentState
from spin_decoupler_ros.core.spaces import ActionSpec
from spin_decoupler_ros.core.think_time import WorldGate
from spin_decoupler_ros.core.timing import TickMonitor, WakeLatency, ns_to_seconds
from spin_decoupler_ros.node_runner import ExitRequested
from spin_decoupler_ros.params import check_no_unknown_parameters, declare_str
from spin_decoupler_ros.tools.realtime import request_realtime

__all__ = ["AgentNode", "AgentParameters", "AgentSpaces"]


class AgentNode(EpisodeServer, CommandIntake, ControlLoop, Answers, StatusReporting):
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
        self._choose_clock()
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
        self._current_step = None
        self._faulted_hold_logged = False
        self._stopped_reason = None
        self._feedback_msg = Episode.Feedback()
        self._last_duration_ns = 0
        self._diagnostics = AgentDiagnostics(self, diagnostics_period, self._health_checks)
        self._make_status()
        self._description_pub = self.create_publisher(AgentDescription, "description", LATCHED_QOS)
        self._timing_pub = self.create_publisher(StepTiming, "step_timing", TIMING_QOS)
        self._make_command_intake()
        self._make_episode_server()
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

    def _choose_clock(self) -> None:
        """Which clock the agent runs on under its timing model, or a ParameterError
        naming why the model is refused (docs/time_models.md)."""
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
        self._simulated_now_ns = 0
        self._waiting_command = None
        self._waiting_goal = None

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

    # -- leaving ----------------------------------------------------------------------

    def _exit(self) -> None:
        raise ExitRequested()

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

    def _save_period_log(self) -> None:
        if self.params.period_log:
            np.save(self.params.period_log, self.control_periods())
