"""When a run has learned its task, from the episodes it ends: ``rate`` of the last
``window`` succeeded, and then ``confirm`` episodes in a row, acted by the deterministic
policy (the one evaluated and deployed), succeeded too.

The window alone judges the exploring policy: its noise reaches targets the mean action
stops short of, so a run stopped on it alone can evaluate well below ``rate``. Confirming
episodes are training episodes like any other (their steps, arm time and data count); a
failed one sends the run back to learning, to confirm again once the window holds again.
Pure logic (test_success_stop.py); ``rl/stopping.py`` drives it from SB3's rollouts.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable

from spin_decoupler_ros.core.transitions import TransitionTable


class Phase(enum.Enum):
    LEARNING = "learning"  # the exploring policy acts; the window is watched
    CONFIRMING = "confirming"  # the deterministic policy acts; each episode must succeed
    LEARNED = "learned"  # done: training ends


PHASE_NEXT = TransitionTable(
    "PHASE_NEXT",
    "a run's success stop",
    {
        Phase.LEARNING: frozenset({Phase.CONFIRMING, Phase.LEARNED}),  # (LEARNED at once: confirm 0)
        Phase.CONFIRMING: frozenset({Phase.LEARNING, Phase.LEARNED}),
        Phase.LEARNED: frozenset(),
    },
    always=frozenset(),
)


class SuccessStop:
    """Feed it every ended episode (``ended``) with the index of the env that ran it; read
    ``phase``. ``rate`` 0 never stops. With several envs acting together, an episode counts
    as confirming only if it began after confirming did (the others were partly explored).

    :param rate: the share of the last ``window`` episodes that must have succeeded.
    :param window: how many episodes the share is taken over.
    :param confirm: deterministic episodes that must then succeed in a row (0: none).
    """

    def __init__(self, rate: float, window: int, confirm: int) -> None:
        if not 0.0 <= rate <= 1.0 or window < 1 or confirm < 0:
            raise ValueError(
                f"a success stop needs 0 <= rate <= 1, window >= 1, confirm >= 0: got {rate}, {window}, {confirm}"
            )
        self.rate, self.window, self.confirm = rate, window, confirm
        self.phase = Phase.LEARNING
        self.recent: deque[bool] = deque(maxlen=window)
        self.confirmed = 0  # in a row, in this confirmation
        self.confirming_episodes = 0  # all episodes run to confirm, over the run
        self._deterministic: set[int] = set()  # envs whose running episode began confirming

    def __str__(self) -> str:
        said = f"{100 * self.rate:g}% of the last {self.window} episodes succeed"
        return f"{said}, then {self.confirm} of the deterministic policy in a row" if self.confirm else said

    def remember(self, successes: Iterable[bool]) -> None:
        """Episodes ended before (a resumed run's): they fill the window, nothing else."""
        self.recent.extend(bool(success) for success in successes)

    def window_holds(self) -> bool:
        return self.rate > 0.0 and len(self.recent) == self.window and sum(self.recent) >= self.rate * self.window

    def ended(self, env: int, success: bool, learner_acts: bool = True) -> Phase:
        """One episode of env ``env`` ended. ``learner_acts``: the policy chooses the next
        actions (SB3 acts at random before ``learning_starts``: nothing to confirm)."""
        self.recent.append(bool(success))
        if self.phase is Phase.LEARNING and self.window_holds():
            if not self.confirm:
                self._go(Phase.LEARNED)
            elif learner_acts:
                self._go(Phase.CONFIRMING)
                self._deterministic = {env}
        elif self.phase is Phase.CONFIRMING:
            if env not in self._deterministic:
                self._deterministic.add(env)  # its next episode is the policy's alone
            elif not success:
                self.confirming_episodes += 1
                self._go(Phase.LEARNING)
            else:
                self.confirming_episodes += 1
                self.confirmed += 1
                if self.confirmed >= self.confirm and self.window_holds():
                    self._go(Phase.LEARNED)
        return self.phase

    @property
    def acts_deterministically(self) -> bool:
        return self.phase is Phase.CONFIRMING

    def _go(self, to: Phase) -> None:
        PHASE_NEXT.check(self.phase, to)
        self.phase = to
        self.confirmed = 0
        self._deterministic = set()
