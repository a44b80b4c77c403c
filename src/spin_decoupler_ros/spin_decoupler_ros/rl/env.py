"""DecoupledEnv: a Gymnasium env whose reset() and step() run on a remote agent."""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from spin_decoupler_ros.contract import AGENT_LIVELINESS_S
from spin_decoupler_ros.core.errors import (
    AgentConflictError,
    AgentError,
    AgentInactiveError,
    AgentNotFoundError,
    EpisodeEndedError,
    RobotStoppedError,
    StepTimeoutError,
)
from spin_decoupler_ros.rl.client import RLClient
from spin_decoupler_ros.rl.step_answer import StepAnswer

AgentLostPolicy = Literal["raise", "truncate"]
# How often a reset asks an inactive (paused) agent, or one whose robot waits for a person, again.
INACTIVE_RETRY_S = 0.5
# While waiting for a lost agent: said at once, then every this long or half the time
# waited so far, whichever is longer (a slowing interval).
WAIT_REPORT_S = 10.0


def _records_its_arguments(init: Callable[..., None]) -> Callable[..., None]:
    """Wrap an env's ``__init__`` so that the outermost call's arguments (a subclass's
    task arguments included) are kept, by name, for its ``spec``."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def recording_init(self: DecoupledEnv, *args: Any, **kwargs: Any) -> None:
        if "_made_with" not in self.__dict__:
            arguments = dict(signature.bind(self, *args, **kwargs).arguments)
            arguments.pop(next(iter(signature.parameters)))  # self
            for name, parameter in signature.parameters.items():
                if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                    arguments.update(arguments.pop(name, {}))
            self.__dict__["_made_with"] = arguments
        init(self, *args, **kwargs)

    return recording_init


def chosen_duration(choice: float, duration_range: tuple[float, float]) -> float:
    """The step duration (s) an action's duration element asks for: ``choice`` in
    [-1, 1] (clipped) linearly onto ``duration_range``."""
    d_min, d_max = duration_range
    return d_min + (float(np.clip(choice, -1.0, 1.0)) + 1.0) * 0.5 * (d_max - d_min)


@dataclass(frozen=True)
class StepRequest:
    """What one env action asks of the agent: ``action`` for ``duration`` seconds (None:
    the agent's rl_timestep), then ``then_action`` until the next step (None: ``action``
    runs on)."""

    action: np.ndarray
    duration: float | None
    then_action: np.ndarray | None = None


class DecoupledEnv(gym.Env[np.ndarray, np.ndarray]):
    """A Gymnasium env over an agent node: ``reset()`` is an Episode goal, ``step()`` a
    StepCommand answered by the agent's observation after the action ran for its duration.

    The learner and the agent's control loop run apart: between two ``step()`` calls the
    agent keeps applying the last action (and holds position if the learner stays silent
    past the agent's watchdog). Every answer carries its timing.

    ## Action space
    The agent's action box (as float32), read from its latched description, or
    ``action_space`` if given (it must match the agent's size). With
    ``duration_range=(d_min, d_max)``, one more element in [-1, 1] chooses each step's
    action duration linearly in [d_min, d_max] seconds: the policy picks its own timestep.
    With ``then_action=True``, the agent's box a second time (before the duration
    element) chooses what runs from the step's observation until the next step starts,
    while the learner thinks, in place of the step's action running on; for agents that
    take one (``description.takes_then_action``).

    ## Observation space
    ``Box(-inf, inf, (n,), float32)`` of the agent's observation, or
    ``observation_space`` when ``make_observation`` builds something else.

    ## Rewards
    ``task_reward(observation, action, answer)``: by default the agent's reward if it
    sends one, else 0. Tasks override it to compute reward on the RL side. (Not named
    ``compute_reward``: SB3 would take the env for a goal-conditioned one.)

    ## Episode end
    ``terminated`` comes from ``is_terminated(observation, answer)`` (default never);
    ``truncated`` after ``max_episode_steps`` steps, or, with ``on_agent_lost="truncate"``,
    when the agent stops answering, is deactivated by an operator (lifecycle: a pause)
    or its robot stops on its own (a reflex, a stop: ``RobotStoppedError``);
    ``info["truncated_reason"]`` says why, ``info["agent_outcome"]`` names how the agent
    ended the episode. The next ``reset()`` waits up to ``agent_wait_timeout`` s for an
    agent to come back, to be activated again, or for a person to recover the robot
    (logged once as a warning naming what to do); after a stop the agent recovers
    itself where the robot allows it.

    ## Info
    ``seq``, ``lat`` (previous action's measured duration, s), ``ato`` (agent time of
    the observation, s), ``duration`` (how long this action ran), ``hold``,
    ``wall_time`` (RL wall clock), ``round_trip``, ``clock_offset`` (agent clock minus
    RL clock, s), ``agent_reward``, ``requested_duration`` (what this step asked for, s),
    ``agent`` (the agent's namespace).

    ## Arguments
    :param agent_namespace: namespace of the agent node ("" or e.g. "/panda0").
    :param client: an existing RLClient to use (then ``agent_namespace`` and
        ``client_options`` are ignored); the env closes it on ``close()``.
    :param max_episode_steps: truncate after this many steps (None: never).
    :param action_space: the env's action space; a Box must match the agent's size,
        another space needs ``agent_action`` to map its actions to the agent's vector.
    :param step_duration: seconds each step's action runs (None: the agent's rl_timestep).
    :param duration_range: (min, max) seconds to let the policy choose the duration.
    :param then_action: let the policy choose what runs while it thinks (Action space).
    :param on_agent_lost: "raise" a typed error when the agent stops answering, or
        "truncate" the episode and wait for the agent at the next reset.
    :param agent_wait_timeout: with "truncate", how long reset() waits for an agent.
    :param reconnect_attempt_timeout: with "truncate", seconds per reset attempt while
        waiting (a crashed agent may look alive until DDS notices it is gone).
    :param client_options: keyword arguments for RLClient (timeouts, executor, ...).

    ## Work while the agent acts
    ``while_acting`` (an attribute, None by default): called once per step after the
    command went out, before waiting for its answer: the learner's own work then runs
    during the action instead of between observation and action (``TrainsWhileActing``).
    """

    # An instance attribute in Gymnasium's Env, so not a ClassVar here.
    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _records_its_arguments(cls.__dict__["__init__"])  # type: ignore[method-assign]

    @_records_its_arguments
    def __init__(
        self,
        agent_namespace: str = "",
        *,
        client: RLClient | None = None,
        observation_space: spaces.Space | None = None,
        action_space: spaces.Space | None = None,
        max_episode_steps: int | None = None,
        step_duration: float | None = None,
        duration_range: tuple[float, float] | None = None,
        then_action: bool = False,
        on_agent_lost: AgentLostPolicy = "raise",
        agent_wait_timeout: float = 300.0,
        reconnect_attempt_timeout: float = 5.0,
        client_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if on_agent_lost not in ("raise", "truncate"):
            raise ValueError(f"on_agent_lost must be 'raise' or 'truncate', not {on_agent_lost!r}")
        if duration_range is not None and not (0.0 < duration_range[0] <= duration_range[1]):
            raise ValueError(f"duration_range must be (min, max) with 0 < min <= max, got {duration_range}")
        self.client = client or RLClient(agent_namespace, **(client_options or {}))
        self.max_episode_steps = max_episode_steps
        self.step_duration = step_duration
        self.duration_range = duration_range
        self.then_action = then_action
        self.on_agent_lost = on_agent_lost
        self.agent_wait_timeout = agent_wait_timeout
        self.reconnect_attempt_timeout = reconnect_attempt_timeout

        spec = self.client.action_spec
        if then_action:
            try:
                self.client.channel.require_then_action()
            except ValueError as exc:
                raise ValueError(f"then_action=True, but {exc}") from None
        if action_space is None:
            low, high = spec.low.astype(np.float32), spec.high.astype(np.float32)
            if then_action:
                low, high = np.concatenate([low, low]), np.concatenate([high, high])
            if duration_range is not None:
                low, high = np.append(low, np.float32(-1.0)), np.append(high, np.float32(1.0))
            action_space = spaces.Box(low, high, dtype=np.float32)
        expected = spec.size * (2 if then_action else 1) + (1 if duration_range else 0)
        if isinstance(action_space, spaces.Box) and action_space.shape != (expected,):
            raise ValueError(
                f"action_space has shape {action_space.shape}, but the agent takes {spec.size} values"
                + (" twice (the then_action)" if then_action else "")
                + (" plus one for the duration" if duration_range else "")
            )
        self.action_space = action_space
        self.observation_space = observation_space or spaces.Box(
            -np.inf, np.inf, shape=(self.client.observation_size,), dtype=np.float32
        )
        self._steps = 0
        self._last_observation: np.ndarray | None = None
        self._agent_lost = False
        self._lost_at = 0.0  # (monotonic) when the agent was lost
        self._lost_reason = ""  # and why
        self.while_acting: Callable[[], None] | None = None
        # A seeded reset is deterministic, a step is not: it runs in real (or simulated) time.
        # gymnasium.make(env.spec) makes an equivalent env: the arguments this one was
        # made with (a task's too), a given client replaced by its agent's namespace
        # (test_env_and_skeletons.py::test_an_env_made_with_a_client_is_made_again_from_its_spec).
        made_with = dict(self.__dict__.get("_made_with", {}))
        if made_with.pop("client", None) is not None:
            made_with["agent_namespace"] = self.client.channel.namespace
        self.spec = EnvSpec(
            id="spin_decoupler/Decoupled-v0",
            entry_point=f"{type(self).__module__}:{type(self).__qualname__}",
            nondeterministic=True,
            max_episode_steps=max_episode_steps,
            kwargs=made_with,
        )

    # -- hooks for tasks ----------------------------------------------------------------

    def agent_action(self, action: Any) -> np.ndarray:
        """The agent's action vector for an env action (override for non-Box spaces, e.g.
        a Discrete choice sent as one number)."""
        return np.asarray(action, dtype=np.float64).reshape(-1)

    def new_episode(self) -> Sequence[float]:
        """Begin an episode on the RL side (draw targets from ``self.np_random`` here) and
        return the reset options to send to the agent. Called after seeding."""
        return ()

    def make_observation(self, answer: StepAnswer) -> np.ndarray:
        """The env's observation from the agent's answer."""
        return answer.observation.astype(np.float32)

    def task_reward(self, observation: np.ndarray, action: np.ndarray, answer: StepAnswer) -> float:
        return float(answer.agent_reward) if answer.agent_reward is not None else 0.0

    def is_terminated(self, observation: np.ndarray, answer: StepAnswer) -> bool:
        return False

    def is_truncated(self, observation: np.ndarray, answer: StepAnswer) -> bool:
        """Whether the episode hit a task time limit (besides ``max_episode_steps``)."""
        return False

    def step_info(self, observation: np.ndarray, answer: StepAnswer) -> dict[str, Any]:
        """Extra task-specific info for a step (e.g. reward terms)."""
        return {}

    # -- Gymnasium API ------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        agent_seed, reset_options = self.prepare_reset(seed, options)
        if not self._agent_lost:
            try:
                return self.complete_reset(self.client.reset(agent_seed, reset_options))
            except (AgentInactiveError, RobotStoppedError) as exc:  # paused, or the robot needs a person: wait
                if self.on_agent_lost == "raise":
                    raise
                self._lost_reason = str(exc)
        answer = self._reset_when_agent_returns(agent_seed, reset_options)
        return self.complete_reset(answer)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        request = self.prepare_step(action)
        try:
            answer = self.client.step(
                request.action, request.duration, self.while_acting, then_action=request.then_action
            )
        except (StepTimeoutError, AgentError) as exc:
            if self.on_agent_lost == "raise" or self._last_observation is None:
                raise
            # Gone, or paused by an operator: the next reset waits for it to come back.
            # (After a robot stop the next reset recovers it, or waits for a person.)
            outcome = exc.outcome if isinstance(exc, EpisodeEndedError) else ""
            self._agent_lost = isinstance(exc, StepTimeoutError) or outcome == "DEACTIVATED"
            self._lost_at = time.monotonic()
            self._lost_reason = str(exc)
            info = {"truncated_reason": str(exc), "agent_outcome": outcome}
            return self._last_observation.copy(), 0.0, False, True, info
        return self.complete_step(request.action, request.duration, answer)

    # -- the two halves of reset() and step(), for drivers of many envs (the VecEnv) ----

    def prepare_reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[int, Sequence[float]]:
        """Seed, begin the RL side's episode; return the agent's seed and reset options."""
        gym.Env.reset(self, seed=seed)
        agent_seed = int(self.np_random.integers(0, 2**31 - 1))
        reset_options = self.new_episode()
        if options and "agent_options" in options:
            reset_options = options["agent_options"]
        return agent_seed, reset_options

    def complete_reset(self, answer: StepAnswer) -> tuple[np.ndarray, dict[str, Any]]:
        """The env's reset result from the agent's reset answer."""
        self._steps = 0
        observation = self.make_observation(answer)
        self._last_observation = observation
        info = answer.info()
        info["agent"] = self.client.channel.agent_name
        return observation, info

    def prepare_step(self, action: Any) -> StepRequest:
        """What to ask the agent for an env action."""
        return self.split_action(self.agent_action(action))

    def complete_step(
        self, agent_action: np.ndarray, duration: float | None, answer: StepAnswer
    ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """The env's step result from the agent's answer: the task's reward and episode end."""
        self._steps += 1
        observation = self.make_observation(answer)
        self._last_observation = observation
        reward = self.task_reward(observation, agent_action, answer)
        terminated = bool(self.is_terminated(observation, answer))
        truncated = self.is_truncated(observation, answer) or (
            self.max_episode_steps is not None and self._steps >= self.max_episode_steps
        )
        info = answer.info()
        info["agent"] = self.client.channel.agent_name
        info["requested_duration"] = duration if duration else self.client.rl_timestep
        info.update(self.step_info(observation, answer))
        return observation, float(reward), terminated, bool(truncated and not terminated), info

    def _reset_when_agent_returns(self, seed: int, options: Sequence[float]) -> StepAnswer:
        """After the agent was lost: retry the reset until an agent answers, or give up.

        Each attempt is short and the next one goes to whichever agent is there by then
        (a crashed one counts as gone once its liveliness lapses: contract.py). What it
        waits for is said at once, then at a slowing interval, and when it goes on
        (test_faults.py::test_an_agent_restarted_after_a_kill_is_taken_as_soon_as_it_is_ready)."""
        started = time.monotonic()
        deadline = started + self.agent_wait_timeout
        logger = self.client.node.get_logger()
        agent = self.client.channel.agent_name
        logger.warning(
            f"waiting for agent '{agent}' to come back (up to {self.agent_wait_timeout:.0f} s): {self._lost_reason}"
        )
        said_at, said = started, self._lost_reason  # when the wait was last said, and what it said
        channel = self.client.channel
        while True:
            if channel.status_heard_at < self._lost_at and time.monotonic() - self._lost_at < AGENT_LIVELINESS_S:
                # Nothing new from an agent yet, and a dead one may still look alive (its
                # liveliness has not lapsed): wait for a status, which a new agent says at once.
                self.client.rl_node.spin_once(0.05)
                continue
            remaining = deadline - time.monotonic()
            attempt = min(self.reconnect_attempt_timeout, max(remaining, 0.1))
            saved, self.client.reset_timeout = self.client.reset_timeout, attempt
            try:
                self.client.connect(timeout=min(attempt, max(remaining, 0.0)))
                answer = self.client.reset(seed, options)
            except (
                AgentInactiveError,
                RobotStoppedError,
                StepTimeoutError,
                AgentNotFoundError,
                AgentError,
                AgentConflictError,
            ) as exc:
                now = time.monotonic()
                if now >= deadline:
                    raise
                waited = now - started
                if str(exc) != said or now - said_at >= max(WAIT_REPORT_S, waited / 2):
                    said_at, said = now, str(exc)
                    logger.warning(
                        f"waiting for agent '{agent}' to come back ({waited:.0f} s so far, up to "
                        f"{self.agent_wait_timeout:.0f} s): {exc}"
                    )
                if isinstance(exc, (AgentInactiveError, RobotStoppedError, AgentConflictError)):
                    # refused at once: ask again soon, taking the agents' news meanwhile
                    self.client.rl_node.spin_once(min(INACTIVE_RETRY_S, max(deadline - time.monotonic(), 0.0)))
                continue
            finally:
                self.client.reset_timeout = saved
            self._agent_lost = False
            logger.info(f"agent '{agent}' answers again after {time.monotonic() - started:.1f} s: going on")
            return answer

    def split_action(self, action: np.ndarray) -> StepRequest:
        """The agent's action vector (the action, then the then_action, then the duration
        element, as configured) as a request."""
        duration = self.step_duration
        if self.duration_range is not None:
            action, duration = action[:-1], chosen_duration(float(action[-1]), self.duration_range)
        if not self.then_action:
            return StepRequest(action, duration)
        size = self.client.action_spec.size
        return StepRequest(action[:size], duration, action[size:])

    def close(self) -> None:
        """Finish the experiment on the agent side (it holds) and release ROS resources."""
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        super().close()
