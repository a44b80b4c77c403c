"""StopDetector: an arm that stops on its own is told from one that follows, a stalled
driver and a starved agent, within a bounded time of its joint states' stamps."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franka_agent.core.stops import (
    DEFAULT_WINDOW_NS,
    STOP_PHASE_NEXT,
    Stop,
    StopDetector,
    StopHandling,
    StopPhase,
    stop_phase_may_go,
)

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

MS = 1_000_000
STATE_PERIOD = 10 * MS  # joint states as the agent takes them: once per 100 Hz tick
COMMAND_PERIOD = 10 * MS


def commanded_path(speeds: list[float], accel: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    """One joint's commanded position every ms: ramps (within ``accel``) between the
    speeds given for each 200 ms segment; the other six joints still."""
    v, q, times, qs = 0.0, 0.0, [], []
    for segment, target in enumerate(speeds):
        for ms in range(200):
            dv = np.clip(target - v, -accel * 1e-3, accel * 1e-3)
            v += dv
            q += v * 1e-3
            times.append((segment * 200 + ms) * MS)
            qs.append(q)
    positions = np.zeros((len(qs), 7))
    positions[:, 0] = qs
    return np.array(times), positions


def feed(
    detector: StopDetector, times: np.ndarray, commanded: np.ndarray, measured_at, until_ns: int | None = None
) -> int | None:  # type: ignore[no-untyped-def]
    """Commands every COMMAND_PERIOD (the points up to 30 ms ahead), states every
    STATE_PERIOD from ``measured_at(t)``; the first stamp a stop is detected at."""
    end = int(times[-1]) if until_ns is None else until_ns
    for t in range(0, end - 40 * MS, STATE_PERIOD):
        ahead = (times > t) & (times <= t + 30 * MS) & (times % COMMAND_PERIOD == 0)
        detector.commanded([int(x) for x in times[ahead]], list(commanded[ahead]))
        if detector.measured(t, measured_at(t)) is not None:
            return t
    return None


@settings(max_examples=60, deadline=None)
@given(
    speeds=st.lists(st.sampled_from([-1.0, -0.3, -0.05, 0.0, 0.05, 0.3, 1.0]), min_size=2, max_size=8),
    lag_ms=st.integers(0, 25),
    noise=st.floats(0.0, 1e-4),
)
def test_an_arm_that_follows_with_a_lag_is_never_taken_for_a_stopped_one(
    speeds: list[float], lag_ms: int, noise: float
) -> None:
    times, commanded = commanded_path(speeds)
    rng = np.random.default_rng(0)

    def measured(t: int) -> np.ndarray:
        index = max(0, min(len(times) - 1, (t - lag_ms * MS) // MS))
        return commanded[index] + rng.uniform(-noise, noise, 7)

    assert feed(StopDetector(), times, commanded, measured) is None


@settings(max_examples=40, deadline=None)
@given(speed=st.sampled_from([-1.0, -0.2, 0.1, 0.5]), stop_ms=st.integers(300, 700))
def test_an_arm_that_stops_while_commanded_to_move_is_detected_within_the_window(speed: float, stop_ms: int) -> None:
    times, commanded = commanded_path([speed] * 5)
    stop_ns = stop_ms * MS
    frozen = commanded[stop_ms]

    def measured(t: int) -> np.ndarray:
        return commanded[t // MS] if t < stop_ns else frozen

    detected = feed(StopDetector(), times, commanded, measured)
    assert detected is not None
    # A window of still states after the last state before the stop (or the first after it).
    assert stop_ns - STATE_PERIOD + DEFAULT_WINDOW_NS <= detected <= stop_ns + DEFAULT_WINDOW_NS + 2 * STATE_PERIOD


def test_states_that_stop_coming_or_stop_advancing_add_no_time() -> None:
    """A stalled driver (no new stamp) or a starved agent is not a stopped arm."""
    times, commanded = commanded_path([0.5] * 5)
    detector = StopDetector()
    frozen_stamp = 300 * MS
    for t in range(0, 900 * MS, STATE_PERIOD):
        ahead = (times > t) & (times <= t + 30 * MS) & (times % COMMAND_PERIOD == 0)
        detector.commanded([int(x) for x in times[ahead]], list(commanded[ahead]))
        stamp = min(t, frozen_stamp)  # the same old state, again and again
        assert detector.measured(stamp, commanded[stamp // MS]) is None


def test_no_commands_no_stop_and_a_clear_forgets_what_was_commanded() -> None:
    times, commanded = commanded_path([0.5] * 3)
    detector = StopDetector()
    still = commanded[0]
    # Commanded for 100 ms, then nothing more: the arm still, but no command spans the window.
    detector.commanded([int(t) for t in times[:100:10]], list(commanded[:100:10]))
    for t in range(0, 400 * MS, STATE_PERIOD):
        assert detector.measured(t, still) is None
    # A stop is found, then a clear (a re-plan): the old commands count no more.
    detector = StopDetector()
    assert feed(detector, times, commanded, lambda t: still) is not None
    detector.clear()
    assert detector.measured(int(times[-1]) + MS, still) is None


def test_the_followed_verdict_says_whether_the_arm_moved_with_its_commands() -> None:
    times, commanded = commanded_path([0.5] * 3)
    detector = StopDetector()
    assert feed(detector, times, commanded, lambda t: commanded[t // MS]) is None
    assert detector.followed
    detector = StopDetector()
    assert feed(detector, times, commanded, lambda t: commanded[0]) is not None
    assert not detector.followed


class OneStateAtATime:
    """The rule as the module's docstring states it, one state and one commanded point at
    a time: the reference ``StopDetector`` computes the same numbers as."""

    def __init__(self, window_ns: int = DEFAULT_WINDOW_NS, moving: float = 0.005, still: float = 0.0005) -> None:
        self.window_ns, self.moving, self.still = window_ns, moving, still
        self.commands: list[tuple[int, np.ndarray]] = []
        self.states: list[tuple[int, np.ndarray]] = []
        self.followed = False

    def commanded(self, times_ns: list[int], positions: list[np.ndarray]) -> None:
        if times_ns:
            self.commands = [entry for entry in self.commands if entry[0] < times_ns[0]]
            self.commands += [(t, np.array(q, dtype=np.float64)) for t, q in zip(times_ns, positions, strict=True)]

    def commanded_at(self, t_ns: int) -> np.ndarray | None:
        entries = self.commands
        if not entries or t_ns < entries[0][0] or t_ns > entries[-1][0]:
            return None
        for (t0, q0), (t1, q1) in itertools.pairwise(entries):
            if t0 <= t_ns <= t1:
                return q0 if t1 == t0 else q0 + (q1 - q0) * ((t_ns - t0) / (t1 - t0))
        return entries[-1][1]

    def measured(self, stamp_ns: int, q: np.ndarray) -> Stop | None:
        if self.states and stamp_ns <= self.states[-1][0]:
            return None
        self.states.append((stamp_ns, np.array(q, dtype=np.float64)))
        start_ns = stamp_ns - self.window_ns
        while len(self.states) > 1 and self.states[1][0] <= start_ns:
            self.states.pop(0)
        while len(self.commands) > 2 and self.commands[1][0] <= self.states[0][0]:
            self.commands.pop(0)
        first_ns, first_q = self.states[0]
        if first_ns > start_ns:
            return None
        path = [self.commanded_at(t) for t, _ in self.states]
        if any(q_c is None for q_c in path):
            return None
        middle_ns = (first_ns + stamp_ns) // 2
        commanded = measured = first_half = 0.0
        for (t_ns, q_m), q_c in zip(self.states, path, strict=True):
            moved = float(np.max(np.abs(q_c - path[0])))  # type: ignore[operator]
            commanded = max(commanded, moved)
            if t_ns <= middle_ns:
                first_half = max(first_half, moved)
            measured = max(measured, float(np.max(np.abs(q_m - first_q))))
        if commanded < self.moving:
            return None
        self.followed = measured >= self.still
        if measured < self.still and first_half >= self.moving / 2:
            return Stop((stamp_ns - first_ns) / 1e9, commanded, measured)
        return None


@settings(max_examples=150, deadline=None)
@given(
    segments=st.lists(
        st.tuples(
            st.integers(1, 40),  # ticks
            st.integers(1, 15),  # ms between states
            st.sampled_from(["follow", "still", "jump"]),
            st.sampled_from([-1.0, -0.2, 0.0, 0.03, 0.5]),  # commanded speed (rad/s)
            st.integers(1, 6),  # commanded points a tick, 4 ms apart
            st.sampled_from([0, 1, 3, 10]),  # ms the first point lies ahead (0: at the state)
            st.booleans(),  # cleared (a re-plan) as the segment begins
        ),
        min_size=1,
        max_size=12,
    ),
    state_stamp_offset=st.sampled_from([0, 1_796_351_991_664_107_939]),
)
def test_the_detector_gives_what_the_one_state_at_a_time_rule_gives(
    segments: list[tuple[int, int, str, float, int, int, bool]], state_stamp_offset: int
) -> None:
    """Tick by tick, the same verdicts, the same figures to the bit, and the same
    ``followed``, with wall-clock stamps too (ns since 1970)."""
    detector, reference = StopDetector(), OneStateAtATime()
    t, q_commanded, q_measured = state_stamp_offset, np.zeros(7), np.zeros(7)
    for ticks, gap_ms, arm, speed, count, ahead_ms, clear in segments:
        if clear:
            detector.clear()
            reference.commands, reference.states = [], []
        for _ in range(ticks):
            times = [t + (ahead_ms + 4 * k) * MS for k in range(count)]
            points = [q_commanded + speed * (ahead_ms + 4 * k) * 1e-3 for k in range(count)]
            detector.commanded(times, points)
            reference.commanded(times, points)
            t += gap_ms * MS
            q_commanded = q_commanded + speed * gap_ms * 1e-3
            if arm == "follow":
                q_measured = q_commanded - 1e-4
            elif arm == "jump":
                q_measured = q_measured + 0.01
            found, expected = detector.measured(t, q_measured), reference.measured(t, q_measured)
            assert found == expected
            assert detector.followed == reference.followed


def test_stop_phases_go_only_where_their_table_says() -> None:
    """Every pair of phases: allowed exactly where STOP_PHASE_NEXT (or the way out of any
    phase, to NONE) says, and refused as a defect otherwise; what a phase no longer
    needs is dropped on the way."""
    allowed = {(a, b) for a in StopPhase for b in StopPhase if b in STOP_PHASE_NEXT[a] or b is StopPhase.NONE}
    for a, b in itertools.product(StopPhase, StopPhase):
        assert stop_phase_may_go(a, b) == ((a, b) in allowed)
        handling = StopHandling(a, "the robot stopped on its own", (0.0, 3, np.zeros(7)))
        if (a, b) not in allowed:
            with pytest.raises(RuntimeError, match=f"a stop cannot go from {a.name} to {b.name}"):
                handling.enter(b)
            assert handling.phase is a
            continue
        handling.enter(b)
        assert handling.phase is b
        assert (handling.call is not None) == (b is StopPhase.RECOVERING)
        assert (handling.text is not None) == (b in (StopPhase.STOPPED, StopPhase.RECOVERING))


def test_a_stop_recovered_and_followed_walks_the_table_back_to_none() -> None:
    """The path docs/robot_stops.md describes: seen, a reset calls the recovery (again, if
    a second reset comes first), recovered, then seen following."""
    handling = StopHandling()
    handling.text = "the robot stopped on its own"
    for phase in (StopPhase.STOPPED, StopPhase.RECOVERING, StopPhase.RECOVERING, StopPhase.UNPROVEN, StopPhase.NONE):
        handling.enter(phase)
    assert handling == StopHandling()
