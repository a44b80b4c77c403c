"""Timing models for agents on simulated time: how long the world runs on while the
learner thinks, chosen by the user instead of by the machine's load.

A model is written as one string (an agent parameter, a trainer flag):

    none                      the world waits for the learner: the next action starts
                              at the observation's instant (the in-process MDP)
    fixed:<s>                 the previous action runs on for exactly <s> seconds
    lognormal:<median>,<p99>  ... for a think time drawn from a lognormal with that
                              median and 99th percentile (seconds)
    replay:<steps.csv>        ... for think times recorded in a run (LAT minus the
                              previous step's executed duration, see
                              ``think_times_from_steps_csv``), in their order
    wall                      think time as it happens (the only model on a real arm)

Every model but ``wall`` is a function of the episode seed only, so two runs with the
same seed see the same think times (test_think_time.py holds this).
"""

from __future__ import annotations

import csv
import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.core.timing import NS_PER_S

# z such that P(N(0, 1) <= z) = 0.99: a lognormal's p99 is median * exp(sigma * Z_99).
Z_99 = 2.3263478740408408
MAX_THINK_S = 3600.0


class TimingModelKind(enum.Enum):
    NONE = "none"
    FIXED = "fixed"
    LOGNORMAL = "lognormal"
    REPLAY = "replay"
    WALL = "wall"


@dataclass(frozen=True)
class TimingModel:
    """A parsed timing model; ``parse`` builds one from its string."""

    kind: TimingModelKind
    fixed_s: float = 0.0
    median_s: float = 0.0
    p99_s: float = 0.0
    recorded_s: tuple[float, ...] = ()
    source: str = ""

    @property
    def simulated(self) -> bool:
        """True when the model, not the machine, decides think times."""
        return self.kind is not TimingModelKind.WALL

    def describe(self) -> str:
        """The model as it was written (for results.json and logs)."""
        if self.kind is TimingModelKind.FIXED:
            return f"fixed:{self.fixed_s:g}"
        if self.kind is TimingModelKind.LOGNORMAL:
            return f"lognormal:{self.median_s:g},{self.p99_s:g}"
        if self.kind is TimingModelKind.REPLAY:
            return f"replay:{self.source}"
        return self.kind.value

    def sampler(self, seed: int | None) -> ThinkTimeSampler:
        """Think times for one episode, a function of ``seed`` alone."""
        return ThinkTimeSampler(self, seed)

    @staticmethod
    def parse(spec: str) -> TimingModel:
        """``spec`` as described in the module docstring; ParameterError names what is wrong."""
        text = spec.strip()
        name, _, argument = text.partition(":")
        try:
            kind = TimingModelKind(name.strip().lower())
        except ValueError:
            raise ParameterError(
                f"timing model '{spec}': unknown kind '{name}'; allowed: none, fixed:<s>, "
                "lognormal:<median>,<p99>, replay:<steps.csv>, wall"
            ) from None
        if kind in (TimingModelKind.NONE, TimingModelKind.WALL):
            if argument:
                raise ParameterError(f"timing model '{spec}': '{kind.value}' takes no argument")
            return TimingModel(kind)
        if kind is TimingModelKind.REPLAY:
            if not argument:
                raise ParameterError(f"timing model '{spec}': replay needs a recording, e.g. replay:run/steps.csv")
            return TimingModel(kind, recorded_s=think_times_from_steps_csv(Path(argument)), source=argument)
        numbers = _numbers(spec, argument, 1 if kind is TimingModelKind.FIXED else 2)
        if kind is TimingModelKind.FIXED:
            return TimingModel(kind, fixed_s=numbers[0])
        median, p99 = numbers
        if not 0.0 < median < p99:
            raise ParameterError(
                f"timing model '{spec}': lognormal needs 0 < median < p99 (got median {median:g} s, p99 {p99:g} s)"
            )
        return TimingModel(kind, median_s=median, p99_s=p99)


def _numbers(spec: str, argument: str, count: int) -> list[float]:
    parts = [part.strip() for part in argument.split(",")] if argument else []
    if len(parts) != count:
        raise ParameterError(f"timing model '{spec}': expected {count} number(s) of seconds after ':'")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ParameterError(f"timing model '{spec}': '{part}' is not a number of seconds") from None
        if not (math.isfinite(value) and 0.0 <= value <= MAX_THINK_S):
            raise ParameterError(f"timing model '{spec}': {part} s is outside [0, {MAX_THINK_S:g}] s")
        values.append(value)
    return values


class ThinkTimeSampler:
    """The think times of one episode, in order: ``next_s()`` per observation sent.

    ``None`` for ``wall``: the machine decides."""

    def __init__(self, model: TimingModel, seed: int | None) -> None:
        self.model = model
        self._rng = np.random.default_rng(seed)
        recorded = model.recorded_s
        # A recording replays in order from a seeded start, so its bursts (a learner's
        # periodic updates) keep their rhythm.
        self._cursor = int(self._rng.integers(len(recorded))) if recorded else 0

    def next_s(self) -> float | None:
        model = self.model
        kind = model.kind
        if kind is TimingModelKind.WALL:
            return None
        if kind is TimingModelKind.NONE:
            return 0.0
        if kind is TimingModelKind.FIXED:
            return model.fixed_s
        if kind is TimingModelKind.LOGNORMAL:
            sigma = math.log(model.p99_s / model.median_s) / Z_99
            return min(MAX_THINK_S, float(model.median_s * math.exp(sigma * self._rng.standard_normal())))
        value = model.recorded_s[self._cursor]
        self._cursor = (self._cursor + 1) % len(model.recorded_s)
        return value


def think_time(lat: float, previous_duration: float) -> float:
    """The learner's think time before an action: its LAT (how long the previous action
    really ran) less that action's executed duration; a step answered early by a tick's
    rounding counts as 0."""
    return max(0.0, lat - previous_duration)


def think_times_from_rows(rows: Iterable[dict[str, str]]) -> list[float]:
    """Think times in a step log: for each step after the first of an episode, its LAT
    (how long the previous action really ran) minus the previous step's executed
    ``duration``; negative gaps (a step answered early by a tick's rounding) count as 0."""
    times: list[float] = []
    previous: dict[tuple[str, str], float] = {}
    for row in rows:
        key = (row.get("agent") or "", row.get("episode") or "")
        try:
            lat = float(row["lat"])
            duration = float(row["duration"])
        except (KeyError, TypeError, ValueError):
            continue
        before = previous.get(key)
        if before is not None and math.isfinite(lat) and math.isfinite(before):
            times.append(min(MAX_THINK_S, think_time(lat, before)))
        previous[key] = duration
    return times


def think_times_from_steps_csv(path: Path) -> tuple[float, ...]:
    """The think times recorded in a trainer's ``steps.csv`` (columns agent, episode,
    lat, duration); ParameterError if the file is missing or holds none."""
    try:
        with open(path, newline="") as file:
            reader = csv.DictReader(file)
            missing = {"lat", "duration"} - set(reader.fieldnames or ())
            if missing:
                raise ParameterError(f"timing model replay:{path}: no column(s) {sorted(missing)} in its header")
            times = think_times_from_rows(reader)
    except OSError as error:
        raise ParameterError(f"timing model replay:{path}: cannot read it ({error.strerror})") from None
    if not times:
        raise ParameterError(f"timing model replay:{path}: no think time in it (it needs two steps of an episode)")
    return tuple(times)


class WorldGate:
    """When a simulated world may run on, and when the next action starts, under a model.

    After an observation at ``ato_ns`` the previous action runs on for the episode's next
    think time, rounded to whole control periods (a plant changes its action on a tick);
    then the world waits. The next action starts at ``ato_ns`` + that think time: at that
    instant if it arrived earlier (it waits), at once if it arrived later (a world that
    cannot stop exactly, such as a lockstep simulation a command ahead, has run on a
    little: ``commit`` says how far, and the action then starts there).
    ``wall``: the world never waits and an action starts when it arrives.
    test_think_time.py holds these rules.
    """

    def __init__(self, model: TimingModel, control_period_ns: int) -> None:
        if control_period_ns <= 0:
            raise ValueError("control period must be positive")
        self.model = model
        self.control_period_ns = control_period_ns
        self._sampler = model.sampler(None)
        self._until_ns: int | None = None
        self._committed_ns: int | None = None  # the furthest a sent command lets the world run

    def new_episode(self, seed: int | None) -> None:
        """A seeded episode restarts the think times from its seed; an unseeded one goes on
        drawing where the last left off (as Gymnasium's reset does), so a run seeded once
        repeats."""
        if seed is not None:
            self._sampler = self.model.sampler(seed)
        self._until_ns = None

    def observed(self, ato_ns: int) -> None:
        """An observation left at ``ato_ns``: the learner thinks from now."""
        think = self._sampler.next_s()
        if think is None:
            self._until_ns = None
            return
        period = self.control_period_ns
        periods = (round(think * NS_PER_S) + period // 2) // period  # the nearest whole count
        self._until_ns = ato_ns + periods * period

    def commit(self, horizon_ns: int) -> None:
        """A command that lets a lockstep world run to ``horizon_ns`` went out: the world
        cannot wait before there, so the next action starts there at the earliest."""
        if self._committed_ns is None or horizon_ns > self._committed_ns:
            self._committed_ns = horizon_ns

    @property
    def waits_from_ns(self) -> int | None:
        """Where the world stops and waits for the next action (None: it never does):
        after the think time, or where the commands already sent take it, if further."""
        if self._until_ns is None or self._committed_ns is None:
            return self._until_ns
        return max(self._until_ns, self._committed_ns)

    def may_run(self, now_ns: int) -> bool:
        """Whether the previous action may still advance the world at ``now_ns``."""
        return self._until_ns is None or now_ns < self._until_ns

    def may_commit(self, horizon_ns: int) -> bool:
        """Whether the world may be committed up to ``horizon_ns``: what an agent on a
        lockstep simulator's clock asks before a command that lets the simulation run to
        there (a command sent at a tick lets it run at least to the next one)."""
        return self._until_ns is None or horizon_ns <= self._until_ns

    def may_start(self, now_ns: int) -> bool:
        """Whether an action arriving at ``now_ns`` starts at once (else it waits for
        ``waits_from_ns``)."""
        waits_from = self.waits_from_ns
        return waits_from is None or now_ns >= waits_from

    def start_ns(self, arrival_ns: int) -> int:
        """When an action that arrived at ``arrival_ns`` starts; then the world runs free
        until the next observation."""
        waits_from, self._until_ns = self.waits_from_ns, None
        return arrival_ns if waits_from is None else max(arrival_ns, waits_from)
