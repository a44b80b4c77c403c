"""StopDetector: an arm that stops on its own is told from one that follows, a stalled
driver and a starved agent, within a bounded time of its joint states' stamps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franka_agent.core.stops import DEFAULT_WINDOW_NS, StopDetector

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
