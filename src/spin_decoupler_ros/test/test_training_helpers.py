"""SB3 helpers on the RL side that need no agent."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control.pendulum import PendulumEnv
from stable_baselines3 import SAC, TD3
from stable_baselines3.common.callbacks import BaseCallback

from spin_decoupler_ros.rl.stopping import StopAtSuccess, acts_as_evaluated
from spin_decoupler_ros.rl.training import (
    FreezeGarbageCollector,
    StepLogCallback,
    TimingScalarsCallback,
    act_while_training,
    begin_episode_again,
    trains_while_acting,
)


def test_full_collections_stay_short_while_training_and_the_freeze_ends_with_it() -> None:
    """Training's set-up (torch, SB3) is frozen out of the collector while it trains, so a
    full collection, which otherwise walks all of it, never stalls a step."""
    seen: list[tuple[int, float]] = []

    class Probe(BaseCallback):
        def _on_step(self) -> bool:
            started = time.perf_counter()
            gc.collect()
            duration = time.perf_counter() - started
            seen.append((gc.get_freeze_count(), duration))  # (counting them walks them all)
            return True

    model = SAC("MlpPolicy", gym.make("Pendulum-v1"), learning_starts=10, policy_kwargs={"net_arch": [8]})
    unfrozen_started = time.perf_counter()
    gc.collect()
    unfrozen = time.perf_counter() - unfrozen_started
    model.learn(total_timesteps=20, callback=[FreezeGarbageCollector(), Probe()])
    assert all(frozen > 10_000 for frozen, _ in seen)
    assert max(duration for _, duration in seen[5:]) < unfrozen / 5, (seen, unfrozen)
    assert gc.get_freeze_count() == 0


class _TimedPendulum(gym.Wrapper):  # type: ignore[type-arg]
    """Pendulum whose info carries a decoupled step's timing: 100 ms actions, 30 ms think."""

    def step(self, action):  # type: ignore[no-untyped-def]
        observation, reward, terminated, truncated, info = self.env.step(action)
        info.update(lat=0.130, duration=0.100, clock_offset=0.002)
        return observation, reward, terminated, truncated, info


class _Channel:
    """An AgentChannel's tick totals (from the StepTiming each answer carries)."""

    def __init__(self) -> None:
        self.control_ticks = 1000
        self.late_ticks = 5


def test_timing_scalars_reach_sb3s_logger(tmp_path: Path) -> None:
    """Beside SB3's own scalars, in its TensorBoard file: LAT and think-time percentiles,
    late ticks and the clock offset."""
    pytest.importorskip("tensorboard", reason="SB3 writes TensorBoard's files only where it is installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    channel = _Channel()
    env = _TimedPendulum(gym.make("Pendulum-v1", max_episode_steps=50))
    model = SAC("MlpPolicy", env, learning_starts=200, policy_kwargs={"net_arch": [8]}, tensorboard_log=str(tmp_path))
    model.learn(total_timesteps=200, log_interval=1, callback=TimingScalarsCallback([channel], every=50))
    (events,) = tmp_path.glob("SAC_1/events.out.tfevents.*")
    scalars = EventAccumulator(str(events)).Reload()
    last = {tag: scalars.Scalars(tag)[-1].value for tag in scalars.Tags()["scalars"]}
    assert last["timing/lat_p50_ms"] == pytest.approx(130.0)
    assert last["timing/think_p99_ms"] == pytest.approx(30.0)
    assert last["timing/clock_offset_ms"] == pytest.approx(2.0)
    assert last["timing/late_tick_percent"] == pytest.approx(0.5)
    assert "rollout/ep_rew_mean" in last  # SB3's own, in the same file


class _ActingPendulum(PendulumEnv):
    """Pendulum with DecoupledEnv's ``while_acting`` hook, noting each step's updates:
    how many were done when the step began, and how many once it had "acted"."""

    def __init__(self) -> None:
        super().__init__()
        self.while_acting: Callable[[], None] | None = None
        self.model: SAC | None = None
        self.updates: list[tuple[int, int]] = []  # (before the hook, after it)

    def step(self, action):  # type: ignore[no-untyped-def]
        before = self.model._n_updates if self.model is not None else 0
        if self.while_acting is not None:
            self.while_acting()
        after = self.model._n_updates if self.model is not None else 0
        self.updates.append((before, after))
        return super().step(action)


@pytest.mark.parametrize("algorithm", [SAC, TD3])
def test_gradient_steps_run_while_the_agent_acts(tmp_path: Path, algorithm: type[Any]) -> None:
    """The gradient steps SB3 runs after each step run during the next one instead (the
    hook a DecoupledEnv calls once its command is out), all of them: as many as SB3's own
    loop runs, the last ones before learn() returns; the model saves and loads as SB3's."""
    settings: dict[str, Any] = {"learning_starts": 10, "policy_kwargs": {"net_arch": [8]}, "seed": 0, "batch_size": 8}
    plain = algorithm("MlpPolicy", gym.make("Pendulum-v1"), **settings)
    plain.learn(total_timesteps=30)

    env = _ActingPendulum()
    model = trains_while_acting(algorithm)("MlpPolicy", env, **settings)
    env.model = model
    act_while_training(env, model)
    model.learn(total_timesteps=30)
    assert model._n_updates == plain._n_updates == 20
    during = [after - before for before, after in env.updates]
    assert sum(during) == 19 and all(n in (0, 1) for n in during)  # the 20th: as learn() ends
    assert all(before == after for before, after in env.updates[:11])  # nothing before learning starts
    assert model.updates_run == 20 and model.update_ms is not None and model.update_ms > 0  # type: ignore[attr-defined]

    model.save(tmp_path / "model")
    loaded = algorithm.load(tmp_path / "model")
    assert loaded.num_timesteps == 30
    again = trains_while_acting(algorithm).load(tmp_path / "model")
    assert isinstance(again, algorithm) and again._deferred_gradient_steps == 0  # type: ignore[attr-defined]


def test_a_saved_model_keeps_the_gradient_steps_still_to_run(tmp_path: Path) -> None:
    """A model saved between SB3 asking for an update and the next step running it (a
    checkpoint of a run stopped there) runs that update once loaded: none is lost."""
    settings: dict[str, Any] = {"learning_starts": 5, "policy_kwargs": {"net_arch": [8]}, "seed": 0, "batch_size": 8}
    env = _ActingPendulum()
    model = trains_while_acting(SAC)("MlpPolicy", env, **settings)
    model.learn(total_timesteps=20)
    model.train(gradient_steps=1, batch_size=8)  # asked for; the next step would run it
    updates = model._n_updates
    model.save(tmp_path / "model")
    model.save_replay_buffer(tmp_path / "buffer")

    resumed_env = _ActingPendulum()
    loaded = trains_while_acting(SAC).load(tmp_path / "model", env=resumed_env)
    loaded.load_replay_buffer(tmp_path / "buffer")
    assert loaded._deferred_gradient_steps == 1
    resumed_env.model = loaded
    act_while_training(resumed_env, loaded)
    loaded.learn(total_timesteps=1, reset_num_timesteps=False)
    # The one still to run, during the first step; that step's own, as learn() ends.
    assert resumed_env.updates[0] == (updates, updates + 1)
    assert loaded._n_updates == updates + 2 and loaded._deferred_gradient_steps == 0


def test_an_env_without_the_hook_is_refused() -> None:
    model = trains_while_acting(SAC)("MlpPolicy", gym.make("Pendulum-v1"))
    with pytest.raises(TypeError, match="neither a DecoupledEnv nor a DecoupledVecEnv"):
        act_while_training(gym.make("Pendulum-v1"), model)


def test_a_resumed_run_shows_each_step_once_in_tensorboard(tmp_path: Path) -> None:
    """The killed run logged steps 1-20, its checkpoint was at 10: after the purge mark,
    the resumed run's steps 11-15 replace the killed run's 11-20 in the same series."""
    pytest.importorskip("tensorboard", reason="SB3 writes TensorBoard's files only where it is installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    from spin_decoupler_ros.rl.run_folder import purge_tensorboard_after

    assert purge_tensorboard_after(tmp_path, "SAC", 10) is None  # nothing logged yet
    series = tmp_path / "tensorboard" / "SAC_1"
    with SummaryWriter(log_dir=str(series)) as killed:
        for step in range(1, 21):
            killed.add_scalar("loss", float(step), step)
    assert purge_tensorboard_after(tmp_path, "SAC", 10) == series
    with SummaryWriter(log_dir=str(series)) as resumed:
        for step in range(11, 16):
            resumed.add_scalar("loss", 100.0 + step, step)
    scalars = EventAccumulator(str(series)).Reload().Scalars("loss")
    assert [event.step for event in scalars] == list(range(1, 16))
    assert [event.value for event in scalars][9:11] == [10.0, 111.0]


def test_a_model_told_to_begin_again_resets_its_env_in_learn() -> None:
    """A resumed run's learn() goes on counting its steps but starts a new episode: the
    env is reset at the start of learn() once begin_episode_again was called, and not
    otherwise (the SB3 internals it relies on; test/unit/test_sb3_pin.py holds the
    version)."""
    resets: list[int] = []

    class CountingResets(gym.Wrapper):  # type: ignore[type-arg]
        def reset(self, **kwargs: Any) -> Any:
            resets.append(1)
            return self.env.reset(**kwargs)

    model = SAC(
        "MlpPolicy", CountingResets(gym.make("Pendulum-v1")), learning_starts=100, policy_kwargs={"net_arch": [8]}
    )
    model.learn(5)
    assert len(resets) == 1
    model.learn(5, reset_num_timesteps=False)
    assert len(resets) == 1  # learn() went on with the episode under way
    begin_episode_again(model)
    model.learn(5, reset_num_timesteps=False)
    assert len(resets) == 2
    assert model.num_timesteps == 15


class _Outcomes(gym.Env):  # type: ignore[type-arg]
    """One-step episodes that succeed as ``outcomes`` says, then always."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,))
    action_space = gym.spaces.Box(-1.0, 1.0, (1,))

    def __init__(self, outcomes: list[bool]) -> None:
        self.outcomes = list(outcomes)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self.observation_space.sample() * 0, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        success = self.outcomes.pop(0) if self.outcomes else True
        return self.observation_space.sample() * 0, 0.0, True, False, {"is_success": success}


@pytest.mark.parametrize("rate", [0.95, 0.0])
def test_training_stops_once_the_last_episodes_succeed(tmp_path: Path, rate: float) -> None:
    """Five failures, then successes: 95% of the last 20 holds first at the 24th episode
    (one failure left in the window), and training ends there; rate 0 trains the budget."""
    model = SAC("MlpPolicy", _Outcomes([False] * 5), learning_starts=1000, policy_kwargs={"net_arch": [8]})
    log = StepLogCallback(tmp_path / "steps.csv", extra_fields=("is_success",))
    stop = StopAtSuccess(log, rate, window=20)
    model.learn(total_timesteps=100, callback=[log, stop])
    if rate:
        assert stop.reached_at == model.num_timesteps == 24
        assert sum(1 - episode["success"] for episode in log.episodes[-20:]) == 1
    else:
        assert stop.reached_at is None and model.num_timesteps == 100


def test_confirming_episodes_act_deterministically_and_begin_as_evaluated(tmp_path: Path) -> None:
    """The window holds at the 24th episode; the next three act deterministically, each a
    success, and training ends at the 27th; evaluation's starts were asked for, then not."""
    acted: list[bool] = []

    class Spy(_Outcomes):
        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
            acted.append(model.acting_as_evaluated)
            return super().step(action)

    model = acts_as_evaluated(SAC)("MlpPolicy", Spy([False] * 5), learning_starts=10, policy_kwargs={"net_arch": [8]})
    log = StepLogCallback(tmp_path / "steps.csv", extra_fields=("is_success",))
    starts: list[bool] = []
    stop = StopAtSuccess(log, 0.95, window=20, confirm=3, starts_as_evaluated=starts.append)
    model.learn(total_timesteps=100, callback=[log, stop])
    assert stop.reached_at == model.num_timesteps == 27
    assert acted == [False] * 24 + [True] * 3
    assert stop.confirming_episodes == 3
    assert starts == [True, False] and not model.acting_as_evaluated


def test_confirming_needs_a_learner_that_can_act_as_evaluated(tmp_path: Path) -> None:
    model = SAC("MlpPolicy", _Outcomes([]), learning_starts=10, policy_kwargs={"net_arch": [8]})
    stop = StopAtSuccess(StepLogCallback(tmp_path / "steps.csv"), 0.95, confirm=3)
    with pytest.raises(TypeError, match="act as evaluated: SAC"):
        model.learn(total_timesteps=5, callback=stop)


def test_a_stop_that_never_stops_needs_no_learner_that_can_act_as_evaluated(tmp_path: Path) -> None:
    model = SAC("MlpPolicy", _Outcomes([]), learning_starts=10, policy_kwargs={"net_arch": [8]})
    model.learn(total_timesteps=5, callback=StopAtSuccess(StepLogCallback(tmp_path / "steps.csv"), 0.0, confirm=3))
    assert model.num_timesteps == 5


def test_a_learner_acting_as_evaluated_takes_its_deterministic_actions(tmp_path: Path) -> None:
    """SAC samples unless told to act as evaluated; TD3 puts its noise aside meanwhile; a
    plain SB3 save loads into the class."""
    from stable_baselines3.common.noise import NormalActionNoise

    model = acts_as_evaluated(SAC)("MlpPolicy", gym.make("Pendulum-v1"), seed=0, policy_kwargs={"net_arch": [8]})
    observation = np.array([1.0, 0.0, 0.5], dtype=np.float32)
    mean = model.predict(observation, deterministic=True)[0]
    assert not all(np.allclose(model.predict(observation)[0], mean) for _ in range(5))
    model.act_as_evaluated(True)
    assert all(np.allclose(model.predict(observation)[0], mean) for _ in range(5))
    noise = NormalActionNoise(np.zeros(1), np.ones(1))
    td3 = acts_as_evaluated(TD3)(
        "MlpPolicy", gym.make("Pendulum-v1"), action_noise=noise, policy_kwargs={"net_arch": [8]}
    )
    td3.act_as_evaluated(True)
    assert td3.action_noise is None
    td3.act_as_evaluated(False)
    assert td3.action_noise is noise
    SAC("MlpPolicy", gym.make("Pendulum-v1"), policy_kwargs={"net_arch": [8]}).save(tmp_path / "plain")
    assert not acts_as_evaluated(SAC).load(tmp_path / "plain", device="cpu").acting_as_evaluated
    model.save(tmp_path / "confirming")  # (saved while acting as evaluated: loads learning)
    assert not acts_as_evaluated(SAC).load(tmp_path / "confirming", device="cpu").acting_as_evaluated


def test_a_learner_acting_as_evaluated_stores_its_steps_but_does_not_learn() -> None:
    """The policy confirmed is the one training would end with; its steps are learned
    from once it learns again."""
    import torch

    model = acts_as_evaluated(SAC)(
        "MlpPolicy", gym.make("Pendulum-v1"), learning_starts=5, batch_size=8, seed=0, policy_kwargs={"net_arch": [8]}
    )
    model.learn(total_timesteps=10)
    weights = [tensor.clone() for tensor in model.policy.state_dict().values()]
    model.act_as_evaluated(True)
    model.learn(total_timesteps=20, reset_num_timesteps=False)
    assert model.replay_buffer.size() == 30
    assert all(torch.equal(a, b) for a, b in zip(weights, model.policy.state_dict().values(), strict=True))
    model.act_as_evaluated(False)
    model.learn(total_timesteps=5, reset_num_timesteps=False)
    assert not all(torch.equal(a, b) for a, b in zip(weights, model.policy.state_dict().values(), strict=True))


@pytest.mark.parametrize("algorithm", [SAC, TD3])
def test_layer_norm_critics_normalise_every_hidden_layer_and_load_back(tmp_path: Path, algorithm: type[Any]) -> None:
    """Each Q-network (and its target) has a LayerNorm after each hidden layer, none after
    the output; the model trains, saves and loads with the same networks."""
    from torch import nn

    from spin_decoupler_ros.rl.critics import LayerNormSACPolicy, LayerNormTD3Policy

    policy = LayerNormSACPolicy if algorithm is SAC else LayerNormTD3Policy
    settings: dict[str, Any] = {"learning_starts": 10, "batch_size": 8, "seed": 0}
    model = algorithm(policy, gym.make("Pendulum-v1"), policy_kwargs={"net_arch": [16, 16]}, **settings)
    for critic in (model.critic, model.critic_target):
        assert len(critic.q_networks) == 2
        for q_network in critic.q_networks:
            kinds = [type(layer) for layer in q_network]
            assert kinds == [nn.Linear, nn.LayerNorm, nn.ReLU, nn.Linear, nn.LayerNorm, nn.ReLU, nn.Linear]
    model.learn(total_timesteps=30)
    model.save(tmp_path / "model")
    loaded = algorithm.load(tmp_path / "model")
    assert isinstance(loaded.policy, policy)
    for name, tensor in model.critic.state_dict().items():
        assert (loaded.critic.state_dict()[name] == tensor).all(), name
