"""Time bookkeeping: control-loop periods, and the offset between two hosts' clocks.

All times are integer nanoseconds, as ROS clocks give them, so no rounding creeps in.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

NS_PER_S = 1_000_000_000


def seconds_to_ns(seconds: float) -> int:
    return round(seconds * NS_PER_S)


def ns_to_seconds(ns: int) -> float:
    return ns / NS_PER_S


def periods_for(duration_ns: int, period_ns: int) -> int:
    """Whole control periods that best cover ``duration_ns``: the nearest count, at least one.

    The agent observes on a control tick, so a requested duration is executed for this
    many periods; the rounding error is at most half a period.
    """
    return max(1, (duration_ns + period_ns // 2) // period_ns)


@dataclass
class StepTickStats:
    """Control-loop ticks seen while one action ran."""

    ticks: int = 0
    late_ticks: int = 0
    max_period_ns: int = 0


class TickMonitor:
    """Watches the control loop's periods and says which are late.

    A period is late when it exceeds the nominal one by more than ``late_tolerance``
    (10% by default, the figure the benchmarks report). Only timer ticks are judged;
    a tick run early for an arriving action re-phases the loop and is not a period.
    Keeps the last ``history`` periods for benchmarks.
    """

    def __init__(self, period_ns: int, late_tolerance: float = 0.1, history: int = 0) -> None:
        if period_ns <= 0:
            raise ValueError("period_ns must be positive")
        self.period_ns = period_ns
        self.late_threshold_ns = int(period_ns * (1.0 + late_tolerance))
        self.total_ticks = 0
        self.total_late = 0
        self.step = StepTickStats()
        self._last_tick_ns: int | None = None
        # One row per period: the tick that ended it (clock ns) and its length (ns).
        self._history = np.zeros((history, 2), dtype=np.int64) if history > 0 else None
        self._history_count = 0

    def on_tick(self, now_ns: int, *, scheduled: bool = True) -> int | None:
        """Record a tick at ``now_ns``; ``scheduled`` is False for an early, re-phasing tick.
        Returns the period it ended (None if it ended none)."""
        last, self._last_tick_ns = self._last_tick_ns, now_ns
        if not scheduled or last is None:
            return None
        period = now_ns - last
        self.total_ticks += 1
        self.step.ticks += 1
        if period > self.step.max_period_ns:
            self.step.max_period_ns = period
        if period > self.late_threshold_ns:
            self.total_late += 1
            self.step.late_ticks += 1
        if self._history is not None:
            self._history[self._history_count % len(self._history)] = (now_ns, period)
            self._history_count += 1
        return period

    def start_step(self) -> StepTickStats:
        """Begin a new action's statistics and return the finished one's."""
        finished, self.step = self.step, StepTickStats()
        return finished

    def restart(self) -> None:
        """Forget the last tick, e.g. after the clock jumped (simulation reset)."""
        self._last_tick_ns = None

    def periods(self) -> np.ndarray:
        """The recorded periods (ns), oldest first."""
        return self.period_log()[:, 1]

    def period_log(self) -> np.ndarray:
        """The recorded periods, oldest first: rows of (tick that ended it, its length), ns.
        The tick times let a benchmark keep the periods of a window of its own."""
        if self._history is None:
            return np.zeros((0, 2), dtype=np.int64)
        size = len(self._history)
        n = min(self._history_count, size)
        start = self._history_count % size if self._history_count > size else 0
        return np.roll(self._history[:n], -start, axis=0) if start else self._history[:n].copy()


class WakeLatency:
    """How late a timer's callbacks typically run after their due time.

    An rclpy timer's callback runs some hundreds of microseconds after the time it was
    due (the process waking, the executor finding it ready): measured here, 0.5-0.6 ms.
    Every tick is late by about as much, so the periods between ticks do not show it;
    but a timer reset to re-phase the loop makes its next tick due a full period later,
    and that tick then runs a period *plus* this latency after the reset. Resetting with
    the period shortened by ``lead_ns`` puts it one period after. Samples are clipped
    to a quarter period, so a rare stall moves the estimate only a little.
    """

    def __init__(self, period_ns: int, smoothing: float = 1.0 / 16.0) -> None:
        if period_ns <= 0:
            raise ValueError("period_ns must be positive")
        self._cap_ns = period_ns // 4
        self._smoothing = smoothing
        self._estimate_ns: float | None = None

    def on_tick(self, lateness_ns: int) -> None:
        """Record how late a scheduled tick ran after its due time."""
        sample = min(max(lateness_ns, 0), self._cap_ns)
        if self._estimate_ns is None:
            self._estimate_ns = float(sample)
        else:
            self._estimate_ns += self._smoothing * (sample - self._estimate_ns)

    @property
    def lead_ns(self) -> int:
        """How much earlier than one period to make the next tick due (0 before any tick)."""
        return 0 if self._estimate_ns is None else int(self._estimate_ns)


@dataclass(frozen=True)
class OffsetSample:
    """One NTP-style exchange: offset of the agent clock over the RL clock, and path delay."""

    offset_ns: int
    delay_ns: int


def exchange_sample(sent_ns: int, received_ns: int, answered_ns: int, returned_ns: int) -> OffsetSample:
    """NTP's on-wire estimate from one request/answer exchange.

    :param sent_ns: RL clock when the command left (t1).
    :param received_ns: agent clock when it arrived (t2).
    :param answered_ns: agent clock when the answer left (t3; the observation's ATO).
    :param returned_ns: RL clock when the answer arrived (t4).
    The agent's processing time (t3 - t2, the whole action) cancels out; only an
    asymmetry between the two directions' delays biases the offset, by at most delay/2.
    """
    offset = ((received_ns - sent_ns) + (answered_ns - returned_ns)) // 2
    delay = (returned_ns - sent_ns) - (answered_ns - received_ns)
    return OffsetSample(offset, max(0, delay))


def heard_on_arrival(listening_from_ns: int, sent_ns: int, received_ns: int, answered_ns: int) -> bool:
    """Whether an answer was taken as it arrived, so that its arrival time is known.

    The answer cannot have left the agent before ``sent_ns + (answered_ns - received_ns)``
    (RL clock: the command's trip takes no negative time, and the agent held it that long),
    so a wait that began by then (``listening_from_ns``) was spinning when it arrived. One
    that began later (the learner worked meanwhile) may have found it waiting; its arrival
    time, taken then, would bias the offset by half the wait. Needs no clock offset.
    The agent's hold is on its own clock: on a self-clocked agent that is simulated time,
    which may be longer than the wall time it took, so there the rule lets through a
    sample taken late (an offset between a simulated clock and the wall has no use).
    (test_spaces_and_timing.py::test_an_answer_taken_after_the_learners_work_gives_no_offset_sample)
    """
    return listening_from_ns <= sent_ns + max(0, answered_ns - received_ns)


class ClockOffsetEstimator:
    """Online estimate of ``agent_clock - rl_clock`` from the round trips steps already make.

    Like NTP's clock filter: of the last ``window`` samples, trust those with the
    smallest network delay, since queuing delay is what biases a sample. The estimate
    is the median offset of the lowest-delay quarter of the window.
    """

    def __init__(self, window: int = 64) -> None:
        if window < 1:
            raise ValueError("window must be at least 1")
        self._samples: deque[OffsetSample] = deque(maxlen=window)

    def add(self, sample: OffsetSample) -> None:
        self._samples.append(sample)

    def __len__(self) -> int:
        return len(self._samples)

    @property
    def offset_ns(self) -> int | None:
        """Best current estimate, or None before the first sample."""
        if not self._samples:
            return None
        best = heapq.nsmallest(max(1, len(self._samples) // 4), self._samples, key=lambda s: s.delay_ns)
        offsets = sorted(s.offset_ns for s in best)
        return offsets[(len(offsets) - 1) // 2]  # the lower median: always a measured offset

    @property
    def uncertainty_ns(self) -> int | None:
        """Half the smallest delay seen in the window: the bound on the estimate's bias."""
        if not self._samples:
            return None
        return min(s.delay_ns for s in self._samples) // 2
