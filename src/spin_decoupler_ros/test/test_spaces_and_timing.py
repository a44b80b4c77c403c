"""ActionSpec checks and the timing helpers (no ROS)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spin_decoupler_ros.core import ActionSpaceError, ActionSpec, ClockOffsetEstimator, TickMonitor, exchange_sample
from spin_decoupler_ros.core.timing import WakeLatency, heard_on_arrival, periods_for

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

MS = 1_000_000


def test_action_spec_rejects_inconsistent_bounds() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        ActionSpec(np.zeros(2), np.ones(3))
    with pytest.raises(ValueError, match="low 1 > high 0"):
        ActionSpec(np.ones(1), np.zeros(1))
    with pytest.raises(ValueError, match="finite"):
        ActionSpec(np.array([-np.inf]), np.array([1.0]))


def test_action_spec_check_returns_a_fresh_array() -> None:
    spec = ActionSpec.symmetric(3)
    source = np.array([0.1, 0.2, 0.3])
    checked = spec.check(source)
    checked[0] = 9.0
    assert source[0] == 0.1


def test_action_spec_rejects_non_numbers() -> None:
    with pytest.raises(ActionSpaceError, match="not a vector of numbers"):
        ActionSpec.symmetric(2).check(["a", "b"])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("duration_ms", "period_ms", "periods"), [(100, 10, 10), (104, 10, 10), (105, 10, 11), (1, 10, 1), (0, 10, 1)]
)
def test_periods_for_rounds_to_nearest_whole_period(duration_ms: int, period_ms: int, periods: int) -> None:
    assert periods_for(duration_ms * MS, period_ms * MS) == periods


def test_tick_monitor_counts_late_periods_and_ignores_rephasing_ticks() -> None:
    monitor = TickMonitor(10 * MS, history=10)
    for t in (0, 10, 20, 32, 42):
        monitor.on_tick(t * MS)
    assert monitor.total_ticks == 4 and monitor.total_late == 1  # the 12 ms period
    monitor.on_tick(43 * MS, scheduled=False)  # an action arrived: re-phased, not a period
    monitor.on_tick(53 * MS)
    assert monitor.total_ticks == 5 and monitor.total_late == 1
    np.testing.assert_array_equal(monitor.periods(), np.array([10, 10, 12, 10, 10]) * MS)
    stats = monitor.start_step()
    assert (stats.ticks, stats.late_ticks, stats.max_period_ns) == (5, 1, 12 * MS)


def test_wake_latency_learns_the_typical_lateness_and_a_stall_barely_moves_it() -> None:
    latency = WakeLatency(10 * MS)
    assert latency.lead_ns == 0  # nothing measured: a plain reset
    for _ in range(200):
        latency.on_tick(600_000)  # ticks run 0.6 ms after they are due
    assert latency.lead_ns == pytest.approx(600_000, abs=1_000)
    latency.on_tick(40 * MS)  # one stall of four periods counts as a quarter period
    assert latency.lead_ns == pytest.approx(600_000 + (2.5 * MS - 600_000) / 16, abs=1_000)
    for _ in range(200):
        latency.on_tick(-50_000)  # early (a clock step): counts as on time
    assert latency.lead_ns < 1_000


def test_tick_monitor_history_is_a_ring() -> None:
    monitor = TickMonitor(1 * MS, history=3)
    for t in range(6):
        monitor.on_tick(t * t * MS)  # periods 1, 3, 5, 7, 9
    np.testing.assert_array_equal(monitor.periods(), np.array([5, 7, 9]) * MS)
    # Each kept with the tick that ended it, so a benchmark can cut out a window.
    np.testing.assert_array_equal(monitor.period_log()[:, 0], np.array([9, 16, 25]) * MS)


def test_exchange_sample_recovers_offset_with_symmetric_delay() -> None:
    offset, one_way, processing = 5_000 * MS, 2 * MS, 100 * MS
    t1 = 1_000 * MS
    t2 = t1 + one_way + offset
    t3 = t2 + processing
    t4 = t3 - offset + one_way
    sample = exchange_sample(t1, t2, t3, t4)
    assert sample.offset_ns == offset and sample.delay_ns == 2 * one_way


@given(
    offset_ms=st.floats(-1e6, 1e6),
    out_ms=st.floats(0, 50),
    back_ms=st.floats(0, 50),
    processing_ms=st.floats(0, 500),
    listening_after_send_ms=st.floats(0, 2000),
)
def test_an_exchange_is_accepted_only_if_the_wait_began_before_the_answer_arrived(
    offset_ms: float, out_ms: float, back_ms: float, processing_ms: float, listening_after_send_ms: float
) -> None:
    """Whatever the clocks' offset and the delays, an accepted exchange had the RL side
    spinning when its answer arrived, so the arrival time taken is the real one."""
    t1 = 1_000_000 * MS
    t2 = t1 + int(out_ms * MS) + int(offset_ms * MS)
    t3 = t2 + int(processing_ms * MS)
    arrival = t3 - int(offset_ms * MS) + int(back_ms * MS)
    listening_from = t1 + int(listening_after_send_ms * MS)
    if heard_on_arrival(listening_from, t1, t2, t3):
        assert listening_from <= arrival


def test_an_answer_taken_after_the_learners_work_gives_no_offset_sample() -> None:
    """A learner that works 300 ms while a 50 ms action runs takes the answer 250 ms after it
    arrived: the sample would put the offset 125 ms off, so it is not taken."""
    t1, offset, one_way = 0, 0, 1 * MS
    t2 = t1 + one_way + offset
    t3 = t2 + 50 * MS
    taken = t1 + 300 * MS
    assert not heard_on_arrival(taken, t1, t2, t3)
    assert abs(exchange_sample(t1, t2, t3, taken).offset_ns - offset) > 100 * MS  # what it would cost
    assert heard_on_arrival(t1 + 50 * MS, t1, t2, t3)  # spinning before the action ended: taken as it came


def test_offset_estimator_trusts_low_delay_samples() -> None:
    estimator = ClockOffsetEstimator(window=40)
    rng = np.random.default_rng(0)
    true_offset = -3 * MS
    for _ in range(40):
        out = int(rng.uniform(0.1, 0.3) * MS)
        back = out + int(rng.choice([0, 0, 0, 20]) * MS)  # occasional queuing on the way back
        t1 = 0
        t2 = t1 + out + true_offset
        t3 = t2 + 50 * MS
        t4 = t3 - true_offset + back
        estimator.add(exchange_sample(t1, t2, t3, t4))
    assert estimator.offset_ns is not None
    assert abs(estimator.offset_ns - true_offset) < 0.2 * MS
    assert estimator.uncertainty_ns is not None and estimator.uncertainty_ns < 0.2 * MS


def test_ros_args_quote_strings_that_yaml_would_read_as_other_types() -> None:
    from spin_decoupler_ros.tools.processes import ros_args

    args = ros_args(name="n", params={"hook": "nan", "flag": True, "rate": 100.0, "path": "it's", "list": [1.0, 2.0]})
    assert args[:3] == ["--ros-args", "-r", "__node:=n"]
    assert "hook:='nan'" in args and "flag:=true" in args and "rate:=100.0" in args
    assert "path:='it''s'" in args and "list:=[1.0,2.0]" in args
