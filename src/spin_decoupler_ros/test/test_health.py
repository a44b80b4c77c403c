"""The agent's health rules (core/health.py): what turns a diagnostic status to WARN or ERROR."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spin_decoupler_ros.core.health import (
    Figures,
    HealthThresholds,
    HealthWindow,
    LearnerState,
    Level,
    assess_control_loop,
    assess_learner,
    assess_state_age,
)

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

PERIOD = 10_000_000
THRESHOLDS = HealthThresholds()


def window_of(periods: list[int], steps: tuple[tuple[float, float], ...] = ()) -> Figures:
    window = HealthWindow()
    now = 0
    for length in periods:
        now += length
        window.on_period(now, length, late=length > 1.1 * PERIOD)
    for lat, think in steps:
        window.on_step(lat, think)
    return window.close()


def test_a_window_reports_rate_worst_period_and_percentiles_then_starts_empty() -> None:
    window = HealthWindow()
    for i in range(1, 101):
        window.on_period(i * PERIOD, PERIOD, late=False)
    for think in (0.002, 0.004, 0.006):
        window.on_step(0.1 + think, think)
    figures = window.close()
    assert figures.ticks == 100 and figures.late_ticks == 0
    assert figures.rate_hz == pytest.approx(100.0)
    assert figures.worst_period_s == pytest.approx(0.01)
    assert figures.steps == 3 and figures.think_p50_s == pytest.approx(0.004)
    assert figures.lat_p50_s == pytest.approx(0.104)
    empty = window.close()
    assert empty.ticks == 0 and empty.rate_hz is None and empty.think_p99_s is None
    assert dict(empty.key_values())["LAT p99"] == "-"


@given(st.lists(st.integers(5_000_000, 40_000_000), min_size=1, max_size=300))
def test_the_control_loop_level_follows_the_late_fraction(periods: list[int]) -> None:
    figures = window_of(periods)
    level, text = assess_control_loop(figures, THRESHOLDS)
    late = sum(length > 1.1 * PERIOD for length in periods) / len(periods)
    expected = Level.ERROR if late > 0.05 else Level.WARN if late > 0.001 else Level.OK
    assert level is expected
    assert f"{figures.late_ticks} of {len(periods)} ticks late" in text


def test_no_tick_is_a_stalled_loop_unless_the_world_waits_for_the_learner() -> None:
    assert assess_control_loop(window_of([]), THRESHOLDS)[0] is Level.ERROR
    assert assess_control_loop(window_of([]), THRESHOLDS, waiting=True)[0] is Level.OK


def test_a_silent_learner_warns_a_fault_is_an_error_and_a_slow_learner_warns() -> None:
    quick = window_of([PERIOD] * 10, ((0.11, 0.01),))
    slow = window_of([PERIOD] * 10, ((2.1, 2.0),))
    assert assess_learner(LearnerState.RUNNING, quick, THRESHOLDS)[0] is Level.OK
    assert assess_learner(LearnerState.HOLDING, quick, THRESHOLDS)[0] is Level.WARN
    assert assess_learner(LearnerState.FAULT, quick, THRESHOLDS)[0] is Level.ERROR
    level, text = assess_learner(LearnerState.INACTIVE, slow, THRESHOLDS)  # paused: nothing to think about
    assert level is Level.OK and "not active" in text
    level, text = assess_learner(LearnerState.RUNNING, slow, THRESHOLDS)
    assert level is Level.WARN and "think time p99 2.000 s" in text


def test_a_stale_robot_state_warns_then_is_an_error() -> None:
    assert assess_state_age(0.001, THRESHOLDS)[0] is Level.OK
    assert assess_state_age(0.2, THRESHOLDS)[0] is Level.WARN
    assert assess_state_age(0.6, THRESHOLDS)[0] is Level.ERROR
    assert assess_state_age(None, THRESHOLDS)[0] is Level.ERROR


def test_thresholds_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="late fractions"):
        HealthThresholds(late_fraction_warn=0.1, late_fraction_error=0.01)
    with pytest.raises(ValueError, match="joint-state ages"):
        HealthThresholds(state_age_warn_s=1.0, state_age_error_s=0.5)
