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
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

DEFAULT_WINDOW_NS = 100_000_000
# A commanded move of 5 mrad in the window (0.05 rad/s) against less than a tenth of it:
# a following arm lags by its tracking error (a few ms), never by most of the window.
DEFAULT_MOVING_RAD = 0.005
DEFAULT_STILL_RAD = 0.0005


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
    (``measured``); ``clear`` after a re-plan, so that no stale plan is compared."""

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
        self._commanded: deque[tuple[int, np.ndarray]] = deque()
        self._measured: deque[tuple[int, np.ndarray]] = deque()
        # The last window's verdict that the arm follows (commanded to move, and moved).
        self.followed = False

    def clear(self) -> None:
        self._commanded.clear()
        self._measured.clear()

    def commanded(self, times_ns: list[int], positions: list[np.ndarray]) -> None:
        """Positions the joint controller is to be at, at increasing ``times_ns``; a later
        command replaces what an earlier one said from its first time on."""
        if not times_ns:
            return
        while self._commanded and self._commanded[-1][0] >= times_ns[0]:
            self._commanded.pop()
        for t_ns, q in zip(times_ns, positions, strict=True):
            self._commanded.append((int(t_ns), np.array(q, dtype=np.float64)))

    def measured(self, stamp_ns: int, q: np.ndarray) -> Stop | None:
        """A joint state (its stamp, positions); the stop it completes, if any. A state
        no newer than the last adds no time."""
        if self._measured and stamp_ns <= self._measured[-1][0]:
            return None
        self._measured.append((stamp_ns, np.array(q, dtype=np.float64)))
        start_ns = stamp_ns - self.window_ns
        while len(self._measured) > 1 and self._measured[1][0] <= start_ns:
            self._measured.popleft()
        while len(self._commanded) > 2 and self._commanded[1][0] <= self._measured[0][0]:
            self._commanded.popleft()
        first_ns, first_q = self._measured[0]
        if first_ns > start_ns:
            return None  # less than a window of states yet
        commanded_path = [self._commanded_at(t) for t, _ in self._measured]
        if any(q_c is None for q_c in commanded_path):
            return None  # not commanded over the whole window
        # How far each moved from where the window began, at the states' stamps (the
        # furthest: a reversal within the window still counts as moving).
        middle_ns = (first_ns + stamp_ns) // 2
        origin = commanded_path[0]
        commanded = measured = first_half = 0.0
        for (t_ns, q_m), q_c in zip(self._measured, commanded_path, strict=True):
            moved = float(np.max(np.abs(q_c - origin)))  # type: ignore[operator]
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

    def _commanded_at(self, t_ns: int) -> np.ndarray | None:
        """The commanded positions at ``t_ns``, linear between the known times; None
        outside them."""
        entries = self._commanded
        if not entries or t_ns < entries[0][0] or t_ns > entries[-1][0]:
            return None
        for (t0, q0), (t1, q1) in zip(entries, list(entries)[1:], strict=False):
            if t0 <= t_ns <= t1:
                return q0 if t1 == t0 else q0 + (q1 - q0) * ((t_ns - t0) / (t1 - t0))
        return entries[-1][1]
