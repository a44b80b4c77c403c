"""LatestMessage: the newest message on a topic, taken by hand, never spun."""

from __future__ import annotations

import time

from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from std_msgs.msg import UInt64

from spin_decoupler_ros.agent import LatestMessage
from spin_decoupler_ros.rl.client import init_private_context


def test_the_reader_takes_only_the_newest_message_and_the_executor_never_runs_it(ros_domain: dict[str, str]) -> None:
    context = init_private_context([])
    try:
        node = Node("latest_message_test", context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        latest = LatestMessage(node, UInt64, "/latest_message_test")
        publisher = node.create_publisher(UInt64, "/latest_message_test", 10)
        deadline = time.monotonic() + 10.0
        while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert publisher.get_subscription_count() == 1
        assert latest.take_serialized() is None  # nothing published yet

        for value in range(1, 6):
            publisher.publish(UInt64(data=value))
        # Spinning must leave the subscription alone: its callback raises if ever run.
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)

        raw = latest.take_serialized()
        assert raw is not None
        assert deserialize_message(raw, UInt64).data == 5  # depth 1: the older four were replaced
        assert latest.take_serialized() is None  # taken: nothing new since

        publisher.publish(UInt64(data=6))
        deadline = time.monotonic() + 5.0
        while (raw := latest.take_serialized()) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert raw is not None and deserialize_message(raw, UInt64).data == 6
        executor.shutdown()
        node.destroy_node()
    finally:
        context.try_shutdown()


def test_a_wait_is_woken_by_the_arrival_and_takes_nothing(ros_domain: dict[str, str]) -> None:
    """``wait`` blocks until a message is there (or its timeout), without taking it: the
    arrival wakes it well before the timeout."""
    import threading

    context = init_private_context([])
    try:
        node = Node("latest_message_wait_test", context=context)
        latest = LatestMessage(node, UInt64, "/latest_message_wait_test")
        publisher = node.create_publisher(UInt64, "/latest_message_wait_test", 10)
        deadline = time.monotonic() + 10.0
        while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        assert not latest.wait(0.2)  # nothing comes: the timeout
        assert time.monotonic() - started >= 0.19
        later = threading.Timer(0.3, lambda: publisher.publish(UInt64(data=7)))
        later.start()
        started = time.monotonic()
        assert latest.wait(10.0)
        woken_after = time.monotonic() - started
        later.join()
        assert woken_after < 5.0  # the arrival woke it, not the 10 s timeout
        raw = latest.take_serialized()
        assert raw is not None and deserialize_message(raw, UInt64).data == 7
        node.destroy_node()
    finally:
        context.try_shutdown()
