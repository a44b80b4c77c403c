"""core/commanded_motion.py: the derivatives of commands sampled at a controller's updates."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franka_agent.core.commanded_motion import commanded_extremes, trajectory_times
from franka_agent.core.profile_file import load_profile

pytestmark = pytest.mark.core
PERIOD = 1e-3


@given(
    amplitude=st.floats(0.05, 1.0),
    frequency=st.floats(0.2, 2.0),
    jitter=st.floats(0.0, 0.1),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=40, deadline=None)
def test_a_sine_sampled_on_a_jittery_clock_gives_its_derivatives(
    amplitude: float, frequency: float, jitter: float, seed: int
) -> None:
    """Each update measured over its own interval: a clock late by up to 10% of a period
    still gives a sine's velocity, acceleration and jerk to within a few per cent."""
    rng = np.random.default_rng(seed)
    omega = 2 * np.pi * frequency
    times = np.arange(int(2.0 / frequency / PERIOD)) * PERIOD + rng.uniform(0, jitter * PERIOD, size=1)[0]
    times = times + rng.uniform(0.0, jitter * PERIOD, size=times.size)
    q = amplitude * np.sin(omega * times)[:, None] * np.array([1.0, -0.5])
    found = commanded_extremes(times, q)
    expected = amplitude * np.array([omega, omega**2, omega**3])
    assert found.samples == times.size
    np.testing.assert_allclose(found.max_velocity, expected[0] * np.array([1.0, 0.5]), rtol=0.01)
    np.testing.assert_allclose(found.max_acceleration, expected[1] * np.array([1.0, 0.5]), rtol=0.02)
    # (jerk from third differences: timing noise weighs most here, bounded by the jitter)
    np.testing.assert_allclose(found.max_jerk, expected[2] * np.array([1.0, 0.5]), rtol=0.05 + 3 * jitter)


def test_a_velocity_step_is_an_acceleration_and_jerk_no_fr3_takes() -> None:
    """Positions-only points interpolated linearly: the velocity jumps at the point, which
    at 1 kHz is an acceleration of the jump over one period, far above the FR3's 10 rad/s^2."""
    limits = load_profile("fr3").limits
    times = np.arange(200) * PERIOD
    slope = np.where(times < 0.1, 0.1, 0.3)  # rad/s: a 0.2 rad/s jump at 0.1 s
    q = np.cumsum(slope * PERIOD)[:, None] * np.ones((1, 7))
    found = commanded_extremes(times, q)
    np.testing.assert_allclose(found.max_velocity, 0.3, rtol=1e-6)
    np.testing.assert_allclose(found.max_acceleration, 0.2 / PERIOD, rtol=1e-6)
    breaks = found.limit_breaks(limits)
    assert breaks == {"velocity": [], "acceleration": list(range(7)), "jerk": list(range(7))}


def test_updates_without_a_command_end_a_run_and_a_jump_across_them_is_not_motion() -> None:
    times = np.arange(10) * PERIOD
    q = np.array([0.0, 0.0, 0.0, np.nan, np.nan, 1.0, 1.0, 1.0, 1.0, 1.0])[:, None]
    found = commanded_extremes(times, q)
    assert found.samples == 8
    assert found.max_velocity[0] == 0.0 and found.max_jerk[0] == 0.0


def test_times_that_do_not_increase_are_refused_naming_the_row() -> None:
    with pytest.raises(ValueError, match="from row 0"):
        commanded_extremes(np.array([0.0, 0.001, 0.001]), np.zeros((3, 1)))


@settings(max_examples=50, deadline=None)
@given(
    gaps=st.lists(st.integers(2, 40), min_size=1, max_size=8),
    jitter=st.lists(st.integers(-60_000, 60_000), min_size=400, max_size=400),
    held=st.integers(0, 7),
    late_row=st.integers(0, 399),
    late_by=st.integers(2_500_000, 6_000_000),
)
def test_the_trajectory_clock_is_recovered_from_stamps_that_jitter(
    gaps: list[int], jitter: list[int], held: int, late_row: int, late_by: int
) -> None:
    """The controller takes trajectory k at update takes[k] and samples it at its start plus
    the periods since; stamps are the updates' times, off by tens of microseconds, and one
    (``late_row``, not a take) read milliseconds late. One trajectory (``held``) is the
    controller's own hold: its start is no message's stamp."""
    period = 1_000_000
    takes = np.cumsum([1, *gaps])
    updates = np.arange(takes[-1] + 20)
    stamps = 5_000_000_000_000 + updates * period + np.array(jitter[: updates.size], dtype=np.int64)
    # Each sent 0.25-0.75 ms before it is taken (the agent's are 10 ms apart: no start lies
    # within the 1 ms tolerance of another trajectory's samples).
    starts = stamps[takes] - (1 + np.arange(takes.size) % 3) * 250_000
    active = np.searchsorted(takes, updates, side="right") - 1
    first = active >= 0
    truth = stamps[takes[active]] + (updates - takes[active]) * period  # traj_time_
    held_trajectory = held % takes.size
    starts[held_trajectory] = stamps[takes[held_trajectory]]  # its start is the update's time
    offsets = truth - starts[active]
    known = np.delete(starts, held_trajectory)
    late_row %= updates.size
    if late_row not in takes and active[late_row] >= 0:
        guess = stamps[late_row] + late_by - offsets[late_row]
        if np.min(np.abs(known - guess)) > 1_000_000:  # (one that lands on another's stamp is not told apart)
            stamps[late_row] += late_by
    found = trajectory_times(stamps[first], offsets[first], known)
    assert np.array_equal(found, truth[first])
