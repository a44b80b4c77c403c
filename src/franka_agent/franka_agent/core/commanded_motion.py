"""The largest velocity, acceleration and jerk of joint commands sampled at a controller's
updates, against an arm's limits.

An arm's motion generator (libfranka's, checked at 1 kHz) judges the position commands it
receives by their differences from one update to the next: the velocity is the
difference quotient of two commands, the acceleration that of two velocities, the jerk
that of two accelerations, each taken at the midpoint of its interval, so an update late
by some jitter is measured over its own interval. Updates without a command (NaN: no
controller active) end a run; differences are taken within runs only.
``bench/genuine_jtc.py`` applies it to the genuine joint_trajectory_controller's reference,
timed by ``trajectory_times`` on the controller's own trajectory clock
(test_commanded_motion.py). Pure numpy, no ROS.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from franka_agent.core.command_check import LIMIT_TOLERANCE
from franka_agent.core.profile import JointLimits


@dataclass(frozen=True)
class CommandedExtremes:
    """Per joint, the largest magnitude of each derivative over every run of commands."""

    samples: int  # commanded updates taken into account
    max_velocity: np.ndarray
    max_acceleration: np.ndarray
    max_jerk: np.ndarray

    def limit_breaks(self, limits: JointLimits) -> dict[str, list[int]]:
        """For each of velocity, acceleration and jerk, the joints (0-based) whose largest
        value exceeds the limit by more than ``LIMIT_TOLERANCE``."""
        share = 1.0 + LIMIT_TOLERANCE
        return {
            kind: [int(j) for j in np.flatnonzero(found > limit * share)]
            for kind, found, limit in (
                ("velocity", self.max_velocity, limits.velocity),
                ("acceleration", self.max_acceleration, limits.acceleration),
                ("jerk", self.max_jerk, limits.jerk),
            )
        }

    def merged(self, other: CommandedExtremes) -> CommandedExtremes:
        return CommandedExtremes(
            self.samples + other.samples,
            np.maximum(self.max_velocity, other.max_velocity),
            np.maximum(self.max_acceleration, other.max_acceleration),
            np.maximum(self.max_jerk, other.max_jerk),
        )


def _derivative(t: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Difference quotients of ``x`` (rows at times ``t``) and the midpoints they belong to."""
    return np.diff(x, axis=0) / np.diff(t)[:, None], 0.5 * (t[1:] + t[:-1])


def _runs(times: np.ndarray, positions: np.ndarray) -> list[slice]:
    """Slices of consecutive rows that all carry a command, in strictly increasing time."""
    commanded = np.all(np.isfinite(positions), axis=1) & np.isfinite(times)
    breaks = np.flatnonzero(~commanded)
    runs, start = [], 0
    for stop in [*breaks, len(times)]:
        if stop > start:
            runs.append(slice(start, stop))
        start = stop + 1
    bad = [r for r in runs if np.any(np.diff(times[r]) <= 0.0)]
    if bad:
        raise ValueError(f"command times must increase within a run; they do not from row {bad[0].start}")
    return runs


def commanded_extremes(times: np.ndarray, positions: np.ndarray) -> CommandedExtremes:
    """The extremes of the commands ``positions`` (one row per update, one column per
    joint) taken at ``times`` (s)."""
    times = np.asarray(times, dtype=np.float64)
    positions = np.asarray(positions, dtype=np.float64)
    if positions.ndim != 2 or positions.shape[0] != times.shape[0]:
        raise ValueError(f"positions {positions.shape} need one row per time ({times.shape[0]})")
    joints = positions.shape[1]
    extremes = CommandedExtremes(0, np.zeros(joints), np.zeros(joints), np.zeros(joints))
    for run in _runs(times, positions):
        t, q = times[run], positions[run]
        found = [np.zeros(joints)] * 3
        derivative, at = q, t
        for order in range(3):
            if len(at) < 2:
                break
            derivative, at = _derivative(at, derivative)
            found[order] = np.max(np.abs(derivative), axis=0)
        extremes = extremes.merged(CommandedExtremes(len(t), *found))
    return extremes


def trajectory_times(
    stamps_ns: np.ndarray, time_from_start_ns: np.ndarray, starts_ns: np.ndarray, tolerance_ns: int = 1_000_000
) -> np.ndarray:
    """Each ``~/controller_state`` sample's time on joint_trajectory_controller's
    trajectory clock (ns): the active trajectory's start plus the reference's
    ``time_from_start``.

    The controller samples its trajectory at ``traj_time_``, set to the update's time when
    it takes a trajectory and advanced by the measured periods after; the header stamp is
    the update's time, read apart from the period by microseconds that jitter (hundreds
    of them, now and then, on a loaded machine). The start is not published, but ``stamp -
    time_from_start`` lies within that jitter of it: it is snapped to the nearest of the
    trajectories' stamps ``starts_ns``, or, for a trajectory the controller made itself
    (its hold), taken where the run of such samples begins (its first sample is exact).
    A sample near none whose ``time_from_start`` goes on from the one before is on that
    one's trajectory: its stamp was read late (by milliseconds on a loaded machine, the
    trajectory time a period on: the update's time and its period are read apart).
    """
    stamps = np.asarray(stamps_ns, dtype=np.int64)
    offsets = np.asarray(time_from_start_ns, dtype=np.int64)
    starts = np.sort(np.asarray(starts_ns, dtype=np.int64))
    guessed = stamps - offsets
    known = np.full(guessed.shape, -1, dtype=np.int64)
    if starts.size:
        after = np.clip(np.searchsorted(starts, guessed), 0, starts.size - 1)
        before = np.clip(after - 1, 0, starts.size - 1)
        nearest = np.where(
            np.abs(starts[after] - guessed) < np.abs(starts[before] - guessed), starts[after], starts[before]
        )
        known = np.where(np.abs(nearest - guessed) <= tolerance_ns, nearest, -1)
    unknown = known < 0
    own = -1
    for i in np.flatnonzero(unknown):
        if i > 0 and offsets[i] > offsets[i - 1] and abs(int(guessed[i]) - int(known[i - 1])) > tolerance_ns:
            own = int(known[i - 1])  # a late read on the trajectory before (sample 0 of a hold is at 0)
        elif i == 0 or not unknown[i - 1] or abs(int(guessed[i]) - own) > tolerance_ns:
            own = int(guessed[i])
        known[i] = own
    return known + offsets
