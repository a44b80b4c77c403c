"""The success stop (core/success_stop.py): the window, the confirming episodes that must
succeed at the rate, the way back to learning, several envs, and a resumed window."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spin_decoupler_ros.core.success_stop import PHASE_NEXT, Phase, SuccessStop

pytestmark = pytest.mark.core


def feed(stop: SuccessStop, outcomes: list[bool], env: int = 0) -> list[Phase]:
    return [stop.ended(env, success) for success in outcomes]


def test_the_window_then_confirming_episodes_in_a_row_end_learning() -> None:
    stop = SuccessStop(rate=0.95, window=20, confirm=3)
    assert feed(stop, [False] + [True] * 18)[-1] is Phase.LEARNING  # 19 episodes: no window yet
    assert stop.ended(0, True) is Phase.CONFIRMING  # 19 of 20
    assert stop.acts_deterministically
    assert feed(stop, [True, True]) == [Phase.CONFIRMING, Phase.CONFIRMING]
    assert stop.ended(0, True) is Phase.LEARNED
    assert stop.confirming_episodes == 3


def test_a_failed_confirmation_sends_the_run_back_to_learning_for_a_quarter_window() -> None:
    stop = SuccessStop(rate=0.95, window=20, confirm=3)
    feed(stop, [True] * 20)
    assert stop.phase is Phase.CONFIRMING
    assert stop.ended(0, True) is Phase.CONFIRMING
    assert stop.ended(0, False) is Phase.LEARNING  # 95% of 3 allows no failure
    assert not stop.acts_deterministically
    assert feed(stop, [True] * 4)[-1] is Phase.LEARNING  # five episodes of learning first
    assert stop.ended(0, True) is Phase.CONFIRMING
    assert feed(stop, [True, True, True]) == [Phase.CONFIRMING, Phase.CONFIRMING, Phase.LEARNED]
    assert stop.confirming_episodes == 5


def test_a_confirmation_allows_the_failures_the_rate_does() -> None:
    stop = SuccessStop(rate=0.95, window=20, confirm=20)
    assert stop.allowed_failures == 1
    feed(stop, [True] * 20)
    assert feed(stop, [True] * 5 + [False] + [True] * 13)[-1] is Phase.CONFIRMING
    assert stop.ended(0, True) is Phase.LEARNED  # 19 of 20
    again = SuccessStop(rate=0.9, window=10, confirm=20)
    feed(again, [True] * 10)
    assert feed(again, [False, True, False])[-1] is Phase.CONFIRMING  # 2 of 20 allowed
    assert again.ended(0, False) is Phase.LEARNING


def test_confirming_episodes_do_not_fill_the_window() -> None:
    stop = SuccessStop(rate=0.95, window=20, confirm=20)
    feed(stop, [True] * 20)
    feed(stop, [True] * 10)
    assert list(stop.recent) == [True] * 20 and stop.confirmed == 10


def test_a_stop_says_what_it_waits_for() -> None:
    assert (
        str(SuccessStop(0.95, 20, 20))
        == "95% of the last 20 episodes succeed, then 19 of 20 of the deterministic policy"
    )
    assert str(SuccessStop(0.95, 20, 5)).endswith("then 5 of 5 of the deterministic policy")
    assert str(SuccessStop(0.9, 10, 0)) == "90% of the last 10 episodes succeed"


def test_confirm_zero_stops_on_the_window_and_rate_zero_never() -> None:
    assert feed(SuccessStop(0.95, 20, 0), [True] * 20)[-1] is Phase.LEARNED
    never = SuccessStop(0.0, 20, 5)
    assert set(feed(never, [True] * 200)) == {Phase.LEARNING}


def test_random_actions_before_learning_starts_confirm_nothing() -> None:
    stop = SuccessStop(0.95, 5, 2)
    for _ in range(10):
        assert stop.ended(0, True, learner_acts=False) is Phase.LEARNING
    assert stop.ended(0, True) is Phase.CONFIRMING


def test_with_several_envs_only_episodes_begun_while_confirming_count() -> None:
    stop = SuccessStop(rate=1.0, window=4, confirm=2)
    feed(stop, [True] * 3, env=1)
    assert stop.ended(0, True) is Phase.CONFIRMING  # env 0's next episode is deterministic
    assert stop.ended(1, True) is Phase.CONFIRMING  # env 1's was begun exploring: not counted
    assert stop.confirmed == 0
    assert stop.ended(1, True) is Phase.CONFIRMING  # now env 1's counts
    assert stop.ended(0, True) is Phase.LEARNED


def test_a_resumed_run_remembers_its_window() -> None:
    stop = SuccessStop(0.95, 20, 1)
    stop.remember([True] * 19)
    assert stop.ended(0, True) is Phase.CONFIRMING


@pytest.mark.parametrize(("rate", "window", "confirm"), [(1.5, 20, 1), (-0.1, 20, 1), (0.9, 0, 1), (0.9, 20, -1)])
def test_settings_out_of_range_are_refused_by_name(rate: float, window: int, confirm: int) -> None:
    with pytest.raises(ValueError, match="a success stop needs"):
        SuccessStop(rate, window, confirm)


def test_the_table_lets_learned_go_nowhere() -> None:
    for phase in Phase:
        assert not PHASE_NEXT.allows(Phase.LEARNED, phase)
    assert PHASE_NEXT.allows(Phase.CONFIRMING, Phase.LEARNING)
    assert not PHASE_NEXT.allows(Phase.LEARNING, Phase.LEARNING)


@given(
    st.lists(st.tuples(st.integers(0, 2), st.booleans()), max_size=300),
    st.integers(1, 10),
    st.integers(0, 12),
)
def test_learned_only_after_the_window_holds_and_a_confirmation_at_the_rate(
    episodes: list[tuple[int, bool]], window: int, confirm: int
) -> None:
    """Whatever the episodes: LEARNED is final, comes with the window at the rate and, once
    ``confirm`` > 0, ends a confirmation with no more failures than allowed; after a
    failed confirmation, the next begins only after a quarter window of learning."""
    stop = SuccessStop(0.8, window, confirm)
    learning_since_failure: int | None = None
    for env, success in episodes:
        before, failed_before = stop.phase, stop.failed
        after = stop.ended(env, success)
        if before is Phase.LEARNED:
            assert after is Phase.LEARNED
        elif after is Phase.LEARNED:
            assert stop.window_holds()
            assert confirm == 0 or before is Phase.CONFIRMING
            assert failed_before + (not success) <= stop.allowed_failures
        if before is Phase.CONFIRMING and after is Phase.LEARNING:
            learning_since_failure = 0
        elif before is Phase.LEARNING and learning_since_failure is not None:
            learning_since_failure += 1
            if after is Phase.CONFIRMING:
                assert learning_since_failure >= max(1, window // 4)


def test_after_a_failed_confirmation_the_window_must_still_hold() -> None:
    stop = SuccessStop(rate=0.9, window=10, confirm=2)  # (a quarter window: 2 episodes)
    feed(stop, [True] * 10)
    assert stop.ended(0, False) is Phase.LEARNING
    assert feed(stop, [True, True]) == [Phase.LEARNING, Phase.CONFIRMING]
    assert stop.ended(0, False) is Phase.LEARNING
    assert feed(stop, [False, False] + [True] * 8)[-1] is Phase.LEARNING  # 8 of the last 10
    assert stop.ended(0, True) is Phase.CONFIRMING  # 9 of 10: the window holds again
