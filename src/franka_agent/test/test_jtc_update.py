"""core/jtc_update.py's replay: what the genuine controller's update does at a
trajectory's end under a jittering clock (the rest is held to the golden traces:
test_genuine_jtc_golden.py)."""

from __future__ import annotations

import numpy as np
import pytest

from franka_agent.core.jtc_update import ControllerUpdate, Replay, replay
from franka_agent.core.trajectory import TrajectoryPoint

pytestmark = pytest.mark.core

STAMP_NS = 1_000_000_000
POINTS = [  # the last point at 8.99 ms from the start
    TrajectoryPoint(0.0, np.zeros(1), np.zeros(1)),
    TrajectoryPoint(0.004, np.array([4e-4]), np.array([0.2])),
    TrajectoryPoint(0.00899, np.array([1e-3]), np.zeros(1)),
]


def replayed(offsets_us: list[int]) -> Replay:
    """The updates at ``offsets_us`` after the trajectory's take (the first), each row
    published."""
    times = np.array([STAMP_NS + t * 1000 for t in offsets_us], dtype=np.int64)
    starts = np.full(times.shape, STAMP_NS, dtype=np.int64)
    return replay(ControllerUpdate("jazzy", 0.001), {STAMP_NS: POINTS}, times, starts, times, np.zeros((times.size, 1)))


def test_an_update_after_one_that_sampled_its_command_past_the_end_gives_the_last_point() -> None:
    """4.42.1's update samples its reference at its trajectory time (advanced by the
    measured period) and its command one nominal period later; a command sample past the
    last point leaves the segment index there, so the next update gives the last point
    even a little before it (without the rule, bench/genuine_jtc.py's mock_vs_genuine
    leaves the genuine reference by up to 3e-5 rad/s there)."""
    ahead = [k * 1000 for k in range(9)]
    played_out = replayed([*ahead, 8980])  # the update at 8 ms commanded 9 ms: past 8.99
    assert played_out.positions[-1, 0] == 1e-3 and played_out.velocities[-1, 0] == 0.0
    assert played_out.checkable[-1]
    on_time = replayed([*ahead[:-1], 7985, 8980])  # the one at 7.985 ms commanded 8.985: before it
    assert on_time.positions[-1, 0] < 1e-3 and on_time.velocities[-1, 0] != 0.0
    # Where the update before was not published, which it was cannot be told: not checked.
    unknown = replayed([*ahead[:-1], 8980])
    assert not unknown.checkable[-1] and unknown.checkable[-2]
