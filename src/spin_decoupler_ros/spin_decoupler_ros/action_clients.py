"""What every rclpy action client of this project needs, whichever package owns it.

``drop_orphaned_futures``: some rclpy releases (Kilted's 9.1.x among them) register a
goal's future twice in ``ActionClient`` and remove it once (ros2/rclpy#1532), and every
callback of the client walks that list. A client that sends goal after goal (the RL
side: one per episode; the Panda agent: one per error recovery) would make each
callback slower than the last and memory grow for as long as it runs. Held by
test_decoupler.py::test_many_episodes_leave_nothing_behind_in_the_client and
test_robot_stops.py::test_recoveries_by_action_leave_nothing_behind_in_the_agent.

``feedback_taker``: a goal's feedback taken where it waits, without an executor. A
caller polling for an answer due any moment would otherwise spin the executor, which
builds a wait set each time: code enough to evict the caller's own from the CPU's
caches, so that the learner runs its next step slower (docs/benchmarks.md,
"time_aware"). Held by test_decoupler.py::test_a_step_answer_is_taken_while_polling.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from rclpy.action import ActionClient

PENDING_REQUESTS = ("_pending_goal_requests", "_pending_cancel_requests", "_pending_result_requests")


def drop_orphaned_futures(action_client: ActionClient) -> None:
    """Forget the futures ``action_client`` keeps for requests no longer pending; call
    it after each ``send_goal_async``. Without the bug there is nothing to drop."""
    futures = getattr(action_client, "_futures", None)
    if not isinstance(futures, list):
        return
    pending = (getattr(action_client, name, {}) for name in PENDING_REQUESTS)
    live = {id(future) for requests in pending for future in requests.values()}
    futures[:] = [future for future in futures if id(future) in live]


def feedback_taker(action_client: ActionClient) -> Callable[[], Any] | None:
    """A function taking the next feedback message that has arrived for ``action_client``
    (None when none has), for the caller to handle as its feedback callback would; None
    where this rclpy's ``ActionClient`` keeps its handle otherwise (then spin). The
    message is the one the executor would have taken and handed to the goal's feedback
    callback: only who takes it differs."""
    handle = getattr(action_client, "_client_handle", None)
    take = getattr(handle, "take_feedback", None)
    message_type = getattr(getattr(action_client, "_action_type", None), "Impl", None)
    if take is None or message_type is None:
        return None
    feedback_type = message_type.FeedbackMessage
    lock = getattr(action_client, "_lock", None) or contextlib.nullcontext()

    def take_feedback() -> Any:
        with lock:  # (as ActionClient.take_data takes it)
            return take(feedback_type)

    return take_feedback
