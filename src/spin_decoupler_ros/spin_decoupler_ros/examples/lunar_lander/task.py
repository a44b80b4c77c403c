"""RL side of LunarLander: Gymnasium's reward and termination, from what the agent sends;
and its in-process twins, for comparisons and for many seeds (docs/examples.md)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from spin_decoupler_ros.conversions import duration_to_ns
from spin_decoupler_ros.core.think_time import TimingModel, WorldGate
from spin_decoupler_ros.core.timing import NS_PER_S, ns_to_seconds, periods_for, seconds_to_ns
from spin_decoupler_ros.examples.lunar_lander import transport
from spin_decoupler_ros.rl import DecoupledEnv, StepAnswer
from spin_decoupler_ros.rl.env import chosen_duration


def duration_element(choice: int, duration_choices: int) -> float:
    """The duration element (in [-1, 1], ``DecoupledEnv``'s) of the ``choice``-th of
    ``duration_choices`` durations spread evenly over the range."""
    return -1.0 + 2.0 * choice / (duration_choices - 1)


def lander_action_space(duration_choices: int, then_action: bool) -> spaces.Discrete | spaces.MultiDiscrete:
    """The engine; with ``then_action``, the engine that fires while the learner thinks;
    with ``duration_choices``, one of that many durations."""
    nvec = [4, *([4] if then_action else []), *([duration_choices] if duration_choices else [])]
    return spaces.Discrete(4) if len(nvec) == 1 else spaces.MultiDiscrete(nvec)


def lander_action_parts(action: Any, duration_choices: int, then_action: bool) -> tuple[int, int | None, int | None]:
    """An action of ``lander_action_space``: (engine, then engine or None, duration choice or None)."""
    values = [int(value) for value in np.asarray(action).reshape(-1)]
    then = values[1] if then_action else None
    return values[0], then, values[-1] if duration_choices else None


class LunarLanderEnv(DecoupledEnv):
    """LunarLander through the decoupler, for Stable-Baselines3.

    ## Observation
    Gymnasium's 8 (float32, its bounds), from the agent's 21.

    ## Action
    ``Discrete(4)``: noop, left engine, main engine, right engine; sent as one number.
    With ``then_action=True``, ``MultiDiscrete([4, 4])``: the engine, and the engine that
    fires from the step's observation until the next step starts (while the learner
    thinks). With ``duration_choices=K`` (and a ``duration_range``), one more choice: one
    of K durations evenly from the range's min to its max (``lander_action_space``).

    ## Reward and episode end
    Gymnasium's, summed over the frames of a step, rebuilt by ``transport.step_reward``
    (see its module docstring for exactly how). Truncated once the agent has run 1000
    frames (Gymnasium's time limit), counted by the agent, so frames that ran while the
    learner was thinking count too.
    """

    def __init__(
        self, agent_namespace: str = "", *, duration_choices: int = 0, then_action: bool = False, **kwargs: Any
    ) -> None:
        from gymnasium.envs.box2d.lunar_lander import LunarLander

        if duration_choices and (duration_choices < 2 or kwargs.get("duration_range") is None):
            raise ValueError(f"duration_choices={duration_choices} needs a duration_range and at least 2 choices")
        self.duration_choices = duration_choices
        reference = LunarLander()
        super().__init__(
            agent_namespace,
            observation_space=reference.observation_space,
            action_space=lander_action_space(duration_choices, then_action),
            then_action=then_action,
            **kwargs,
        )
        reference.close()
        self.frames_per_step = max(
            1, round(seconds_to_ns(self.client.rl_timestep) / duration_to_ns(self.client.description.control_period))
        )
        self._start = np.zeros(transport.SIZE)  # the agent's observation when the step began
        self._terminated = False
        self._frames_before = 0.0

    def agent_action(self, action: Any) -> np.ndarray:
        engine, then, choice = lander_action_parts(action, self.duration_choices, self.then_action)
        values = [float(engine), *([float(then)] if then is not None else [])]
        if choice is not None:
            values.append(duration_element(choice, self.duration_choices))
        return np.array(values)

    def make_observation(self, answer: StepAnswer) -> np.ndarray:
        if answer.seq == 0:  # the reset observation: the first step's reward starts here
            self._start = answer.observation
        return answer.observation[transport.OBSERVATION].astype(np.float32)

    def task_reward(self, observation: np.ndarray, action: np.ndarray, answer: StepAnswer) -> float:
        reward, self._terminated = transport.step_reward(self._start, answer.observation)
        self._frames_before = self._start[transport.FRAMES]
        self._start = answer.observation
        return reward

    def is_terminated(self, observation: np.ndarray, answer: StepAnswer) -> bool:
        return self._terminated

    def is_truncated(self, observation: np.ndarray, answer: StepAnswer) -> bool:
        return transport.out_of_time(answer.observation)

    def step_info(self, observation: np.ndarray, answer: StepAnswer) -> dict[str, Any]:
        return {"frames": int(answer.observation[transport.FRAMES] - self._frames_before)}


class FrameSkipLunarLander(gym.Wrapper):
    """The in-process twin of ``LunarLanderEnv`` for comparisons: Gymnasium's LunarLander
    repeating each action for ``frames_per_step`` frames (rewards summed, stopping at the
    episode's end), truncated at 1000 frames. What the decoupled env is when no frame
    runs while the learner thinks."""

    def __init__(self, frames_per_step: int) -> None:
        from gymnasium.envs.box2d.lunar_lander import LunarLander

        super().__init__(LunarLander())
        self.frames_per_step = frames_per_step
        self._frames = 0

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        self._frames = 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        total = 0.0
        for _ in range(self.frames_per_step):
            observation, reward, terminated, _, info = self.env.step(action)
            self._frames += 1
            total += float(reward)
            if terminated:
                break
        truncated = not terminated and self._frames >= transport.FRAMES_PER_EPISODE
        return observation, total, terminated, truncated, info


class LunarLanderTwin(gym.Env[np.ndarray, Any]):
    """``LunarLanderEnv`` against its agent (self-clocked at ``control_rate``, a frame a
    tick) under a simulated timing model, in one process: the same plant and reward
    (``transport``), the same think times (the agent's ``WorldGate``, seeded as the agent
    is), the same ``lat`` and ``duration`` in each step's info. The same MDP to the bit
    (test_time_aware_env.py::test_the_twin_is_the_decoupled_lander_under_jitter), without a
    round trip a step: what lets ``bench/time_aware.py`` run enough seeds to tell what
    timing does from how far PPO's seeds spread.

    As on the agent: after a reset the lander is held until the first action, which
    starts after the think time drawn at the reset observation; after each step the
    action fires on (or, with ``then_action``, the engine it names to fire then) for the
    think time drawn at its observation, then the next starts. Durations are
    ``frames_per_step``, or, with ``duration_choices`` and a ``duration_range``, chosen
    as ``LunarLanderEnv``'s are (the same action space, the same duration, rounded to
    whole frames as the agent does); under ``none`` with fixed durations this is
    ``FrameSkipLunarLander`` with the agent's rounding of the reward.
    """

    def __init__(
        self,
        frames_per_step: int,
        timing_model: str = "none",
        control_rate: float = 1000.0,
        *,
        duration_range: tuple[float, float] | None = None,
        duration_choices: int = 0,
        then_action: bool = False,
    ) -> None:
        from gymnasium.envs.box2d.lunar_lander import LunarLander

        if bool(duration_choices) != (duration_range is not None) or duration_choices == 1:
            raise ValueError(
                f"duration_choices={duration_choices} and duration_range={duration_range}: choosing durations "
                "needs both, and at least 2 choices"
            )
        model = TimingModel.parse(timing_model)
        if not model.simulated:
            raise ValueError("timing model 'wall' has no twin: its think times are the machine's, not a model's")
        if frames_per_step < 1 or not control_rate > 0.0:
            raise ValueError(
                f"frames_per_step must be >= 1 and control_rate > 0, got {frames_per_step}, {control_rate}"
            )
        reference = LunarLander()
        self.observation_space = reference.observation_space
        reference.close()
        self.action_space = lander_action_space(duration_choices, then_action)
        self.then_action = then_action
        self.frames_per_step = frames_per_step
        self.duration_range = duration_range
        self.duration_choices = duration_choices
        self._period_ns = round(NS_PER_S / control_rate)
        self._gate = WorldGate(model, self._period_ns)
        self._plant = transport.LanderPlant()
        self._now_ns = 0  # the agent's simulated time: the last observation's instant
        self._action: int | None = None  # what fires while the learner thinks (None: held)
        self._step_ns = frames_per_step * self._period_ns
        self._last_step_ns = 0  # the last step's executed duration (0 after a reset)
        self._start = np.zeros(transport.SIZE)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        agent_seed = int(self.np_random.integers(0, 2**31 - 1))  # (as DecoupledEnv.prepare_reset draws it)
        self._plant.reset(agent_seed)
        self._gate.new_episode(agent_seed)
        self._action = None
        self._last_step_ns = 0
        return self._observe(), {}

    @property
    def upcoming_think_s(self) -> float:
        """The think time drawn for the decision being taken now (seconds): what the agent's
        world knows and a learner cannot."""
        waits_from = self._gate.waits_from_ns
        return 0.0 if waits_from is None else (waits_from - self._now_ns) / NS_PER_S

    def _observe(self) -> np.ndarray:
        self._gate.observed(self._now_ns)
        self._start = self._plant.transported()
        return self._start[transport.OBSERVATION].astype(np.float32)

    def _duration_ns(self, choice: int | None) -> int:
        """The duration a step runs (ns, whole frames)."""
        if choice is None:
            return self._step_ns
        assert self.duration_range is not None
        duration_s = chosen_duration(duration_element(choice, self.duration_choices), self.duration_range)
        return periods_for(seconds_to_ns(duration_s), self._period_ns) * self._period_ns

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        engine, then, choice = lander_action_parts(action, self.duration_choices, self.then_action)
        step_ns = self._duration_ns(choice)
        start_ns = self._gate.start_ns(self._now_ns)  # (the learner answers at once: the model's think time)
        if self._action is not None:
            for _ in range((start_ns - self._now_ns) // self._period_ns):
                self._plant.frame(self._action)
        # (in whole ns, as the agent reports them: the same floats)
        lat_ns = self._last_step_ns + start_ns - self._now_ns
        for _ in range(step_ns // self._period_ns):
            self._plant.frame(engine)
        self._action = engine if then is None else then
        self._last_step_ns = step_ns
        self._now_ns = start_ns + step_ns
        info = {"lat": ns_to_seconds(lat_ns), "duration": ns_to_seconds(step_ns)}
        start = self._start
        observation = self._observe()
        reward, terminated = transport.step_reward(start, self._start)
        return observation, reward, terminated, not terminated and transport.out_of_time(self._start), info
