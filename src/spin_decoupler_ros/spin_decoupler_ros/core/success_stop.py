"""When a run has learned its task, from the episodes it ends: ``rate`` of the last
``window`` succeeded, and then the policy that will be evaluated and deployed (the
deterministic one, no longer learning) succeeded in ``rate`` of ``confirm`` episodes, as
its evaluation will ask of it.

The window alone judges the exploring policy: its noise reaches targets the mean action
stops short of, and a policy still learning swings between snapshots a few hundred steps
apart, so a run stopped on the window alone can evaluate well below ``rate``. Confirming
episodes are training episodes (their steps, arm time and data count) that judge one
snapshot, the one training would end with. Once more of them fail than ``rate`` allows,
the run goes back to learning: it confirms again once the window holds after a quarter
of a window of new episodes (5 of 20) have changed the policy. Pure logic
(test_success_stop.py); ``rl/stopping.py`` drives it from SB3's rollouts.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable

from spin_decoupler_ros.core.transitions import TransitionTable


class Phase(enum.Enum):
    LEARNING = "learning"  # the exploring policy acts; the window is watched
    CONFIRMING = "confirming"  # the deterministic policy acts, not learning; rate of confirm must succeed
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

    :param rate: the share of the last ``window`` episodes, and then of the ``confirm``
        confirming ones, that must succeed.
    :param window: how many episodes of learning the share is taken over.
    :param confirm: deterministic episodes run to confirm (0: none); at most
        ``allowed_failures`` of them may fail.
    """

    def __init__(self, rate: float, window: int, confirm: int) -> None:
        if not 0.0 <= rate <= 1.0 or window < 1 or confirm < 0:
            raise ValueError(
                f"a success stop needs 0 <= rate <= 1, window >= 1, confirm >= 0: got {rate}, {window}, {confirm}"
            )
        self.rate, self.window, self.confirm = rate, window, confirm
        self.phase = Phase.LEARNING
        self.recent: deque[bool] = deque(maxlen=window)
        self.confirmed = 0  # successes in this confirmation
        self.failed = 0  # failures in this confirmation
        self.allowed_failures = int(confirm * (1.0 - rate) + 1e-9)
        self.relearn_episodes = max(1, window // 4)  # learning after a failed confirmation
        self._relearn_left = 0
        self.confirming_episodes = 0  # all episodes run to confirm, over the run
        self._deterministic: set[int] = set()  # envs whose running episode began confirming

    def __str__(self) -> str:
        said = f"{100 * self.rate:g}% of the last {self.window} episodes succeed"
        if not self.confirm:
            return said
        return f"{said}, then {self.confirm - self.allowed_failures} of {self.confirm} of the deterministic policy"

    def remember(self, successes: Iterable[bool]) -> None:
        """Episodes ended before (a resumed run's): they fill the window, nothing else."""
        self.recent.extend(bool(success) for success in successes)

    def window_holds(self) -> bool:
        return self.rate > 0.0 and len(self.recent) == self.window and sum(self.recent) >= self.rate * self.window

    def ended(self, env: int, success: bool, learner_acts: bool = True) -> Phase:
        """One episode of env ``env`` ended. ``learner_acts``: the policy chooses the next
        actions (SB3 acts at random before ``learning_starts``: nothing to confirm)."""
        if self.phase is Phase.LEARNING:
            self.recent.append(bool(success))
            self._relearn_left = max(0, self._relearn_left - 1)
            if self.window_holds() and not self._relearn_left:
                if not self.confirm:
                    self._go(Phase.LEARNED)
                elif learner_acts:
                    self._go(Phase.CONFIRMING)
                    self._deterministic = {env}
        elif self.phase is Phase.CONFIRMING:
            if env not in self._deterministic:
                self._deterministic.add(env)  # its next episode is the policy's alone
                return self.phase
            self.confirming_episodes += 1
            if success:
                self.confirmed += 1
            else:
                self.failed += 1
            if self.failed > self.allowed_failures:
                self._go(Phase.LEARNING)
                self._relearn_left = self.relearn_episodes
            elif self.confirmed + self.failed >= self.confirm:
                self._go(Phase.LEARNED)
        return self.phase

    @property
    def acts_deterministically(self) -> bool:
        return self.phase is Phase.CONFIRMING

    def _go(self, to: Phase) -> None:
        PHASE_NEXT.check(self.phase, to)
        self.phase = to
        self.confirmed = self.failed = 0
        self._deterministic = set()
