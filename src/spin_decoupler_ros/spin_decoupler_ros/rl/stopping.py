"""When training ends on its own: once the task is learned (``core/success_stop.py``),
judged on the episodes the learner runs, the last of them acted by the policy that
will be evaluated. On a robot every further step costs the arm's time and teaches
nothing the task asks for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from spin_decoupler_ros.core.success_stop import Phase, SuccessStop
from spin_decoupler_ros.rl.training import StepLogCallback


class ActsAsEvaluated:
    """Mixin for an SB3 off-policy algorithm: while ``acting_as_evaluated``, its own
    rollouts act as its evaluation does, with the deterministic action and no exploration
    noise (TD3's ``action_noise``, from the next rollout on), and it runs no gradient
    steps: the policy that acts is the one training would end with. Their transitions are
    stored as any others, and learned from once it learns again. Use it through
    ``acts_as_evaluated(SAC)``
    (test_training_helpers.py::test_a_learner_acting_as_evaluated_takes_its_deterministic_actions,
    ::test_a_learner_acting_as_evaluated_stores_its_steps_but_does_not_learn)."""

    acting_as_evaluated = False
    _noise_put_aside: Any = None

    def predict(
        self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = False
    ) -> Any:
        deterministic = deterministic or self.acting_as_evaluated
        return super().predict(observation, state, episode_start, deterministic)  # type: ignore[misc]

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        if not self.acting_as_evaluated:
            super().train(gradient_steps, batch_size)  # type: ignore[misc]

    def _excluded_save_params(self) -> list[str]:
        # (a model saved while confirming loads acting as it learns: its checkpoint's resume
        # begins learning again)
        return [*super()._excluded_save_params(), "acting_as_evaluated", "_noise_put_aside"]  # type: ignore[misc]

    def act_as_evaluated(self, on: bool) -> None:
        if on == self.acting_as_evaluated:
            return
        self.acting_as_evaluated = on
        if on:
            self._noise_put_aside, self.action_noise = getattr(self, "action_noise", None), None
        else:
            self.action_noise, self._noise_put_aside = self._noise_put_aside, None


def acts_as_evaluated(algorithm: type[Any]) -> type[Any]:
    """``algorithm`` (an SB3 class) that can act as evaluated (``ActsAsEvaluated``); its
    ``load()`` loads a model saved by either."""
    return type(algorithm.__name__, (ActsAsEvaluated, algorithm), {"__module__": __name__})


class StopAtSuccess(BaseCallback):
    """Ends training once ``rate`` of the last ``window`` finished episodes succeeded and
    then ``rate`` of ``confirm`` episodes of the deterministic policy, not learning
    meanwhile, did (``SuccessStop``). The window is kept across a resume
    (``StepLogCallback.episodes``); a confirmation under way is not.
    ``starts_as_evaluated(on)`` is called as confirming begins and ends, so confirming
    episodes begin where evaluation's do (``ReachEnv``: home); the first has begun
    already (SB3 resets as an episode ends), and counts all the same. ``rate`` 0 never
    stops, so confirms nothing and takes any learner
    (test_training_helpers.py::test_training_stops_once_the_last_episodes_succeed,
    ::test_confirming_episodes_act_deterministically_and_begin_as_evaluated,
    ::test_a_stop_that_never_stops_needs_no_learner_that_can_act_as_evaluated)."""

    def __init__(
        self,
        log: StepLogCallback,
        rate: float,
        window: int = 20,
        confirm: int = 0,
        starts_as_evaluated: Callable[[bool], None] | None = None,
    ) -> None:
        super().__init__()
        self.log = log
        self.success_stop = SuccessStop(rate, window, confirm)
        self.starts_as_evaluated = starts_as_evaluated
        self.reached_at: int | None = None  # the step it stopped at

    @property
    def confirming_episodes(self) -> int:
        return self.success_stop.confirming_episodes

    def _on_training_start(self) -> None:
        confirms = self.success_stop.rate > 0 and self.success_stop.confirm > 0  # (rate 0 never stops)
        if confirms and not isinstance(self.model, ActsAsEvaluated):
            raise TypeError(
                f"confirming episodes need a learner that can act as evaluated: {type(self.model).__name__}"
            )
        self.success_stop.remember(bool(episode["success"]) for episode in self.log.episodes)

    def _on_step(self) -> bool:
        dones = self.locals.get("dones", [])
        infos = self.locals.get("infos", [])
        learner_acts = self.num_timesteps >= getattr(self.model, "learning_starts", 0)
        for i, done in enumerate(dones):
            if done:
                success = bool(infos[i].get("is_success", False)) if len(infos) > i else False
                self.success_stop.ended(i, success, learner_acts)
        self._act(self.success_stop.acts_deterministically)
        if self.success_stop.phase is Phase.LEARNED:
            self.reached_at = self.num_timesteps
            return False
        return True

    def _on_training_end(self) -> None:
        self._act(False)

    def _act(self, as_evaluated: bool) -> None:
        if isinstance(self.model, ActsAsEvaluated) and self.model.acting_as_evaluated != as_evaluated:
            self.model.act_as_evaluated(as_evaluated)
            if self.starts_as_evaluated is not None:
                self.starts_as_evaluated(as_evaluated)
