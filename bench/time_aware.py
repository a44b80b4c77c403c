"""Time as an input, measured: LunarLander PPO in-process against decoupled under timing
models, and learners blind to time against learners that see or choose it.

    ./ws bench time_aware [--timesteps 100000] [--seeds 0 1 2] [--configs none jitter_aware ...]
    ./ws bench time_aware --add-seeds --seeds 3 4 5 --configs jitter_free jitter_unaware jitter_aware
    ./ws bench time_aware --add-seeds --jobs 2 --seeds 6 7 --configs jitter_free jitter_unaware jitter_aware
    ./ws bench time_aware --twin --jobs 2 --seeds 0 1 2 ... [--timesteps 400000]
    ./ws bench time_aware --twin --jobs 2 --seeds 0 1 --timesteps 1000000 --checkpoints 100000 400000

Configurations, each trained and evaluated once per seed (PPO as bench/lunarlander.py
runs it, one torch thread):

    inprocess                 Gymnasium's LunarLander repeating each action for 4 frames
    none                      decoupled under ``none``: the same MDP (``same_mdp`` shows it)
    jitter_free               decoupled under a fixed think time, JITTER's median (2 frames):
                              the same mean decision span as JITTER, without its spread
    jitter_unaware            decoupled under JITTER, the lander's observation alone
    jitter_aware              ... with the timing features (``TimingInObservation``)
    jitter_variable_duration  ... and the policy choosing 1-8 frames per step as well
    jitter_then_action        ... the timing features, and the policy choosing the engine
                              that fires while it thinks (``then_action``) as well
    jitter_unaware_then_action  ... that choice without the timing features

The agent is the LunarLander node, self-clocked at 1 kHz (a frame per millisecond of its
simulated time), so JITTER's think times are frames the last action keeps firing: a
median of 2, a 99th percentile of 8, against 4 frames per step. Each decoupled
configuration is evaluated under its own model. LunarLander's reward is already a sum
over frames, so a policy that chooses its durations needs no time weighting here
(``TimeWeightedReward`` is for rewards given per step).

Writes bench/results/time_aware.json: per configuration the mean and spread over seeds of
the evaluation return, each seed's, and the training wall time. Targets: ``none``
within 3x the in-process wall time; the time-aware learner recovers at least half of
the return jitter costs the unaware one (``recovered_fraction`` >= 0.5). What jitter
costs is measured against ``jitter_free``, not ``none``: a think time also lengthens
every step (4 frames become about 6), so at the same step budget a learner under any
think time sees half as many frames again, which ``none`` does not.

``--twin`` trains the jitter configurations on ``LunarLanderTwin`` instead: the decoupled
lander and its agent in one process, the same MDP to the bit (its returns are the
decoupled runs', seed for seed: ``reproduces_decoupled``), four times as fast, so that
enough seeds, or long enough runs, can tell what timing does from how far PPO's seeds
spread. It adds ``jitter_oracle``: the timing features and the think time being spent on
this very decision, which the twin knows and no learner can (``RevealThinkTime``): what
the most timing in the observation could recover. Its figures go to ``twin``, by run
length, with a bootstrap over seeds of the fraction each of ``jitter_aware``
(``recovered``), ``jitter_variable_duration``, ``jitter_then_action``,
``jitter_unaware_then_action`` and ``jitter_oracle`` recovers;
``--checkpoints`` adds, under the run length's ``checkpoints``, the same seeds evaluated
part way.

``--jobs N`` runs N seeds at once, each against an agent of its own, for the jitter
configurations only: on simulated time their returns do not depend on the machine's load
(test_timing_models.py), but their wall times then do, and are recorded as measured
beside other runs (``concurrent_runs``). ``inprocess`` and ``none``, whose wall times are a
target, always run alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, write_result

RESULT = Path(__file__).resolve().parent / "results" / "time_aware.json"
RUNS_LOG = Path("log/bench/time_aware_runs.jsonl")
CONTROL_RATE = 1000.0
FRAMES_PER_STEP = 4
JITTER = "lognormal:0.002,0.008"
JITTER_FREE = "fixed:0.002"  # JITTER's median, every time
DURATION_RANGE = (0.001, 0.008)  # 1 to 8 frames
DURATION_CHOICES = 8
JITTER_CONFIGS = (
    "jitter_free",
    "jitter_unaware",
    "jitter_aware",
    "jitter_variable_duration",
    "jitter_then_action",
    "jitter_unaware_then_action",
)
CONCURRENT_OK = JITTER_CONFIGS
CONFIGS = ("inprocess", "none", *JITTER_CONFIGS)
TWIN_CONFIGS = (*JITTER_CONFIGS, "jitter_oracle")
TIMED_CONFIGS = ("jitter_aware", "jitter_variable_duration", "jitter_then_action", "jitter_oracle")
TWIN_RUNS_LOG = Path("log/bench/time_aware_twin_runs.jsonl")
BOOTSTRAP_DRAWS = 10_000
EVAL_SEED = 10_000  # evaluation episodes are seeded from here
Task = tuple[str, int, int, int, tuple[int, ...]]  # config, seed, timesteps, eval episodes, checkpoints
MODELS = {
    "none": "none",
    "jitter_free": JITTER_FREE,
    "jitter_unaware": JITTER,
    "jitter_aware": JITTER,
    "jitter_variable_duration": JITTER,
    "jitter_then_action": JITTER,
    "jitter_unaware_then_action": JITTER,
    "jitter_oracle": JITTER,
}


def train_and_evaluate(
    env: Any,
    seed: int,
    timesteps: int,
    eval_episodes: int,
    label: str = "",
    checkpoints: Sequence[int] = (),
    make_env: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Train PPO for ``timesteps`` and evaluate it; with ``checkpoints`` (and ``make_env``
    for their evaluations), also the model a run of each of those lengths would have
    ended with (``EvaluateAtCheckpoints``), under ``checkpoints``."""
    from stable_baselines3.common.callbacks import CallbackList

    from spin_decoupler_ros.examples.lunar_lander.train import evaluate, make_ppo
    from spin_decoupler_ros.rl.training import FreezeGarbageCollector

    model = make_ppo(env, seed=seed)
    at_checkpoints = EvaluateAtCheckpoints(checkpoints, make_env, eval_episodes) if checkpoints else None
    callbacks = [FreezeGarbageCollector(), *([at_checkpoints] if at_checkpoints else [])]
    started = time.perf_counter()
    model.learn(total_timesteps=timesteps, callback=CallbackList(callbacks))
    wall_s = time.perf_counter() - started - (at_checkpoints.evaluating_s if at_checkpoints else 0.0)
    mean_return, _ = evaluate(model, env, eval_episodes, seed=EVAL_SEED)
    print(f"    {label}seed {seed}: mean return {mean_return:.1f}, {wall_s:.0f} s", flush=True)
    outcome: dict[str, Any] = {"mean_return": mean_return, "wall_s": wall_s}
    if at_checkpoints:
        outcome["checkpoints"] = at_checkpoints.outcomes
    return outcome


class EvaluateAtCheckpoints(BaseCallback):
    """Evaluates, on an env of its own, the model a run of each checkpoint's length would
    have ended with: at the start of the first rollout past it, after the training on the
    rollout that crossed it, where ``learn(checkpoint)`` would have stopped (SB3 collects
    whole rollouts). PPO's learning rate and clip range are constants here, so the model is
    that run's, and the training env and the learner's random state are left alone: the
    figures are those runs' (a 4096-step run's at 2048 steps equal a 2048-step run's, to
    the digit, on one machine)."""

    def __init__(self, checkpoints: Sequence[int], make_env: Callable[[], Any] | None, eval_episodes: int) -> None:
        super().__init__()
        if make_env is None:
            raise ValueError("checkpoints need make_env: their evaluations must not touch the training env")
        self.pending = sorted(checkpoints)
        self.make_env = make_env
        self.eval_episodes = eval_episodes
        self.outcomes: dict[str, dict[str, float]] = {}
        self.evaluating_s = 0.0
        self._started = time.perf_counter()

    def _on_training_start(self) -> None:
        self._started = time.perf_counter()

    def _on_rollout_start(self) -> None:
        from spin_decoupler_ros.examples.lunar_lander.train import evaluate

        while self.pending and self.num_timesteps >= self.pending[0]:
            checkpoint = self.pending.pop(0)
            began = time.perf_counter()
            env = self.make_env()
            try:
                mean_return, _ = evaluate(self.model, env, self.eval_episodes, seed=EVAL_SEED)
            finally:
                env.close()
            wall_s = began - self._started - self.evaluating_s
            self.evaluating_s += time.perf_counter() - began
            self.outcomes[str(checkpoint)] = {"mean_return": mean_return, "wall_s": wall_s}

    def _on_step(self) -> bool:
        return True


def decoupled_env(config: str, namespace: str) -> Any:
    from spin_decoupler_ros.examples.lunar_lander.task import LunarLanderEnv
    from spin_decoupler_ros.rl.time_aware import TimingInObservation

    env = LunarLanderEnv(namespace, **choosing(config), client_options={"connect_timeout": 30})
    return TimingInObservation(env) if config in TIMED_CONFIGS else env


def choosing(config: str) -> dict[str, Any]:
    """What a configuration's policy chooses beside its engine (``LunarLanderEnv``'s and
    ``LunarLanderTwin``'s arguments)."""
    if config == "jitter_variable_duration":
        return {"duration_range": DURATION_RANGE, "duration_choices": DURATION_CHOICES}
    return {"then_action": True} if config in ("jitter_then_action", "jitter_unaware_then_action") else {}


class RevealThinkTime(gym.ObservationWrapper):  # type: ignore[type-arg]
    """Appends the think time ``LunarLanderTwin`` has drawn for the decision being taken,
    in steps of FRAMES_PER_STEP frames: what no learner can know when it decides, so a
    bound on what timing in the observation can give."""

    def __init__(self, env: gym.Env) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        box = env.observation_space
        assert isinstance(box, spaces.Box)
        low = np.concatenate([box.low, [0.0]]).astype(box.dtype)
        high = np.concatenate([box.high, [np.inf]]).astype(box.dtype)
        self.observation_space = spaces.Box(low, high, dtype=box.dtype)  # type: ignore[arg-type]
        self._step_s = FRAMES_PER_STEP / CONTROL_RATE

    def observation(self, observation: Any) -> Any:
        think = self.env.unwrapped.upcoming_think_s / self._step_s  # type: ignore[attr-defined]
        return np.concatenate([observation, [think]]).astype(self.observation_space.dtype)


def twin_env(config: str) -> Any:
    """A jitter configuration's env on ``LunarLanderTwin`` (``--twin``)."""
    from spin_decoupler_ros.examples.lunar_lander.task import LunarLanderTwin
    from spin_decoupler_ros.rl.time_aware import TimingInObservation

    env: Any = LunarLanderTwin(FRAMES_PER_STEP, MODELS[config], CONTROL_RATE, **choosing(config))
    if config in TIMED_CONFIGS:
        env = TimingInObservation(env)
    return RevealThinkTime(env) if config == "jitter_oracle" else env


def run_twin_seed(task: Task) -> dict[str, Any]:
    """One seed of a configuration on the twin (a ``--jobs`` worker)."""
    import torch

    config, seed, timesteps, eval_episodes, checkpoints = task
    torch.set_num_threads(1)
    return train_and_evaluate(
        twin_env(config),
        seed,
        timesteps,
        eval_episodes,
        label=f"twin {config} ",
        checkpoints=checkpoints,
        make_env=lambda: twin_env(config),
    )


def start_agent(model: str, namespace: str, log_dir: Path) -> Any:
    from spin_decoupler_ros.tools.processes import NodeProcess, ros_args

    params = {"control_rate": CONTROL_RATE, "rl_timestep": FRAMES_PER_STEP / CONTROL_RATE, "timing_model": model}
    agent = NodeProcess(
        "spin_decoupler_ros.examples.lunar_lander.agent",
        ros_args(namespace=namespace, params=params),
        log_path=log_dir / f"time_aware_agent{namespace.replace('/', '_')}.log",
    )
    agent.start()
    if not agent.wait_for_log("agent ready", 30):
        agent.stop()
        raise SystemExit(f"agent did not start:\n{agent.log_text()}")
    return agent


def same_mdp(steps: int = 400) -> dict[str, Any]:
    """One episode in-process and one decoupled under ``none``, same seed, same actions:
    the largest difference of observation and reward, and both lengths."""
    from gymnasium.utils import seeding

    from spin_decoupler_ros.examples.lunar_lander.task import FrameSkipLunarLander

    actions = np.random.default_rng(0).integers(0, 4, size=steps)
    # A decoupled env seeds its agent with a draw from its own seeded generator: the
    # in-process lander gets that seed.
    agent_seed = int(seeding.np_random(123)[0].integers(0, 2**31 - 1))

    def play(env: Any, seed: int) -> tuple[list[np.ndarray], list[float]]:
        observation, _ = env.reset(seed=seed)
        observations, rewards = [np.asarray(observation)], []
        for action in actions:
            observation, reward, terminated, truncated, _ = env.step(int(action))
            observations.append(np.asarray(observation))
            rewards.append(float(reward))
            if terminated or truncated:
                break
        return observations, rewards

    inprocess = play(FrameSkipLunarLander(FRAMES_PER_STEP), agent_seed)
    agent = start_agent("none", "/lander_mdp", Path("log/bench"))
    with agent:
        env = decoupled_env("none", "/lander_mdp")
        try:
            decoupled = play(env, 123)
        finally:
            env.close()
    length = min(len(inprocess[1]), len(decoupled[1]))
    pairs = zip(inprocess[0][: length + 1], decoupled[0][: length + 1], strict=True)
    observation_gap = max(float(np.max(np.abs(a - b))) for a, b in pairs)
    reward_gap = max(abs(a - b) for a, b in zip(inprocess[1][:length], decoupled[1][:length], strict=True))
    return {
        "steps_inprocess": len(inprocess[1]),
        "steps_decoupled": len(decoupled[1]),
        "max_observation_difference": observation_gap,
        "max_reward_difference": reward_gap,
    }


def train_on_agent(
    config: str, namespace: str, seed: int, timesteps: int, eval_episodes: int, label: str = ""
) -> dict[str, float]:
    """One seed of a decoupled configuration, against the agent running in ``namespace``."""
    env = decoupled_env(config, namespace)
    try:
        return train_and_evaluate(env, seed, timesteps, eval_episodes, label=label)
    finally:
        env.close()


def run_seed_alone(task: Task) -> dict[str, Any]:
    """One seed (``config, seed, timesteps, eval_episodes``; no checkpoints) of a decoupled configuration
    against an agent of its own (a ``--jobs`` worker: a process of its own, DDS set up by
    its parent)."""
    import torch

    config, seed, timesteps, eval_episodes, _ = task
    torch.set_num_threads(1)
    namespace = f"/lander_{config}_{seed}"
    with start_agent(MODELS[config], namespace, Path("log/bench")):
        return train_on_agent(config, namespace, seed, timesteps, eval_episodes, label=f"{config} ")


def run_configs_concurrently(
    seeds_by_config: dict[str, list[int]],
    args: argparse.Namespace,
    worker: Callable[[Task], dict[str, Any]] | None = None,
    runs_log: Path = RUNS_LOG,
) -> dict[str, list[Any]]:
    """Each configuration's runs of its seeds, ``args.jobs`` at a time, seed by seed (every
    configuration of a seed before the next seed's), by ``worker`` (``run_seed_alone``
    unless given). Each run is also appended to ``runs_log`` as it ends, so an
    interrupted batch loses none."""
    import multiprocessing

    worker = worker or run_seed_alone

    order = list(dict.fromkeys(seed for seeds in seeds_by_config.values() for seed in seeds))
    tasks = [(config, seed) for seed in order for config, seeds in seeds_by_config.items() if seed in seeds]
    print(f"{len(tasks)} runs, {args.jobs} at a time", flush=True)
    runs: dict[str, list[Any]] = {config: [] for config in seeds_by_config}
    with (
        multiprocessing.get_context("spawn").Pool(args.jobs, maxtasksperchild=1) as pool,
        runs_log.open("a") as log,
    ):
        checkpoints = tuple(args.checkpoints)
        work = [(config, seed, args.timesteps, args.eval_episodes, checkpoints) for config, seed in tasks]
        for (config, seed), outcome in zip(tasks, pool.imap(worker, work, chunksize=1), strict=True):
            runs[config].append(outcome)
            log.write(json.dumps({"config": config, "seed": seed, **outcome}) + "\n")
            log.flush()
    return runs


def train_in_process(seed: int, args: argparse.Namespace, label: str = "") -> dict[str, float]:
    from spin_decoupler_ros.examples.lunar_lander.task import FrameSkipLunarLander

    env = FrameSkipLunarLander(FRAMES_PER_STEP)
    return train_and_evaluate(env, seed, args.timesteps, args.eval_episodes, label=label)


def run_wall_time_pairs(seeds: list[int], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``inprocess`` and ``none``, alternating seed by seed, so that each ratio of their wall
    times is taken between runs a few minutes apart: this machine's speed drifts by more
    than the margin the target leaves within the half hour one configuration's seeds take
    (docs/benchmarks.md, "time_aware")."""
    print("inprocess and none, alternating:", flush=True)
    runs: dict[str, list[dict[str, float]]] = {"inprocess": [], "none": []}
    namespace = "/lander_none"
    with start_agent(MODELS["none"], namespace, Path("log/bench")):
        for seed in seeds:
            runs["inprocess"].append(train_in_process(seed, args, label="inprocess "))
            runs["none"].append(train_on_agent("none", namespace, seed, args.timesteps, args.eval_episodes, "none "))
    summaries = {config: summarise_runs(config, seeds, config_runs) for config, config_runs in runs.items()}
    return {config: {**summary, "alternated": True} for config, summary in summaries.items()}


def run_config(config: str, seeds: list[int], args: argparse.Namespace) -> dict[str, Any]:
    print(f"{config}:", flush=True)
    runs = []
    if config == "inprocess":
        runs += [train_in_process(seed, args) for seed in seeds]
    else:
        namespace = f"/lander_{config}"
        with start_agent(MODELS[config], namespace, Path("log/bench")):
            runs += [train_on_agent(config, namespace, seed, args.timesteps, args.eval_episodes) for seed in seeds]
    return summarise_runs(config, seeds, runs)


def summarise_runs(
    config: str, seeds: list[int], runs: list[dict[str, float]], concurrent_runs: int = 1
) -> dict[str, Any]:
    summary = summarise(config, seeds, [run["mean_return"] for run in runs], [run["wall_s"] for run in runs])
    return {**summary, "concurrent_runs": concurrent_runs} if concurrent_runs > 1 else summary


def summarise(config: str, seeds: list[int], returns: list[float], walls: list[float]) -> dict[str, Any]:
    """A configuration's figures over its seeds: mean and spread of the returns, mean wall time."""
    return {
        "mean_return": round(float(np.mean(returns)), 2),
        "std_return": round(float(np.std(returns)), 2),
        "returns": [round(value, 2) for value in returns],
        "seeds": list(seeds),
        "wall_s": round(float(np.mean(walls)), 1),
        "wall_s_runs": [round(float(wall), 1) for wall in walls],
        "model": MODELS.get(config, "in-process"),
    }


def wall_times(figures: dict[str, Any]) -> list[float]:
    """Each run's wall time (figures recorded before runs had their own: the mean, for each)."""
    return list(figures.get("wall_s_runs", [figures["wall_s"]] * len(figures["seeds"])))


def merge_seeds(config: str, earlier: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """``earlier``'s figures with ``added``'s seeds (run with the same setup) joined to them;
    the wall time is then the mean over runs measured alone and beside others alike."""
    seeds_run = list(earlier["seeds"])
    walls = [*wall_times(earlier), *wall_times(added)]
    merged = summarise(config, seeds_run + list(added["seeds"]), [*earlier["returns"], *added["returns"]], walls)
    if earlier.get("alternated") and added.get("alternated"):
        merged["alternated"] = True
    concurrent = max(earlier.get("concurrent_runs", 1), added.get("concurrent_runs", 1))
    return {**merged, "concurrent_runs": concurrent} if concurrent > 1 else merged


def returns_by_seed(figures: dict[str, Any]) -> dict[int, float]:
    return dict(zip(figures["seeds"], figures["returns"], strict=True))


def recovered_fractions(free: np.ndarray, unaware: np.ndarray, aware: np.ndarray) -> np.ndarray:
    """(aware - unaware) / (free - unaware) on the means along the last axis; NaN where
    jitter cost nothing."""
    lost = free.mean(axis=-1) - unaware.mean(axis=-1)
    gained = aware.mean(axis=-1) - unaware.mean(axis=-1)
    return np.where(lost > 0, gained / np.where(lost > 0, lost, 1.0), np.nan)


def fraction_figures(free: np.ndarray, unaware: np.ndarray, other: np.ndarray) -> dict[str, Any]:
    """How much of jitter's cost (``free`` - ``unaware``, per seed) ``other`` recovers: on
    the means, with a 90% bootstrap over the seeds, and the paired gain over ``unaware``."""
    draws = np.random.default_rng(0).integers(0, len(free), size=(BOOTSTRAP_DRAWS, len(free)))
    resampled = recovered_fractions(free[draws], unaware[draws], other[draws])
    gains = other - unaware
    return {
        "seeds": len(free),
        "lost_to_jitter": round(float(free.mean() - unaware.mean()), 2),
        "recovered_fraction": round(float(recovered_fractions(free, unaware, other)), 3),
        "bootstrap_90": [round(float(value), 3) for value in np.nanpercentile(resampled, [5, 95])],
        "paired_gain": round(float(gains.mean()), 2),
        "paired_gain_standard_error": round(float(gains.std(ddof=1) / np.sqrt(len(free))), 2),
        "better_on": int(np.sum(gains > 0)),
    }


def twin_statistics(twin: dict[str, Any], decoupled: dict[str, Any], same_setup: bool) -> dict[str, Any]:
    """What the seeds say: the fraction of jitter's cost the timing features recover
    (``recovered``), the policy choosing its durations as well does
    (``variable_duration``), the policy choosing what fires while it thinks does, with
    the features (``then_action``) and without (``unaware_then_action``), and the
    oracle does (``oracle``, with the features' fraction on the same seeds), each over
    the seeds its configurations share. With ``same_setup`` (the decoupled runs' length
    and evaluation) their seeds count too, and ``reproduces_decoupled`` says how far the
    twin's returns are from theirs on the seeds both ran."""
    returns: dict[str, dict[int, float]] = {}
    for config in TWIN_CONFIGS:
        theirs = returns_by_seed(decoupled[config]) if same_setup and "returns" in decoupled.get(config, {}) else {}
        returns[config] = {**theirs, **(returns_by_seed(twin[config]) if config in twin else {})}

    def on_shared_seeds(*names: str) -> list[np.ndarray]:
        seeds = sorted(set.intersection(*(set(returns[name]) for name in names)))
        return [np.array([returns[name][seed] for seed in seeds]) for name in names]

    figures: dict[str, Any] = {}
    free, unaware, aware = on_shared_seeds("jitter_free", "jitter_unaware", "jitter_aware")
    if len(free) >= 2:
        figures["recovered"] = fraction_figures(free, unaware, aware)
    for config, name in (
        ("jitter_variable_duration", "variable_duration"),
        ("jitter_then_action", "then_action"),
        ("jitter_unaware_then_action", "unaware_then_action"),
    ):
        free, unaware, other = on_shared_seeds("jitter_free", "jitter_unaware", config)
        if len(free) >= 2:
            figures[name] = fraction_figures(free, unaware, other)
    free, unaware, aware, oracle = on_shared_seeds("jitter_free", "jitter_unaware", "jitter_aware", "jitter_oracle")
    if len(free) >= 2:
        aware_there = fraction_figures(free, unaware, aware)
        figures["oracle"] = {
            **fraction_figures(free, unaware, oracle),
            "aware_recovered_fraction": aware_there["recovered_fraction"],
        }
    differences = []
    for config in TWIN_CONFIGS if same_setup else ():
        if config in twin and "returns" in decoupled.get(config, {}):
            theirs = returns_by_seed(decoupled[config])
            differences += [
                abs(ours - theirs[seed]) for seed, ours in returns_by_seed(twin[config]).items() if seed in theirs
            ]
    if differences:
        figures["reproduces_decoupled"] = {
            "runs_compared": len(differences),
            "max_return_difference": round(float(max(differences)), 2),
        }
    return figures


def common_setup(args: argparse.Namespace) -> dict[str, Any]:
    """What a run's figures depend on, beside its configuration and seed."""
    return {
        "timesteps": args.timesteps,
        "eval_episodes": args.eval_episodes,
        "frames_per_step": FRAMES_PER_STEP,
        "control_rate_hz": CONTROL_RATE,
        "jitter": JITTER,
        "torch_threads": 1,
    }


def run_twin(args: argparse.Namespace, lander: dict[str, Any]) -> dict[str, Any]:
    """``--twin``: the jitter configurations' seeds on the twin, added to the figures kept
    for the same run length and setup; ``lander``'s ``twin`` with them. ``--checkpoints``
    go with the run length's figures (``checkpoints``, by length): the same seeds'
    returns part way, so that how the fraction grows with learning is read on one set of
    seeds (and on one machine: torch's kernels round differently on other CPUs, so a
    seed's return is only reproduced on the machine that ran it)."""
    twins = dict(lander.get("twin", {}))
    key = str(args.timesteps)
    setup = {**common_setup(args), "jitter_free": JITTER_FREE}
    if args.checkpoints:
        setup["checkpoints"] = sorted(set(args.checkpoints))
    kept = twins.get(key, {}) if twins.get(key, {}).get("setup") == setup else {}
    to_run = {
        config: [seed for seed in args.seeds if seed not in kept.get(config, {}).get("seeds", [])]
        for config in args.configs
    }
    to_run = {config: seeds for config, seeds in to_run.items() if seeds}
    runs = run_configs_concurrently(to_run, args, run_twin_seed, TWIN_RUNS_LOG)
    decoupled_setup = lander.get("setup", {})
    same_setup = all(decoupled_setup.get(name) == setup[name] for name in ("timesteps", "eval_episodes", "jitter"))
    figures = add_runs({k: v for k, v in kept.items() if k in TWIN_CONFIGS}, to_run, runs, args.jobs)
    entry = {**figures, **twin_statistics(figures, lander, same_setup), "setup": setup}
    if args.checkpoints:
        entry["checkpoints"] = {}
        for checkpoint in setup["checkpoints"]:
            part_way = {
                config: [run["checkpoints"][str(checkpoint)] for run in config_runs]
                for config, config_runs in runs.items()
            }
            earlier = kept.get("checkpoints", {}).get(str(checkpoint), {})
            at = add_runs({k: v for k, v in earlier.items() if k in TWIN_CONFIGS}, to_run, part_way, args.jobs)
            entry["checkpoints"][str(checkpoint)] = {**at, **twin_statistics(at, lander, False)}
    twins[key] = entry
    return twins


def add_runs(
    figures: dict[str, Any], seeds: dict[str, list[int]], runs: dict[str, list[Any]], concurrent_runs: int
) -> dict[str, Any]:
    """``figures`` (by configuration) with ``runs`` of ``seeds`` joined to them."""
    figures = dict(figures)
    for config, config_runs in runs.items():
        added = summarise_runs(config, seeds[config], config_runs, concurrent_runs)
        figures[config] = merge_seeds(config, figures[config], added) if config in figures else added
    return figures


def main_twin(args: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(1)
    Path("log/bench").mkdir(parents=True, exist_ok=True)
    earlier = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    recorded = earlier.get("lunarlander", {})
    twin = run_twin(args, recorded)
    figures = twin[str(args.timesteps)]
    summary = ("recovered", "variable_duration", "then_action", "unaware_then_action", "oracle", "reproduces_decoupled")
    print(json.dumps({key: figures[key] for key in summary if key in figures}))
    # Only ``twin`` is this run's: whatever else was written while it ran (hours) is kept.
    latest = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    latest.pop("machine", None)
    write_result("time_aware", {**latest, "lunarlander": {**latest.get("lunarlander", {}), "twin": twin}})
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=100_000, help="PPO steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--configs", nargs="+", choices=(*CONFIGS, "jitter_oracle"))
    parser.add_argument(
        "--twin", action="store_true", help="train the jitter configurations on LunarLanderTwin (see above)"
    )
    parser.add_argument(
        "--checkpoints",
        type=int,
        nargs="+",
        default=[],
        help="with --twin: also evaluate each run at these shorter lengths (as runs that long would end)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help=f"seeds run at once, each against an agent of its own (only for {', '.join(CONCURRENT_OK)})",
    )
    parser.add_argument(
        "--add-seeds",
        action="store_true",
        help="run --seeds for --configs on top of the seeds those configurations already have (same setup)",
    )
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.configs is None:
        args.configs = list(TWIN_CONFIGS if args.twin else CONFIGS)
    allowed = TWIN_CONFIGS if args.twin else CONFIGS
    refused = [config for config in args.configs if config not in allowed]
    if refused:
        which = "--twin runs" if args.twin else "without --twin, only"
        parser.error(f"--configs {' '.join(refused)}: {which} {', '.join(allowed)}")
    if args.checkpoints and not args.twin:
        parser.error("--checkpoints: only with --twin")
    wrong = [checkpoint for checkpoint in args.checkpoints if not 0 < checkpoint < args.timesteps]
    if wrong:
        parser.error(f"--checkpoints {' '.join(map(str, wrong))}: each must lie between 0 and --timesteps")
    if args.twin:
        return main_twin(args)
    alone_only = [config for config in args.configs if config not in CONCURRENT_OK]
    if args.jobs > 1 and alone_only:
        parser.error(f"--jobs: {', '.join(alone_only)} must run alone (their wall time is a target)")
    isolate_dds()
    import torch

    torch.set_num_threads(1)
    Path("log/bench").mkdir(parents=True, exist_ok=True)
    setup = {**common_setup(args), "duration_range_s": list(DURATION_RANGE), "duration_choices": DURATION_CHOICES}
    # A run of some configurations keeps the others' figures when they were measured the
    # same way (the same setup and seeds), and bench/main_job.py's Panda part.
    earlier = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    kept = earlier.get("lunarlander", {})
    if args.add_seeds:  # (refused before anything runs)
        if kept.get("setup") != setup:
            parser.error("--add-seeds: the recorded figures were measured with another setup")
        missing = [config for config in args.configs if config not in kept]
        if missing:
            parser.error(f"--add-seeds: {', '.join(missing)} have no figures to add seeds to")
    lander: dict[str, Any] = {"seeds": kept["seeds"] if args.add_seeds else args.seeds, "same_mdp": same_mdp()}
    if "twin" in kept:  # (--twin's figures: kept whatever this run measures)
        lander["twin"] = kept["twin"]
    if kept.get("setup") == setup and kept.get("seeds") == lander["seeds"]:
        for config in CONFIGS:
            if config in kept:
                lander[config] = {"seeds": kept["seeds"], **kept[config]}
    print(f"same MDP: {lander['same_mdp']}", flush=True)
    measured: dict[str, dict[str, Any]] = {}
    new_seeds = {
        config: [seed for seed in args.seeds if not args.add_seeds or seed not in lander[config]["seeds"]]
        for config in args.configs
    }
    if args.jobs > 1:
        to_run = {config: seeds for config, seeds in new_seeds.items() if seeds}
        for config, runs in run_configs_concurrently(to_run, args).items():
            measured[config] = summarise_runs(config, to_run[config], runs, args.jobs)
    else:
        pairs = {"inprocess", "none"} <= set(args.configs) and new_seeds["inprocess"] == new_seeds["none"] != []
        if pairs:
            measured.update(run_wall_time_pairs(new_seeds["none"], args))
        for config in args.configs:
            if new_seeds[config] and config not in measured:
                measured[config] = run_config(config, new_seeds[config], args)
    for config, figures in measured.items():
        lander[config] = merge_seeds(config, lander[config], figures) if args.add_seeds else figures
    if {"inprocess", "none"} <= set(lander):
        lander["none_wall_ratio"] = round(lander["none"]["wall_s"] / lander["inprocess"]["wall_s"], 2)
        if lander["none"].get("alternated") and lander["inprocess"].get("alternated"):
            walls = zip(lander["none"]["wall_s_runs"], lander["inprocess"]["wall_s_runs"], strict=True)
            lander["none_wall_ratio_by_seed"] = [round(none / inprocess, 2) for none, inprocess in walls]
    if {"jitter_free", "jitter_unaware", "jitter_aware"} <= set(lander):
        lost = lander["jitter_free"]["mean_return"] - lander["jitter_unaware"]["mean_return"]
        regained = lander["jitter_aware"]["mean_return"] - lander["jitter_unaware"]["mean_return"]
        lander["lost_to_jitter"] = round(lost, 2)
        lander["recovered_fraction"] = round(regained / lost, 3) if lost > 0 else None
    lander["setup"] = setup
    lander["targets"] = "none_wall_ratio <= 3, recovered_fraction >= 0.5"
    print({key: value for key, value in lander.items() if key != "setup"}, flush=True)
    earlier.pop("machine", None)
    write_result("time_aware", {**earlier, "lunarlander": lander})
    return 0


if __name__ == "__main__":
    sys.exit(main())
