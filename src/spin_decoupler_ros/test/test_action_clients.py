"""feedback_taker: a feedback message taken without an executor, or no taker at all."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from spin_decoupler_ros.action_clients import feedback_taker


class FakeHandle:
    def __init__(self, messages: list[Any]) -> None:
        self.messages = messages
        self.types: list[type] = []

    def take_feedback(self, message_type: type) -> Any:
        self.types.append(message_type)
        return self.messages.pop(0) if self.messages else None


class FeedbackMessage:
    pass


def test_it_takes_the_action_types_feedback_messages_under_the_clients_lock() -> None:
    lock = threading.Lock()
    handle = FakeHandle(["first"])
    take_feedback = handle.take_feedback
    handle.take_feedback = lambda message_type: (lock.locked(), take_feedback(message_type))  # type: ignore[method-assign]
    client = SimpleNamespace(
        _client_handle=handle,
        _action_type=SimpleNamespace(Impl=SimpleNamespace(FeedbackMessage=FeedbackMessage)),
        _lock=lock,
    )
    take = feedback_taker(client)  # type: ignore[arg-type]
    assert take is not None
    assert take() == (True, "first")
    assert take() == (True, None)
    assert handle.types == [FeedbackMessage, FeedbackMessage]


def test_an_rclpy_that_keeps_its_handle_otherwise_gets_no_taker() -> None:
    """(the caller then spins, as before)"""
    assert feedback_taker(SimpleNamespace()) is None  # type: ignore[arg-type]
    no_take = SimpleNamespace(_client_handle=object(), _action_type=SimpleNamespace(Impl=SimpleNamespace()))
    assert feedback_taker(no_take) is None  # type: ignore[arg-type]


def test_this_rclpys_action_client_has_a_taker(ros_domain: dict[str, str]) -> None:
    """The real ActionClient of the ROS 2 this runs on (Kilted, and Jazzy in ./ws test):
    a taker, which finds nothing before anything was sent."""
    import rclpy
    from rclpy.action import ActionClient
    from rclpy.context import Context

    from spin_decoupler_msgs.action import Episode

    context = Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("feedback_taker_test", context=context, start_parameter_services=False)
        client: ActionClient = ActionClient(node, Episode, "episode")
        take = feedback_taker(client)
        assert take is not None
        assert take() is None
        client.destroy()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
