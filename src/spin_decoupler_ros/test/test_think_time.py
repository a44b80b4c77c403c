"""Timing models (core/think_time.py): parsing with clear errors, seeded repeatability,
the distributions they promise, and think times recovered from a step log."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.core.think_time import (
    TimingModel,
    TimingModelKind,
    WorldGate,
    think_times_from_rows,
    think_times_from_steps_csv,
)
from spin_decoupler_ros.rl.training import STEP_LOG_FIELDS


def write_steps_csv(path: Path, rows: list[dict[str, object]]) -> Path:
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=STEP_LOG_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.mark.parametrize(
    ("spec", "kind", "described"),
    [
        ("none", TimingModelKind.NONE, "none"),
        (" Wall ", TimingModelKind.WALL, "wall"),
        ("fixed:0.05", TimingModelKind.FIXED, "fixed:0.05"),
        ("lognormal:0.02, 0.2", TimingModelKind.LOGNORMAL, "lognormal:0.02,0.2"),
    ],
)
def test_a_model_parses_and_describes_itself_as_written(spec: str, kind: TimingModelKind, described: str) -> None:
    model = TimingModel.parse(spec)
    assert model.kind is kind
    assert model.describe() == described
    assert TimingModel.parse(model.describe()) == model
    assert model.simulated == (kind is not TimingModelKind.WALL)


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("sometimes", "unknown kind 'sometimes'"),
        ("fixed", "expected 1 number"),
        ("fixed:abc", "'abc' is not a number"),
        ("fixed:-0.1", "outside [0, 3600]"),
        ("fixed:nan", "outside [0, 3600]"),
        ("lognormal:0.1", "expected 2 number"),
        ("lognormal:0.2,0.1", "0 < median < p99"),
        ("lognormal:0,0.1", "0 < median < p99"),
        ("none:1", "takes no argument"),
        ("replay:", "needs a recording"),
        ("replay:/no/such/steps.csv", "cannot read it"),
    ],
)
def test_a_bad_model_is_refused_naming_what_is_wrong(spec: str, named: str) -> None:
    with pytest.raises(ParameterError) as refused:
        TimingModel.parse(spec)
    assert named in str(refused.value)
    assert spec in str(refused.value)


models = st.sampled_from(["none", "fixed:0.03", "lognormal:0.01,0.3", "wall"]).map(TimingModel.parse)


@given(model=models, seed=st.integers(0, 2**32 - 1))
def test_the_same_seed_gives_the_same_think_times(model: TimingModel, seed: int) -> None:
    first, second = model.sampler(seed), model.sampler(seed)
    assert [first.next_s() for _ in range(20)] == [second.next_s() for _ in range(20)]


def test_wall_leaves_think_time_to_the_machine_and_none_to_nothing() -> None:
    assert TimingModel.parse("wall").sampler(1).next_s() is None
    assert TimingModel.parse("none").sampler(1).next_s() == 0.0
    assert TimingModel.parse("fixed:0.25").sampler(7).next_s() == 0.25


def test_lognormal_has_the_median_and_p99_it_was_given() -> None:
    sampler = TimingModel.parse("lognormal:0.02,0.2").sampler(3)
    draws = np.array([sampler.next_s() for _ in range(40_000)])
    assert np.median(draws) == pytest.approx(0.02, rel=0.03)
    assert np.quantile(draws, 0.99) == pytest.approx(0.2, rel=0.08)
    other = TimingModel.parse("lognormal:0.02,0.2").sampler(4)
    assert [other.next_s() for _ in range(5)] != list(draws[:5])


def test_think_time_is_lat_minus_the_previous_steps_duration_within_an_episode() -> None:
    rows = [
        {"agent": "/a", "episode": "0", "lat": "0.0", "duration": "0.1"},
        {"agent": "/b", "episode": "0", "lat": "0.0", "duration": "0.2"},
        {"agent": "/a", "episode": "0", "lat": "0.13", "duration": "0.3"},  # 0.03 after /a's 0.1
        {"agent": "/b", "episode": "0", "lat": "0.25", "duration": "0.2"},  # 0.05 after /b's 0.2
        {"agent": "/a", "episode": "1", "lat": "9.0", "duration": "0.1"},  # a new episode: no gap
        {"agent": "/a", "episode": "1", "lat": "0.099", "duration": "0.1"},  # early by rounding: 0
        {"agent": "/a", "episode": "1", "lat": "", "duration": "0.1"},  # unreadable: skipped
    ]
    assert think_times_from_rows(rows) == pytest.approx([0.03, 0.05, 0.0])


def test_replay_plays_a_recorded_run_in_order_from_a_seeded_start(tmp_path: Path) -> None:
    durations = [0.1] * 6
    lats = [0.0, 0.11, 0.12, 0.13, 0.14, 0.15]
    path = write_steps_csv(
        tmp_path / "steps.csv",
        [{"agent": "", "episode": 0, "lat": lat, "duration": d} for lat, d in zip(lats, durations, strict=True)],
    )
    recorded = think_times_from_steps_csv(path)
    assert recorded == pytest.approx((0.01, 0.02, 0.03, 0.04, 0.05))
    model = TimingModel.parse(f"replay:{path}")
    assert model.describe() == f"replay:{path}"
    for seed in range(5):
        sampler = model.sampler(seed)
        sequence = [sampler.next_s() for _ in range(len(recorded) * 2)]
        start = recorded.index(model.sampler(seed).next_s())
        assert sequence == [recorded[(start + i) % len(recorded)] for i in range(len(sequence))]


def test_a_recording_without_think_times_is_refused(tmp_path: Path) -> None:
    one_step = write_steps_csv(tmp_path / "one.csv", [{"episode": 0, "lat": 0.0, "duration": 0.1}])
    with pytest.raises(ParameterError, match="no think time in it"):
        TimingModel.parse(f"replay:{one_step}")
    headless = tmp_path / "other.csv"
    headless.write_text("a,b\n1,2\n")
    with pytest.raises(ParameterError, match=r"no column\(s\) \['duration', 'lat'\]"):
        TimingModel.parse(f"replay:{headless}")


PERIOD = 10_000_000  # 10 ms


@given(
    spec=st.sampled_from(["none", "fixed:0.034", "lognormal:0.02,0.3"]),
    seed=st.integers(0, 2**16),
    ato=st.integers(0, 10**12),
    arrivals=st.lists(st.integers(0, 500_000_000), min_size=1, max_size=8),
)
def test_a_simulated_world_waits_where_the_model_says_and_the_action_starts_there(
    spec: str, seed: int, ato: int, arrivals: list[int]
) -> None:
    gate = WorldGate(TimingModel.parse(spec), PERIOD)
    gate.new_episode(seed)
    sampler = TimingModel.parse(spec).sampler(seed)
    for delay in arrivals:
        gate.observed(ato)
        think = sampler.next_s()
        assert think is not None
        until = gate.waits_from_ns
        assert until is not None and (until - ato) % PERIOD == 0
        assert abs((until - ato) - think * 1e9) <= PERIOD / 2  # the nearest whole period
        assert gate.may_run(until - 1) and not gate.may_run(until)
        assert not gate.may_start(until - 1) and gate.may_start(until)
        assert gate.may_commit(until) and not gate.may_commit(until + 1)
        arrival = ato + delay
        start = gate.start_ns(arrival)
        assert start == max(arrival, until)  # early: it waits for the instant; late: at once
        assert gate.may_run(start + 10**9) and gate.waits_from_ns is None  # runs free until observed
        ato = start + 100_000_000


def test_none_starts_the_next_action_at_the_observations_instant() -> None:
    gate = WorldGate(TimingModel.parse("none"), PERIOD)
    gate.observed(5 * PERIOD)
    assert not gate.may_run(5 * PERIOD)
    assert gate.start_ns(5 * PERIOD + 3) == 5 * PERIOD + 3
    gate.observed(9 * PERIOD)
    assert gate.start_ns(2 * PERIOD) == 9 * PERIOD


def test_a_world_committed_past_the_think_time_waits_there_and_the_action_starts_there() -> None:
    """A lockstep simulator cannot stop before the commands already sent let it run: the
    next action starts there, however early it came, and not before."""
    gate = WorldGate(TimingModel.parse("fixed:0.02"), PERIOD)
    gate.commit(3 * PERIOD)
    gate.observed(0)
    assert gate.waits_from_ns == 3 * PERIOD  # past the think time (2 periods)
    assert not gate.may_start(2 * PERIOD) and gate.may_start(3 * PERIOD)
    assert gate.start_ns(PERIOD) == 3 * PERIOD
    gate.observed(10 * PERIOD)
    assert gate.waits_from_ns == 12 * PERIOD  # an old commitment does not hold it back
    assert gate.may_commit(12 * PERIOD) and not gate.may_commit(13 * PERIOD)


def test_wall_never_holds_the_world_and_starts_an_action_when_it_arrives() -> None:
    gate = WorldGate(TimingModel.parse("wall"), PERIOD)
    gate.observed(PERIOD)
    assert gate.waits_from_ns is None and gate.may_run(10**15) and gate.may_commit(10**15)
    assert gate.start_ns(123) == 123


def test_a_new_episode_restarts_the_think_times_from_its_seed() -> None:
    model = TimingModel.parse("lognormal:0.05,0.5")
    gate = WorldGate(model, PERIOD)

    def first_three(seed: int | None) -> list[int | None]:
        gate.new_episode(seed)
        waits = []
        for _ in range(3):
            gate.observed(0)
            waits.append(gate.waits_from_ns)
        return waits

    assert first_three(11) == first_three(11) != first_three(12)
    waits = []
    for seed in (11, None, None):  # seeded once, as SB3 does: draws go on across episodes
        gate.new_episode(seed)
        gate.observed(0)
        waits.append(gate.waits_from_ns)
    assert waits == first_three(11)
