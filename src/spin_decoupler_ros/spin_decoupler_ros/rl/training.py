"""Stable-Baselines3 helpers for decoupled training: a per-step timing log, timing
scalars, progress lines, short garbage collections, and learning while the agent acts.
What a run folder gets at the end (results, evaluation, plots) is in ``run_folder.py``."""

from __future__ import annotations

import csv
import gc
import math
import os
import sys
import time
from collections import deque
from pathlib import Path
from typing import IO, Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from spin_decoupler_ros.core.think_time import think_time

STEP_LOG_FIELDS = (
    "step",
    "agent",
    "episode",
    "seq",
    "lat",
    "ato",
    "requested_duration",
    "duration",
    "hold",
    "wall_time",
    "round_trip",
    "clock_offset",
    "reward",
    "terminated",
    "truncated",
)


def logged_steps(path: Path) -> list[int]:
    """The step numbers a step log (``StepLogCallback``'s CSV) holds, in order; none if
    there is no log yet."""
    if not path.exists():
        return []
    with open(path, newline="") as file:
        return [int(row["step"]) for row in csv.DictReader(file)]


class StepLogCallback(BaseCallback):
    """Writes one CSV row per environment step: the timing the agent reported (LAT, ATO,
    requested and executed duration, hold), the RL wall time, and the reward; and keeps
    per-episode returns and successes for the learning curve. With a VecEnv of several
    agents, one row per agent and step (``agent`` names it), episodes counted per agent."""

    def __init__(self, path: Path, extra_fields: tuple[str, ...] = (), resume: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.path = path
        self._resume = resume  # a checkpoint's state(): append from where it was
        self.fields = (*STEP_LOG_FIELDS, *extra_fields)
        self._file: IO[str] | None = None
        self._writer: Any = None
        self.episode = 0
        self.episodes: list[dict[str, float]] = []  # step, return, success, length
        self._returns: dict[int, float] = {}  # per env index, the running episode's
        self._lengths: dict[int, int] = {}
        self.lats: list[float] = []

    def _on_training_start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._resume is not None:
            from spin_decoupler_ros.rl.checkpoint import truncate_log

            # The rows after the checkpoint are done again: cut them, and append.
            truncate_log(self.path, int(self._resume["log_bytes"]))
            self.episode = int(self._resume["episode"])
            self.episodes = list(self._resume["episodes"])
            with open(self.path, newline="") as done:
                self.lats = [float(row["lat"]) for row in csv.DictReader(done) if row.get("lat")]
            self._file = open(self.path, "a", newline="")  # noqa: SIM115 - closed at training end
            self._writer = csv.DictWriter(self._file, fieldnames=self.fields, extrasaction="ignore")
            return
        self._file = open(self.path, "w", newline="")  # noqa: SIM115 - closed at training end
        self._writer = csv.DictWriter(self._file, fieldnames=self.fields, extrasaction="ignore")
        self._writer.writeheader()

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps of the log: how far the file got (flushed), the episode
        count and the finished episodes (an episode under way is begun again on resume)."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
        size = self.path.stat().st_size  # (the file is closed once training has ended)
        # An episode under way keeps its number and its rows; a resume begins the next.
        episode = self.episode + len(self._returns)
        return {"log_bytes": size, "episode": episode, "episodes": list(self.episodes)}

    def _on_step(self) -> bool:
        infos = self.locals.get("infos", [])
        rewards = self.locals.get("rewards", [])
        dones = self.locals.get("dones", [])
        for i, info in enumerate(infos):
            reward = float(rewards[i]) if len(rewards) > i else math.nan
            done = bool(dones[i]) if len(dones) > i else False
            truncated = bool(info.get("TimeLimit.truncated", False))
            row = {key: info.get(key) for key in self.fields}
            row.update(
                step=self.num_timesteps,
                episode=self.episode,
                reward=reward,
                terminated=done and not truncated,
                truncated=truncated,
            )
            self._writer.writerow(row)
            if "lat" in info:
                self.lats.append(float(info["lat"]))
            self._returns[i] = self._returns.get(i, 0.0) + reward
            self._lengths[i] = self._lengths.get(i, 0) + 1
            if done:
                self.episodes.append(
                    {
                        "step": float(self.num_timesteps),
                        "return": self._returns.pop(i),
                        "success": float(bool(info.get("is_success", False))),
                        "length": float(self._lengths.pop(i)),
                    }
                )
                self.episode += 1
        return True

    def _on_training_end(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TimingScalarsCallback(BaseCallback):
    """Timing beside SB3's own scalars (TensorBoard, when SB3 writes there): LAT and think
    time percentiles over the last ``window`` steps, the agents' late control ticks, and
    the clock offset, recorded every ``every`` steps under ``timing/``. SB3 logs the
    success rate itself (``rollout/success_rate``) from ``info["is_success"]``.

    Think time as ``core.think_time.think_time``: how long the previous action ran on
    past its observation while the learner chose the next.
    Test: ``test_training_helpers.py::test_timing_scalars_reach_sb3s_logger``."""

    def __init__(self, channels: list[Any], every: int = 100, window: int = 1000) -> None:
        super().__init__()
        self.channels = channels  # AgentChannel of each agent (late ticks)
        self.every = every
        self.lats: deque[float] = deque(maxlen=window)
        self.thinks: deque[float] = deque(maxlen=window)
        self._previous_duration: dict[int, float] = {}
        self._next = every

    def _on_training_start(self) -> None:
        self._next = (self.model.num_timesteps // self.every + 1) * self.every

    def _on_step(self) -> bool:
        infos = self.locals.get("infos", [])
        dones = self.locals.get("dones", [])
        for i, info in enumerate(infos):
            if "lat" not in info:
                continue
            lat = float(info["lat"])
            self.lats.append(lat)
            previous = self._previous_duration.get(i)
            if previous is not None:
                self.thinks.append(think_time(lat, previous))
            done = bool(dones[i]) if len(dones) > i else False
            if done:
                self._previous_duration.pop(i, None)  # the next LAT follows a reset
            else:
                self._previous_duration[i] = float(info.get("duration", 0.0))
            offset = info.get("clock_offset")
            if offset is not None:
                self.logger.record("timing/clock_offset_ms", 1e3 * float(offset))
        if self.num_timesteps >= self._next:
            self._next = (self.num_timesteps // self.every + 1) * self.every
            self._record()
        return True

    def _record(self) -> None:
        for name, values in (("lat", self.lats), ("think", self.thinks)):
            if values:
                p50, p99 = np.percentile(np.fromiter(values, float), [50, 99]) * 1e3
                self.logger.record(f"timing/{name}_p50_ms", float(p50))
                self.logger.record(f"timing/{name}_p99_ms", float(p99))
        ticks = sum(channel.control_ticks for channel in self.channels)
        if ticks:
            self.logger.record("timing/late_ticks", sum(channel.late_ticks for channel in self.channels))
            self.logger.record("timing/late_tick_percent", 100.0 * sum(c.late_ticks for c in self.channels) / ticks)


class FreezeGarbageCollector(BaseCallback):
    """Keep Python's full garbage collections short while training.

    When training starts, everything set up so far (torch, SB3, rclpy, the model: some
    300k objects) is moved out of the collector's sight (``gc.freeze``). A full
    collection then takes microseconds instead of ~160 ms (measured here), which would
    otherwise land in some step as think time, a LAT outlier, while the robot runs on.
    Objects made during training are collected as usual."""

    def _on_training_start(self) -> None:
        gc.collect()
        gc.freeze()

    def _on_training_end(self) -> None:
        gc.unfreeze()

    def _on_step(self) -> bool:
        return True


class TrainsWhileActing:
    """Mixin for an SB3 off-policy algorithm (SAC, TD3, ...): the gradient steps SB3 runs
    after each env step run during the next one, while the agent executes its action.

    SB3 runs them between an observation and the next action, as think time: on a real
    arm the previous action runs on meanwhile (a longer LAT), and in simulation the world
    waits for them. Here they run once the next command is out (``while_acting`` of
    ``DecoupledEnv`` or ``DecoupledVecEnv``, which ``act_while_training`` wires): the same
    updates on the same data, the policy acting one update behind. ``learn()`` runs the
    last ones before it returns; a model saved in between (a checkpoint, a stop) keeps
    those still to run, and runs them once loaded into this class. Use it through
    ``trains_while_acting(SAC)`` (test_training_helpers.py::
    test_gradient_steps_run_while_the_agent_acts, ::test_a_saved_model_keeps_the_gradient_steps_still_to_run)."""

    _deferred_gradient_steps = 0
    _deferred_batch_size = 0
    update_seconds = 0.0  # the time the gradient steps took, and how many ran (update_ms)
    updates_run = 0

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        self._deferred_gradient_steps += gradient_steps
        self._deferred_batch_size = batch_size

    def train_deferred(self) -> None:
        """Run the gradient steps learn() asked for since the last call (none: nothing)."""
        steps, self._deferred_gradient_steps = self._deferred_gradient_steps, 0
        if steps > 0:
            started = time.perf_counter()
            super().train(gradient_steps=steps, batch_size=self._deferred_batch_size)  # type: ignore[misc]
            self.policy.set_training_mode(False)  # type: ignore[attr-defined]  # (SB3 acts in eval mode)
            self.update_seconds += time.perf_counter() - started
            self.updates_run += steps

    @property
    def update_ms(self) -> float | None:
        """The mean wall time of one gradient step so far (None before the first): what
        a rate of updates per second of action must fit."""
        return 1e3 * self.update_seconds / self.updates_run if self.updates_run else None

    def learn(self, *args: Any, **kwargs: Any) -> Any:
        model = super().learn(*args, **kwargs)  # type: ignore[misc]
        self.train_deferred()
        return model


def begin_episode_again(model: Any) -> None:
    """Make ``model.learn()`` start with a reset of its env, though it goes on counting
    (``reset_num_timesteps=False``, a resumed run): SB3's ``learn()`` resets the env when
    the model holds no last observation (``BaseAlgorithm._setup_learn``,
    stable-baselines3 2.9.2, the version requirements/python.txt pins). The one place
    SB3's internals are touched
    (test_training_helpers.py::test_a_model_told_to_begin_again_resets_its_env_in_learn).
    A relabelling replay buffer forgets the episode under way likewise (rl/relabel.py)."""
    model._last_obs = None
    forget = getattr(getattr(model, "replay_buffer", None), "forget_unfinished_episodes", None)
    if forget is not None:
        forget()


def trains_while_acting(algorithm: type[Any]) -> type[Any]:
    """``algorithm`` (an SB3 off-policy class) whose gradient steps run while the agent acts
    (``TrainsWhileActing``); its ``load()`` loads a model saved by either."""
    return type(algorithm.__name__, (TrainsWhileActing, algorithm), {"__module__": __name__})


def act_while_training(env: Any, model: Any) -> None:
    """Run ``model``'s deferred gradient steps (``TrainsWhileActing``) during each step of
    ``env`` (a ``DecoupledVecEnv`` or a, possibly wrapped, ``DecoupledEnv``)."""
    target = env.unwrapped  # (Gymnasium's and SB3's wrappers both have it)
    if not hasattr(target, "while_acting"):
        raise TypeError(
            f"{type(target).__name__} is neither a DecoupledEnv nor a DecoupledVecEnv: it cannot run work while acting"
        )
    target.while_acting = model.train_deferred


class ProgressCallback(BaseCallback):
    """A progress line every ``every`` steps: rate, recent returns and successes, LAT."""

    def __init__(self, total: int, log: StepLogCallback, every: int = 1000, out: IO[str] = sys.stdout) -> None:
        super().__init__()
        self.total = total
        self.log = log
        self.every = every
        self.out = out
        self._started = 0.0
        self._first = 0
        self._next = every

    def _on_training_start(self) -> None:
        self._started = time.monotonic()
        self._first = self.model.num_timesteps  # (a resumed run starts there)
        self._next = (self._first // self.every + 1) * self.every

    def _on_step(self) -> bool:
        # With N envs the count moves N at a time: report on crossing each multiple.
        if self.num_timesteps < self._next and self.num_timesteps < self.total:
            return True
        self._next = (self.num_timesteps // self.every + 1) * self.every
        elapsed = time.monotonic() - self._started
        rate = (self.num_timesteps - self._first) / max(elapsed, 1e-9)
        recent = self.log.episodes[-20:]
        returns = np.mean([e["return"] for e in recent]) if recent else math.nan
        success = 100 * np.mean([e["success"] for e in recent]) if recent else math.nan
        lats = np.array(self.log.lats[-self.every :]) * 1e3
        lat = f"LAT p50 {np.median(lats):.1f} ms p99 {np.percentile(lats, 99):.1f} ms" if lats.size else ""
        eta = (self.total - self.num_timesteps) / max(rate, 1e-9)
        update_ms = getattr(self.model, "update_ms", None)
        per_step = getattr(self.model, "gradient_steps", "?")  # (an off-policy learner's)
        updates = "" if update_ms is None else f" | {per_step} updates a step, {update_ms:.1f} ms each"
        print(
            f"step {self.num_timesteps:>7}/{self.total} | {rate:5.1f} steps/s | last 20 episodes: return "
            f"{returns:7.2f}, success {success:5.1f}% | {lat}{updates} | {elapsed:5.0f} s, ~{eta:4.0f} s left",
            file=self.out,
            flush=True,
        )
        return True
