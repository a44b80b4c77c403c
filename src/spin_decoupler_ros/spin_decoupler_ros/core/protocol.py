"""The agent side of the step protocol, as a state machine with no ROS in it.

The agent node feeds it events (a goal, a step command, a control tick) stamped with
its clock, and it answers what to do: which action is current, when an observation is
due, what LAT was, and whether the RL side has gone silent. Keeping it free of rclpy
lets every timing rule be tested with made-up clocks in microseconds.

States (the ancestor's three, plus the two a robot needs when no RL step is coming)::

    IDLE --goal--> AFTER_RESET --reset observed--> READY --step--> EXECUTING
                                                     ^  <--due------'
                         READY --watchdog--> HOLDING --step--> EXECUTING

In READY the last action keeps running (the ancestor's semantics), or the step's
``then_action`` if it named one; in IDLE and HOLDING the agent applies its safe null
action (hold position).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from spin_decoupler_ros.core.errors import ActionSpaceError
from spin_decoupler_ros.core.spaces import ActionSpec
from spin_decoupler_ros.core.timing import ns_to_seconds, periods_for
from spin_decoupler_ros.core.transitions import TransitionTable


class AgentState(enum.Enum):
    """Where an agent is with its episode; its transitions are AGENT_NEXT
    (test_protocol.py::test_the_agent_goes_only_where_its_table_says)."""

    IDLE = "idle"  # no episode: hold position
    AFTER_RESET = "after_reset"  # episode started; the reset observation is due once the reset is done
    EXECUTING = "executing"  # running the last action until its observation is due
    READY = "ready"  # observation sent; the last action continues until the next step
    HOLDING = "holding"  # the RL side went silent past the watchdog: hold; the episode stays open


# What may follow each state. Besides these, any state may go to IDLE: the episode ends
# (finished, replaced by a new one, taken over, given up).
AGENT_NEXT: dict[AgentState, frozenset[AgentState]] = {
    AgentState.IDLE: frozenset({AgentState.AFTER_RESET}),  # an episode begins
    AgentState.AFTER_RESET: frozenset({AgentState.READY}),  # the reset observation went out
    AgentState.EXECUTING: frozenset({AgentState.READY}),  # the step's observation went out
    AgentState.READY: frozenset({AgentState.EXECUTING, AgentState.HOLDING}),  # a step; the watchdog
    AgentState.HOLDING: frozenset({AgentState.EXECUTING}),  # the learner's next step resumes the episode
}


AGENT_STATES = TransitionTable("AGENT_NEXT", "the agent", AGENT_NEXT, frozenset({AgentState.IDLE}))


def agent_may_go(state: AgentState, to: AgentState) -> bool:
    """Whether AGENT_NEXT (and the way out of any state) lets ``state`` go to ``to``."""
    return AGENT_STATES.allows(state, to)


class TickEvent(enum.Enum):
    NONE = "none"
    OBSERVE = "observe"  # the executing action's observation is due now
    WATCHDOG = "watchdog"  # the RL side just went silent past the watchdog


class CommandRejected(Exception):
    """A goal or step the agent refuses; the message says why, for the RL side to read."""


@dataclass
class Episode:
    episode_id: bytes
    client_id: str
    started_ns: int
    key: bytes = b""  # its client's key (core/auth.py): only commands tagged with it count
    steps: int = 0  # accepted steps


@dataclass(frozen=True)
class StepStart:
    """An accepted step: what to execute, and the timing of the action it replaced."""

    seq: int
    action: np.ndarray
    start_ns: int
    duration_ns: int  # what the agent will execute it for (the request, or rl_timestep)
    lat_ns: int  # measured duration of the previous action (LAT)
    hold_ns: int  # part of LAT spent holding because the RL side was silent
    then_action: np.ndarray | None = None  # what runs from its observation to the next step


def _s(ns: int) -> str:
    return f"{ns_to_seconds(ns):.3f} s"


class AgentProtocol:
    """Step protocol state for one agent serving one RL client at a time.

    :param spec: the action space every step is checked against.
    :param rl_timestep_ns: default action duration (a step's duration of zero means this).
    :param control_period_ns: the control loop's period; observations fall on its ticks.
    :param watchdog_ns: how long the RL side may stay silent after an observation before
        the agent holds position.
    :param max_duration_ns: longest duration a step may ask for.
    :param then_action_refusal: why this agent takes no ``then_action`` (empty: it takes
        one, checked against ``spec`` like the action).
    """

    def __init__(
        self,
        spec: ActionSpec,
        rl_timestep_ns: int,
        control_period_ns: int,
        watchdog_ns: int,
        max_duration_ns: int,
        then_action_refusal: str = "",
    ) -> None:
        if control_period_ns <= 0:
            raise ValueError("control period must be positive")
        if rl_timestep_ns <= control_period_ns:
            raise ValueError(
                f"rl_timestep ({_s(rl_timestep_ns)}) must exceed the control period ({_s(control_period_ns)})"
            )
        if watchdog_ns <= 0:
            raise ValueError("watchdog must be positive")
        if max_duration_ns < rl_timestep_ns:
            raise ValueError(f"max step duration ({_s(max_duration_ns)}) is below rl_timestep ({_s(rl_timestep_ns)})")
        self.spec = spec
        self.rl_timestep_ns = rl_timestep_ns
        self.control_period_ns = control_period_ns
        self.watchdog_ns = watchdog_ns
        self.max_duration_ns = max_duration_ns
        self.then_action_refusal = then_action_refusal
        self.state = AgentState.IDLE
        self.episode: Episode | None = None
        self._action: np.ndarray | None = None
        self._then_action: np.ndarray | None = None  # replaces _action at the observation
        self._action_start_ns = 0
        self._due_ns = 0
        self._answered_ns = 0  # when the last observation went out
        self._hold_since_ns: int | None = None

    # -- episodes ---------------------------------------------------------------------

    def goal_rejection(self, client_id: str, owns_running: bool = True) -> str | None:
        """Why an Episode goal from ``client_id`` cannot be accepted now, or None.

        An agent serves one client: a new episode from the client of the running one
        (``owns_running``: it proved so, core/auth.py) replaces it; another client gets in
        only when no episode runs or the running one's client went silent past the
        watchdog.
        """
        if self.episode is None or self.state is AgentState.HOLDING:
            return None
        if owns_running and client_id == self.episode.client_id:
            return None
        unproved = (
            " (a goal under its name without the proof of its key)" if client_id == self.episode.client_id else ""
        )
        return (
            f"the agent is running an episode for client '{self.episode.client_id}'{unproved}; "
            f"it accepts '{client_id}' once that client finishes or stays silent for "
            f"{_s(self.watchdog_ns)} (the watchdog)"
        )

    def _enter(self, state: AgentState) -> None:
        """Go to ``state`` where AGENT_NEXT allows it; anything else is a defect."""
        AGENT_STATES.check(self.state, state)
        self.state = state

    def begin_episode(
        self, episode_id: bytes, client_id: str, now_ns: int, key: bytes = b"", owns_running: bool = True
    ) -> Episode | None:
        """Start an episode (its reset is under way); return the episode it replaced."""
        reason = self.goal_rejection(client_id, owns_running)
        if reason is not None:
            raise CommandRejected(reason)
        replaced = self.end_episode()
        self.episode = Episode(episode_id, client_id, now_ns, key)
        self._enter(AgentState.AFTER_RESET)
        return replaced

    def reset_observed(self, now_ns: int) -> None:
        """The reset observation went out: the null action runs until the first step."""
        self._require(AgentState.AFTER_RESET)
        self._enter(AgentState.READY)
        self._action = self._then_action = None
        self._action_start_ns = now_ns
        self._answered_ns = now_ns
        self._hold_since_ns = None

    def end_episode(self) -> Episode | None:
        """Drop the running episode, if any, and hold; return it."""
        ended, self.episode = self.episode, None
        self._enter(AgentState.IDLE)
        self._action = self._then_action = None
        self._hold_since_ns = None
        return ended

    def finish(self, episode_id: bytes) -> Episode:
        """The RL side finished the experiment; end its episode."""
        self._check_episode(episode_id, "finish")
        ended = self.end_episode()
        assert ended is not None
        return ended

    # -- steps ------------------------------------------------------------------------

    def start_step(
        self,
        episode_id: bytes,
        seq: int,
        action: Sequence[float] | np.ndarray,
        duration_ns: int,
        now_ns: int,
        then_action: Sequence[float] | np.ndarray | None = None,
    ) -> StepStart:
        """Accept a step and start its action now, or raise CommandRejected saying why.

        ``then_action`` (None or empty: none) replaces the action once the step's
        observation is taken, until the next step starts.
        """
        episode = self._check_episode(episode_id, f"step {seq}")
        if self.state is AgentState.AFTER_RESET:
            raise CommandRejected(f"step {seq} arrived before the reset observation: wait for it")
        if self.state is AgentState.EXECUTING:
            raise CommandRejected(
                f"step {seq} arrived while step {episode.steps} is still executing: wait for its observation"
            )
        expected = episode.steps + 1
        if seq != expected:
            raise CommandRejected(f"step seq {seq} is out of order: the agent expects {expected}")
        if duration_ns < 0:
            raise CommandRejected(f"step {seq} asks for a negative duration ({_s(duration_ns)})")
        if duration_ns > self.max_duration_ns:
            raise CommandRejected(
                f"step {seq} asks for {_s(duration_ns)}, above max_step_duration ({_s(self.max_duration_ns)})"
            )
        try:
            checked = self.spec.check(action)
        except ActionSpaceError as exc:
            raise CommandRejected(f"step {seq}: {exc}") from None
        then = self._checked_then_action(seq, then_action)

        duration = duration_ns or self.rl_timestep_ns
        periods = periods_for(duration, self.control_period_ns)
        hold_ns = now_ns - self._hold_since_ns if self._hold_since_ns is not None else 0
        start = StepStart(
            seq=seq,
            action=checked,
            start_ns=now_ns,
            duration_ns=duration,
            lat_ns=now_ns - self._action_start_ns,
            hold_ns=hold_ns,
            then_action=then,
        )
        episode.steps = seq
        self._enter(AgentState.EXECUTING)
        self._action = checked
        self._then_action = then
        self._action_start_ns = now_ns
        # Observe on the tick nearest to start + periods * T: half a period of slack
        # absorbs timer jitter either way.
        self._due_ns = now_ns + periods * self.control_period_ns - self.control_period_ns // 2
        self._hold_since_ns = None
        return start

    def on_tick(self, now_ns: int) -> TickEvent:
        """Advance on a control tick: is an observation due, or has the RL side gone silent?"""
        if self.state is AgentState.EXECUTING and now_ns >= self._due_ns:
            self._enter(AgentState.READY)
            self._answered_ns = now_ns
            if self._then_action is not None:
                self._action, self._then_action = self._then_action, None
            return TickEvent.OBSERVE
        if self.state is AgentState.READY and now_ns - self._answered_ns > self.watchdog_ns:
            self._enter(AgentState.HOLDING)
            self._hold_since_ns = now_ns
            return TickEvent.WATCHDOG
        return TickEvent.NONE

    @property
    def active_action(self) -> np.ndarray | None:
        """The action to apply now, or None for the safe null action."""
        if self.state in (AgentState.EXECUTING, AgentState.READY):
            return self._action
        return None

    @property
    def action_start_ns(self) -> int:
        return self._action_start_ns

    # -- helpers ----------------------------------------------------------------------

    def _checked_then_action(self, seq: int, then_action: Sequence[float] | np.ndarray | None) -> np.ndarray | None:
        if then_action is None or len(then_action) == 0:
            return None
        if self.then_action_refusal:
            raise CommandRejected(
                f"step {seq} names a then_action, but this agent takes none: {self.then_action_refusal}"
            )
        try:
            return self.spec.check(then_action)
        except ActionSpaceError as exc:
            raise CommandRejected(f"step {seq}'s then_action: {exc}") from None

    def _check_episode(self, episode_id: bytes, what: str) -> Episode:
        if self.episode is None:
            raise CommandRejected(f"{what}: no episode is running; send an Episode goal (reset) first")
        if episode_id != self.episode.episode_id:
            raise CommandRejected(
                f"{what} names episode {episode_id.hex()[:8]}, but the running episode is "
                f"{self.episode.episode_id.hex()[:8]} (a stale or foreign client?)"
            )
        return self.episode

    def _require(self, state: AgentState) -> None:
        if self.state is not state:
            raise RuntimeError(f"protocol misuse: expected state {state.name}, in {self.state.name}")
