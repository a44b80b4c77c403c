"""StopDetector: tell an arm that stopped on its own from one that follows its commands.

A reflex, a user or emergency stop, or a joint controller that went inactive leaves the
robot's joint states coming (franka_ros2 v2.x) but still, while the agent's commands
keep moving (docs/robot_stops.md). The rule: over the last ``window_ns`` of the joint
states' own stamps, the commanded positions got at least ``moving`` rad (on some joint) from where
they were at its start, at least half of it in the window's first half, while the
measured ones stayed within ``still`` rad (on every joint). (A motion that starts near the window's end
is not yet a stop: the arm follows it with a lag.)

Only time the states' stamps advance over counts, so a stalled driver, a stopped mock
or a starved agent (no fresh state) never looks like a stopped arm, and the commanded
positions are compared at the same stamps as the measured ones, so a command's lead and
the tracking lag do not count either. test_stops.py holds the rule's properties.

``StopPhase`` and ``STOP_PHASE_NEXT``: what the agent does about a stop, from seeing it
to the arm following again after the robot's error recovery, as an enum and a table.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from spin_decoupler_ros.core.transitions import TransitionTable

DEFAULT_WINDOW_NS = 100_000_000
# A commanded move of 5 mrad in the window (0.05 rad/s) against less than a tenth of it:
# a following arm lags by its tracking error (a few ms), never by most of the window.
DEFAULT_MOVING_RAD = 0.005
DEFAULT_STILL_RAD = 0.0005


class StopPhase(enum.Enum):
    """Where the agent is with a stop the arm made itself (docs/robot_stops.md); its
    transitions are STOP_PHASE_NEXT (test_stops.py::test_stop_phases_go_only_where_their_table_says)."""

    NONE = "none"  # no stop to deal with
    STOPPED = "stopped"  # a stop seen: the agent holds; the next reset calls the error recovery first
    RECOVERING = "recovering"  # the robot's error recovery runs; the reset waits for it
    UNPROVEN = "unproven"  # recovered; the arm not yet seen following the commands


# What may follow each phase. Besides these, any phase may go to NONE: where a person must
# act (no recovery configured, it failed, or the arm stopped again right after it), the
# agent leaves the robot to them.
STOP_PHASE_NEXT: dict[StopPhase, frozenset[StopPhase]] = {
    StopPhase.NONE: frozenset({StopPhase.STOPPED}),  # a stop seen, a recovery configured
    StopPhase.STOPPED: frozenset({StopPhase.STOPPED, StopPhase.RECOVERING}),  # a later stop; a reset
    StopPhase.RECOVERING: frozenset({StopPhase.RECOVERING, StopPhase.UNPROVEN}),  # a new reset; succeeded
    StopPhase.UNPROVEN: frozenset(),  # following again (NONE), or stopped again (a person must act)
}


STOP_PHASES = TransitionTable("STOP_PHASE_NEXT", "a stop", STOP_PHASE_NEXT, frozenset({StopPhase.NONE}))


def stop_phase_may_go(phase: StopPhase, to: StopPhase) -> bool:
    """Whether STOP_PHASE_NEXT (and the way out of any phase) lets ``phase`` go to ``to``."""
    return STOP_PHASES.allows(phase, to)


@dataclass
class StopHandling:
    """The agent's record of a stop: its phase, the stop as said (STOPPED, RECOVERING)
    and the reset that called the error recovery (RECOVERING: its start, monotonic s,
    seed and options)."""

    phase: StopPhase = StopPhase.NONE
    text: str | None = None
    call: tuple[float, int | None, np.ndarray] | None = None

    def enter(self, phase: StopPhase) -> None:
        """Go to ``phase`` where STOP_PHASE_NEXT allows it; anything else is a defect."""
        STOP_PHASES.check(self.phase, phase)
        self.phase = phase
        if phase is not StopPhase.RECOVERING:
            self.call = None
        if phase in (StopPhase.NONE, StopPhase.UNPROVEN):
            self.text = None


@dataclass(frozen=True)
class Stop:
    """A detected stop: how far the commands moved and the arm did over ``window_s``."""

    window_s: float
    commanded_rad: float
    measured_rad: float

    def describe(self) -> str:
        return (
            f"the arm stayed still ({self.measured_rad * 1e3:.2f} mrad) for {self.window_s:.3f} s "
            f"of its joint states while commanded to move {self.commanded_rad * 1e3:.1f} mrad"
        )


class StopDetector:
    """Commanded positions by time (``commanded``) against measured ones by stamp
    (``measured``); ``clear`` after a re-plan, so that no stale plan is compared.

    It runs on every control tick (a window holds 10 states at 100 Hz, 50 at 500 Hz):
    the window's commanded path is interpolated and compared with numpy at once, the
    same numbers as one state at a time
    (test_stops.py::test_the_detector_gives_what_the_one_state_at_a_time_rule_gives)."""

    def __init__(
        self,
        window_ns: int = DEFAULT_WINDOW_NS,
        moving: float = DEFAULT_MOVING_RAD,
        still: float = DEFAULT_STILL_RAD,
    ) -> None:
        if window_ns <= 0:
            raise ValueError("window_ns must be positive")
        if not 0.0 < still < moving:
            raise ValueError("thresholds must satisfy 0 < still < moving")
        self.window_ns = window_ns
        self.moving = moving
        self.still = still
        # Commanded (time, positions) at increasing times; measured (stamp, positions).
        self._commanded_ns: list[int] = []
        self._commanded_q: list[np.ndarray] = []
        self._measured_ns: list[int] = []
        self._measured_q: list[np.ndarray] = []
        # The last window's verdict that the arm follows (commanded to move, and moved).
        self.followed = False

    def clear(self) -> None:
        self._commanded_ns.clear()
        self._commanded_q.clear()
        self._measured_ns.clear()
        self._measured_q.clear()

    def commanded(self, times_ns: list[int], positions: list[np.ndarray]) -> None:
        """Positions the joint controller is to be at, at increasing ``times_ns``; a later
        command replaces what an earlier one said from its first time on."""
        if not times_ns:
            return
        while self._commanded_ns and self._commanded_ns[-1] >= times_ns[0]:
            self._commanded_ns.pop()
            self._commanded_q.pop()
        for t_ns, q in zip(times_ns, positions, strict=True):
            self._commanded_ns.append(int(t_ns))
            self._commanded_q.append(np.array(q, dtype=np.float64))

    def measured(self, stamp_ns: int, q: np.ndarray) -> Stop | None:
        """A joint state (its stamp, positions); the stop it completes, if any. A state
        no newer than the last adds no time."""
        measured_ns, measured_q = self._measured_ns, self._measured_q
        if measured_ns and stamp_ns <= measured_ns[-1]:
            return None
        measured_ns.append(stamp_ns)
        measured_q.append(np.array(q, dtype=np.float64))
        start_ns = stamp_ns - self.window_ns
        _drop_front(measured_ns, measured_q, 1, start_ns)
        commanded_ns, commanded_q = self._commanded_ns, self._commanded_q
        _drop_front(commanded_ns, commanded_q, 2, measured_ns[0])
        first_ns = measured_ns[0]
        if first_ns > start_ns:
            return None  # less than a window of states yet
        if not commanded_ns or first_ns < commanded_ns[0] or stamp_ns > commanded_ns[-1]:
            return None  # not commanded over the whole window
        stamps = np.array(measured_ns, dtype=np.int64)
        path = _interpolate(np.array(commanded_ns, dtype=np.int64), np.array(commanded_q), stamps)
        # How far each moved from where the window began, at the states' stamps (the
        # furthest: a reversal within the window still counts as moving).
        moved = np.max(np.abs(path - path[0]), axis=1)
        commanded = float(moved.max())
        if commanded < self.moving:
            return None
        first_half = float(moved[stamps <= (first_ns + stamp_ns) // 2].max())
        measured = float(np.max(np.abs(np.array(measured_q) - measured_q[0])))
        self.followed = measured >= self.still
        if measured < self.still and first_half >= self.moving / 2:
            return Stop((stamp_ns - first_ns) / 1e9, commanded, measured)
        return None


def _drop_front(times: list[int], values: list[np.ndarray], keep: int, until_ns: int) -> None:
    """Drop the first entry of both lists while more than ``keep`` are left and the second
    one is at or before ``until_ns``."""
    count = 0
    while len(times) - count > keep and times[count + 1] <= until_ns:
        count += 1
    if count:
        del times[:count]
        del values[:count]


def _interpolate(times: np.ndarray, positions: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Rows of ``positions`` (known at increasing ``times``) at each of ``at`` (within
    them), linear in between; at a known time, from the segment that ends there."""
    if times.size == 1:
        return np.broadcast_to(positions[0], (at.size, positions.shape[1]))
    segment = np.clip(np.searchsorted(times, at, side="left") - 1, 0, times.size - 2)
    t0 = times[segment]
    span = times[segment + 1] - t0
    share = np.where(span > 0, (at - t0) / np.maximum(span, 1), 0.0)
    q0 = positions[segment]
    return q0 + (positions[segment + 1] - q0) * share[:, None]
