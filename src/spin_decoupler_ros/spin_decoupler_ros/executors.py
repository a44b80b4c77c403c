"""Which executor a node process spins: rclpy's EventsExecutor where every node fits it,
else the SingleThreadedExecutor.

The EventsExecutor (``rclpy.experimental``, in C++, in Jazzy's and Kilted's rclpy)
waits and dispatches without the SingleThreadedExecutor's Python on every wake-up
(what that saves a self-clocked agent: docs/benchmarks.md, "time_aware"). It resumes a
waiting coroutine back to back, so an agent keeps none (episode_server.execute_goal). It
also differs in ways these nodes would notice, so a node runs on it only where none of
them applies (``why_not_events``):
- it runs every subscription, whatever its callback group, so LatestMessage's
  subscriptions, read by hand, would be drained by callbacks;
- it takes no guard conditions;
- in rclpy 9.1 a subscription callback that takes MessageInfo raises SystemError out of
  ``spin_once``;
- on a simulator's clock (/clock) an agent's reset was seen to hang under it.
A node fits when it says so (``events_executor_fit``, which an agent says when it is
self-clocked: its time is its own simulation's, neither /clock nor a wall-time deadline)
and has none of the above. Everything on a clock, the real-time path above all, keeps
the SingleThreadedExecutor whose figures ``bench/results/control_loop.json`` holds.
The choice is made once, when the process has brought its nodes up.
``SPIN_DECOUPLER_EXECUTOR=single`` keeps the SingleThreadedExecutor everywhere.
test_executors.py holds these rules.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from rclpy.context import Context
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.node import Node

from spin_decoupler_ros.core.errors import ParameterError

EXECUTOR_VARIABLE = "SPIN_DECOUPLER_EXECUTOR"
EXECUTOR_CHOICES = ("auto", "single")


def events_executor_available() -> bool:
    """Whether the installed rclpy has the EventsExecutor."""
    try:
        from rclpy.experimental import EventsExecutor  # noqa: F401
    except ImportError:
        return False
    return True


def _takes_message_info(subscription: object) -> bool:
    callback_type = getattr(subscription, "_callback_type", None)
    return callback_type is not None and getattr(callback_type, "name", "") == "WithMessageInfo"


def why_not_events(node: Node) -> str | None:
    """Why ``node`` must not spin on the EventsExecutor, or None if it may."""
    if not getattr(node, "events_executor_fit", False):
        return "it does not say it fits (events_executor_fit: a self-clocked agent does)"
    if any(True for _ in node.guards):
        return "it has guard conditions"
    default_group = node.default_callback_group
    entities: list[Any] = [*node.subscriptions, *node.timers, *node.services, *node.clients, *node.waitables]
    if any(entity.callback_group is not default_group for entity in entities):
        return "an entity of it is in a callback group of its own (a LatestMessage, say)"
    if any(_takes_message_info(subscription) for subscription in node.subscriptions):
        return "a subscription callback of it takes MessageInfo"
    return None


def executor_for(nodes: Sequence[Node], context: Context | None = None) -> tuple[Executor, str]:
    """The executor to spin ``nodes`` on (not yet holding them; on ``context``, None:
    the default one), and why that one."""
    choice = os.environ.get(EXECUTOR_VARIABLE, "auto") or "auto"
    if choice not in EXECUTOR_CHOICES:
        # (a ParameterError: run_node then exits naming it, without a traceback)
        raise ParameterError(f"{EXECUTOR_VARIABLE}={choice!r}: expected one of {', '.join(EXECUTOR_CHOICES)}")
    if choice == "single":
        return SingleThreadedExecutor(context=context), f"{EXECUTOR_VARIABLE}=single"
    if not events_executor_available():
        return SingleThreadedExecutor(context=context), "this rclpy has no EventsExecutor"
    for node in nodes:
        reason = why_not_events(node)
        if reason is not None:
            why = f"node '{node.get_name()}' does not fit the EventsExecutor: {reason}"
            return SingleThreadedExecutor(context=context), why
    from rclpy.experimental import EventsExecutor

    return EventsExecutor(context=context), "every node fits it"
