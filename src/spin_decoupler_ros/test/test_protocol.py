"""AgentProtocol: every timing and acceptance rule, with made-up clocks (no ROS)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spin_decoupler_ros.core import ActionSpec, AgentProtocol, AgentState, CommandRejected, TickEvent
from spin_decoupler_ros.core.protocol import AGENT_NEXT, agent_may_go

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

MS = 1_000_000
EP1 = b"\x01" * 16
EP2 = b"\x02" * 16


def make(
    clip: bool = True,
    period_ms: int = 10,
    timestep_ms: int = 100,
    watchdog_ms: int = 500,
    kind: type[AgentProtocol] = AgentProtocol,
) -> AgentProtocol:
    return kind(
        ActionSpec.symmetric(2, clip=clip),
        rl_timestep_ns=timestep_ms * MS,
        control_period_ns=period_ms * MS,
        watchdog_ns=watchdog_ms * MS,
        max_duration_ns=2000 * MS,
    )


def ready(p: AgentProtocol, now: int = 0, client: str = "a", episode: bytes = EP1) -> AgentProtocol:
    p.begin_episode(episode, client, now)
    p.reset_observed(now)
    return p


def test_rl_timestep_must_exceed_control_period() -> None:
    with pytest.raises(ValueError, match="must exceed the control period"):
        make(period_ms=10, timestep_ms=10)


def test_idle_agent_accepts_any_client_and_holds() -> None:
    p = make()
    assert p.state is AgentState.IDLE
    assert p.goal_rejection("anyone") is None
    assert p.active_action is None


def test_other_client_is_rejected_while_an_episode_runs() -> None:
    p = ready(make(), client="first")
    reason = p.goal_rejection("second")
    assert reason is not None and "'first'" in reason and "watchdog" in reason
    with pytest.raises(CommandRejected):
        p.begin_episode(EP2, "second", 0)


def test_same_client_new_episode_replaces_the_running_one() -> None:
    p = ready(make(), client="a")
    replaced = p.begin_episode(EP2, "a", 5 * MS)
    assert replaced is not None and replaced.episode_id == EP1
    assert p.state is AgentState.AFTER_RESET and p.episode is not None and p.episode.episode_id == EP2


def test_step_before_any_reset_is_rejected() -> None:
    with pytest.raises(CommandRejected, match="reset"):
        make().start_step(EP1, 1, [0.0, 0.0], 0, 0)


def test_step_before_reset_observation_is_rejected() -> None:
    p = make()
    p.begin_episode(EP1, "a", 0)
    with pytest.raises(CommandRejected, match="before the reset observation"):
        p.start_step(EP1, 1, [0.0, 0.0], 0, 0)


def test_step_for_a_foreign_episode_is_rejected() -> None:
    p = ready(make())
    with pytest.raises(CommandRejected, match="stale or foreign"):
        p.start_step(EP2, 1, [0.0, 0.0], 0, 0)


def test_out_of_order_seq_is_rejected_and_names_the_expected_one() -> None:
    p = ready(make())
    with pytest.raises(CommandRejected, match="expects 1"):
        p.start_step(EP1, 2, [0.0, 0.0], 0, 0)


def test_step_while_executing_is_rejected() -> None:
    p = ready(make())
    p.start_step(EP1, 1, [0.1, 0.1], 0, 0)
    with pytest.raises(CommandRejected, match="still executing"):
        p.start_step(EP1, 2, [0.1, 0.1], 0, 1 * MS)


@pytest.mark.parametrize(
    ("action", "message"),
    [([0.0], "has 1 values, the agent expects 2"), ([np.nan, 0.0], "nan"), ([0.0, np.inf], "inf")],
)
def test_malformed_actions_are_rejected_and_nothing_is_executed(action: list[float], message: str) -> None:
    p = ready(make())
    with pytest.raises(CommandRejected, match=message):
        p.start_step(EP1, 1, action, 0, 0)
    assert p.state is AgentState.READY and p.active_action is None


def test_out_of_range_actions_are_clipped_or_rejected_by_policy() -> None:
    clipped = ready(make(clip=True)).start_step(EP1, 1, [3.0, -0.5], 0, 0)
    np.testing.assert_array_equal(clipped.action, [1.0, -0.5])
    with pytest.raises(CommandRejected, match="outside"):
        ready(make(clip=False)).start_step(EP1, 1, [3.0, -0.5], 0, 0)


def test_negative_or_too_long_durations_are_rejected() -> None:
    with pytest.raises(CommandRejected, match="negative"):
        ready(make()).start_step(EP1, 1, [0.0, 0.0], -1, 0)
    with pytest.raises(CommandRejected, match="max_step_duration"):
        ready(make()).start_step(EP1, 1, [0.0, 0.0], 2001 * MS, 0)


def test_lat_is_the_previous_actions_measured_duration() -> None:
    p = ready(make(), now=0)
    first = p.start_step(EP1, 1, [0.5, 0.5], 0, 7 * MS)
    assert first.lat_ns == 7 * MS  # the null action ran since the reset observation
    assert p.on_tick(102 * MS) is TickEvent.OBSERVE
    second = p.start_step(EP1, 2, [0.2, 0.2], 0, 103 * MS)
    assert second.lat_ns == 96 * MS
    assert second.hold_ns == 0


def test_observation_falls_on_the_tick_nearest_to_the_duration() -> None:
    p = ready(make(period_ms=10, timestep_ms=100))
    p.start_step(EP1, 1, [0.0, 0.0], 0, 1000 * MS)  # zero duration means rl_timestep
    assert p.on_tick(1094 * MS) is TickEvent.NONE
    assert p.on_tick(1095 * MS) is TickEvent.OBSERVE
    assert p.state is AgentState.READY


def test_requested_durations_round_to_whole_periods() -> None:
    p = ready(make(period_ms=10))
    step = p.start_step(EP1, 1, [0.0, 0.0], 23 * MS, 0)
    assert step.duration_ns == 23 * MS
    assert p.on_tick(14 * MS) is TickEvent.NONE
    assert p.on_tick(15 * MS) is TickEvent.OBSERVE  # 2 periods, observed at the 20 ms tick
    short = p.start_step(EP1, 2, [0.0, 0.0], 1 * MS, 20 * MS)
    assert short.duration_ns == 1 * MS
    assert p.on_tick(25 * MS) is TickEvent.OBSERVE  # at least one period


def test_last_action_keeps_running_between_steps() -> None:
    p = ready(make())
    p.start_step(EP1, 1, [0.3, -0.3], 0, 0)
    p.on_tick(100 * MS)
    assert p.state is AgentState.READY
    np.testing.assert_array_equal(p.active_action, [0.3, -0.3])


def test_a_then_action_runs_from_the_observation_until_the_next_step() -> None:
    p = ready(make())
    step = p.start_step(EP1, 1, [0.3, -0.3], 0, 0, then_action=[-0.2, 0.4])
    np.testing.assert_array_equal(step.then_action, [-0.2, 0.4])
    np.testing.assert_array_equal(p.active_action, [0.3, -0.3])  # the step's, until its observation
    assert p.on_tick(90 * MS) is TickEvent.NONE
    np.testing.assert_array_equal(p.active_action, [0.3, -0.3])
    assert p.on_tick(100 * MS) is TickEvent.OBSERVE
    np.testing.assert_array_equal(p.active_action, [-0.2, 0.4])
    second = p.start_step(EP1, 2, [0.1, 0.1], 0, 130 * MS)  # (none: the action runs on)
    assert second.lat_ns == 130 * MS and second.then_action is None  # LAT spans the then_action too
    p.on_tick(230 * MS)
    np.testing.assert_array_equal(p.active_action, [0.1, 0.1])


def test_a_then_action_is_held_after_the_watchdog_and_dropped_with_the_episode() -> None:
    p = ready(make(watchdog_ms=500))
    p.start_step(EP1, 1, [0.3, 0.3], 0, 0, then_action=[0.5, 0.5])
    p.on_tick(100 * MS)
    assert p.on_tick(601 * MS) is TickEvent.WATCHDOG and p.active_action is None
    p.start_step(EP1, 2, [0.1, 0.1], 0, 700 * MS, then_action=[0.9, 0.9])
    p.begin_episode(EP2, "a", 710 * MS)  # a reset mid-step: the new episode starts from the null action
    p.reset_observed(720 * MS)
    assert p.on_tick(800 * MS) is TickEvent.NONE and p.active_action is None


@pytest.mark.parametrize(
    ("then_action", "message"),
    [([0.0], "then_action: action has 1 values"), ([0.0, np.nan], "then_action: action\\[1\\] is nan")],
)
def test_a_bad_then_action_rejects_the_step(then_action: list[float], message: str) -> None:
    p = ready(make(clip=False))
    with pytest.raises(CommandRejected, match=message):
        p.start_step(EP1, 1, [0.1, 0.1], 0, 0, then_action=then_action)
    assert p.state is AgentState.READY and p.active_action is None


def test_an_agent_that_takes_no_then_action_rejects_one_and_says_why() -> None:
    p = AgentProtocol(
        ActionSpec.symmetric(2),
        rl_timestep_ns=100 * MS,
        control_period_ns=10 * MS,
        watchdog_ns=500 * MS,
        max_duration_ns=2000 * MS,
        then_action_refusal="its commands end at rest",
    )
    ready(p)
    with pytest.raises(CommandRejected, match="takes none: its commands end at rest"):
        p.start_step(EP1, 1, [0.1, 0.1], 0, 0, then_action=[0.0, 0.0])
    assert p.state is AgentState.READY
    p.start_step(EP1, 1, [0.1, 0.1], 0, 0, then_action=[])  # (empty: none asked, as the message's default)
    assert p.state is AgentState.EXECUTING


def test_watchdog_holds_once_then_a_step_resumes_with_the_hold_reported() -> None:
    p = ready(make(watchdog_ms=500))
    p.start_step(EP1, 1, [0.3, 0.3], 0, 0)
    assert p.on_tick(100 * MS) is TickEvent.OBSERVE
    assert p.on_tick(600 * MS) is TickEvent.NONE
    assert p.on_tick(601 * MS) is TickEvent.WATCHDOG
    assert p.on_tick(700 * MS) is TickEvent.NONE  # said once
    assert p.state is AgentState.HOLDING and p.active_action is None
    step = p.start_step(EP1, 2, [0.1, 0.1], 0, 900 * MS)
    assert step.hold_ns == 299 * MS and step.lat_ns == 900 * MS


def test_a_silent_clients_episode_can_be_taken_over() -> None:
    p = ready(make(watchdog_ms=500), client="old")
    p.on_tick(501 * MS)
    assert p.goal_rejection("new") is None
    replaced = p.begin_episode(EP2, "new", 502 * MS)
    assert replaced is not None and replaced.client_id == "old"


def test_finish_checks_the_episode_and_ends_it() -> None:
    p = ready(make())
    with pytest.raises(CommandRejected):
        p.finish(EP2)
    assert p.finish(EP1).episode_id == EP1
    assert p.state is AgentState.IDLE and p.episode is None


def test_the_agent_goes_only_where_its_table_says() -> None:
    """Every pair of states: allowed exactly where AGENT_NEXT (or the way out of any
    state, to IDLE) says, and refused as a defect otherwise."""
    for a, b in itertools.product(AgentState, AgentState):
        allowed = b in AGENT_NEXT[a] or b is AgentState.IDLE
        assert agent_may_go(a, b) == allowed
        p = make()
        p.state = a
        if allowed:
            p._enter(b)
            assert p.state is b
        else:
            with pytest.raises(RuntimeError, match=f"the agent cannot go from {a.name} to {b.name}"):
                p._enter(b)


OPERATIONS = ("begin", "reset_observed", "step", "tick", "finish", "end")


class TracedProtocol(AgentProtocol):
    """AgentProtocol that records every state change it makes."""

    transitions: list[tuple[AgentState, AgentState]]

    def _enter(self, state: AgentState) -> None:
        self.transitions.append((self.state, state))
        super()._enter(state)


def traced() -> TracedProtocol:
    p = make(kind=TracedProtocol)
    assert isinstance(p, TracedProtocol)
    p.transitions = []
    return p


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPERATIONS), st.integers(0, 700)), max_size=40))
def test_whatever_comes_the_agent_only_takes_its_tables_transitions(operations: list[tuple[str, int]]) -> None:
    """Any order of goals, steps, ticks and ends, at any times (the reset observation
    when the reset is done, as the agent gives it): each is served or refused as
    CommandRejected, and every state change is one AGENT_NEXT allows (a defect would
    raise RuntimeError)."""
    p = traced()
    now, seq = 0, 0
    for name, advance_ms in operations:
        now += advance_ms * MS
        try:
            if name == "begin":
                p.begin_episode(EP1, "a", now)
                seq = 0
            elif name == "reset_observed" and p.state is AgentState.AFTER_RESET:
                p.reset_observed(now)
            elif name == "step":
                p.start_step(EP1, seq + 1, [0.1, -0.1], 0, now)
                seq += 1
            elif name == "tick":
                p.on_tick(now)
            elif name == "finish":
                p.finish(EP1)
            elif name == "end":
                p.end_episode()
        except CommandRejected:
            pass
    assert all(agent_may_go(before, after) for before, after in p.transitions)


def test_a_whole_episode_walks_every_state_of_the_table() -> None:
    """Reset, steps, a silent learner and a resumed step, then the end: every state and
    every transition the table names but the way out of an episode's start."""
    p = traced()
    p.begin_episode(EP1, "a", 0)
    p.reset_observed(0)
    p.start_step(EP1, 1, [0.1, 0.1], 0, 0)
    assert p.on_tick(100 * MS) is TickEvent.OBSERVE
    assert p.on_tick(700 * MS) is TickEvent.WATCHDOG
    p.start_step(EP1, 2, [0.1, 0.1], 0, 800 * MS)
    p.finish(EP1)
    table = {(a, b) for a, nexts in AGENT_NEXT.items() for b in nexts}
    assert table <= set(p.transitions)
