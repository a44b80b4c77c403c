"""An agent's health in the terms of ROS diagnostics: what its control loop, its learner
and its robot did over the last window, and whether that is OK, a warning or an error.

Pure logic, no rclpy: ``AgentNode`` feeds a ``HealthWindow`` and publishes what
``assess_*`` say on ``/diagnostics`` once per ``diagnostics_period`` (docs/diagnostics.md).
test_health.py holds the rules.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from spin_decoupler_ros.core.timing import NS_PER_S


class Level(enum.IntEnum):
    """diagnostic_msgs/DiagnosticStatus levels."""

    OK = 0
    WARN = 1
    ERROR = 2


@dataclass(frozen=True)
class HealthThresholds:
    """Where a figure turns a status to WARN or ERROR (agent parameters ``diagnostics.*``)."""

    late_fraction_warn: float = 0.001  # the control loop's target: under 0.1% late
    late_fraction_error: float = 0.05
    think_p99_warn_s: float = 1.0  # the learner took this long between steps (99th percentile)
    state_age_warn_s: float = 0.05  # the robot's newest state is this old
    state_age_error_s: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.late_fraction_warn <= self.late_fraction_error <= 1.0:
            raise ValueError("late fractions: 0 <= warn <= error <= 1")
        if not 0.0 < self.state_age_warn_s <= self.state_age_error_s:
            raise ValueError("joint-state ages: 0 < warn <= error")
        if self.think_p99_warn_s <= 0.0:
            raise ValueError("think time: the warning threshold must be positive")


@dataclass(frozen=True)
class Figures:
    """One window's figures (times in seconds; None where the window saw nothing)."""

    ticks: int
    late_ticks: int
    worst_period_s: float | None
    rate_hz: float | None
    steps: int
    lat_p50_s: float | None
    lat_p99_s: float | None
    think_p50_s: float | None
    think_p99_s: float | None

    @property
    def late_fraction(self) -> float:
        return self.late_ticks / self.ticks if self.ticks else 0.0

    def key_values(self) -> list[tuple[str, str]]:
        """The figures as diagnostic key-value pairs (a dash where nothing was seen)."""

        def text(value: float | None, scale: float = 1e3, unit: str = "ms") -> str:
            return "-" if value is None else f"{value * scale:.2f} {unit}"

        return [
            ("control rate", "-" if self.rate_hz is None else f"{self.rate_hz:.1f} Hz"),
            ("ticks", str(self.ticks)),
            ("late ticks", str(self.late_ticks)),
            ("worst period", text(self.worst_period_s)),
            ("steps", str(self.steps)),
            ("LAT p50", text(self.lat_p50_s)),
            ("LAT p99", text(self.lat_p99_s)),
            ("think time p50", text(self.think_p50_s)),
            ("think time p99", text(self.think_p99_s)),
        ]


class HealthWindow:
    """Collects one window of control periods and steps, then hands its figures over."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self._ticks = 0
        self._late = 0
        self._worst_ns = 0
        self._first_ns: int | None = None
        self._last_ns: int | None = None
        self._lats: list[float] = []
        self._thinks: list[float] = []

    def on_period(self, end_ns: int, length_ns: int, late: bool) -> None:
        """A control period of ``length_ns`` ended at ``end_ns`` (agent clock)."""
        self._ticks += 1
        self._late += int(late)
        self._worst_ns = max(self._worst_ns, length_ns)
        if self._first_ns is None:
            self._first_ns = end_ns - length_ns
        self._last_ns = end_ns

    def on_step(self, lat_s: float, think_s: float) -> None:
        """A step started: the previous action's LAT, and the learner's think time in it."""
        self._lats.append(lat_s)
        self._thinks.append(think_s)

    def close(self) -> Figures:
        """This window's figures; the next window starts empty."""
        span_ns = (self._last_ns - self._first_ns) if self._first_ns is not None and self._last_ns is not None else 0
        lats, thinks = np.asarray(self._lats), np.asarray(self._thinks)
        figures = Figures(
            ticks=self._ticks,
            late_ticks=self._late,
            worst_period_s=self._worst_ns / NS_PER_S if self._ticks else None,
            rate_hz=self._ticks * NS_PER_S / span_ns if span_ns > 0 else None,
            steps=int(lats.size),
            lat_p50_s=float(np.percentile(lats, 50)) if lats.size else None,
            lat_p99_s=float(np.percentile(lats, 99)) if lats.size else None,
            think_p50_s=float(np.percentile(thinks, 50)) if thinks.size else None,
            think_p99_s=float(np.percentile(thinks, 99)) if thinks.size else None,
        )
        self._clear()
        return figures


def assess_control_loop(figures: Figures, thresholds: HealthThresholds, *, waiting: bool = False) -> tuple[Level, str]:
    """The control loop: late ticks over the window against the thresholds. No tick in a
    window is an error, unless the world waits for the learner (a timing model)."""
    if figures.ticks == 0:
        if waiting:
            return Level.OK, "waiting for the learner (timing model): the world stands still"
        return Level.ERROR, "no control tick in the last window: the control loop is stalled"
    fraction = figures.late_fraction
    text = f"{figures.late_ticks} of {figures.ticks} ticks late ({100 * fraction:.2f}%)"
    if fraction > thresholds.late_fraction_error:
        return Level.ERROR, text
    if fraction > thresholds.late_fraction_warn:
        return Level.WARN, text
    return Level.OK, text


class LearnerState(enum.Enum):
    """What the agent says of its learner (its AgentStatus)."""

    IDLE = "idle"
    RUNNING = "running"
    HOLDING = "holding"
    FAULT = "fault"
    INACTIVE = "inactive"  # lifecycle: configured, not active
    ROBOT_STOPPED = "robot stopped"  # the robot stopped on its own and a person must act


def assess_learner(state: LearnerState, figures: Figures, thresholds: HealthThresholds) -> tuple[Level, str]:
    """The learner: silent past the watchdog (the arm holds) is a warning, a fault an
    error; a slow one (think time p99 over its threshold) a warning."""
    if state is LearnerState.FAULT:
        return Level.ERROR, "fault: holding until the next reset"
    if state is LearnerState.ROBOT_STOPPED:
        return Level.ERROR, "the robot stopped on its own: a person must act (see the status message)"
    if state is LearnerState.INACTIVE:
        return Level.OK, "not active (lifecycle): holding, episodes refused until activated"
    if state is LearnerState.HOLDING:
        return Level.WARN, "the learner is silent past the watchdog: holding"
    if figures.think_p99_s is not None and figures.think_p99_s > thresholds.think_p99_warn_s:
        return Level.WARN, f"the learner is slow: think time p99 {figures.think_p99_s:.3f} s"
    return Level.OK, "no episode" if state is LearnerState.IDLE else "running"


def assess_state_age(age_s: float | None, thresholds: HealthThresholds) -> tuple[Level, str]:
    """The robot's state: none yet, or older than the error threshold, is an error."""
    if age_s is None:
        return Level.ERROR, "no robot state received yet"
    text = f"newest robot state {1e3 * age_s:.1f} ms old"
    if age_s > thresholds.state_age_error_s:
        return Level.ERROR, text
    if age_s > thresholds.state_age_warn_s:
        return Level.WARN, text
    return Level.OK, text
