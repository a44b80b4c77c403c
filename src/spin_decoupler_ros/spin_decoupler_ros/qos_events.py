"""No QoS event handlers, for the endpoints of nodes that wake at the control rate.

rclpy gives each publisher and subscription default event handlers (they log an
incompatible QoS or type). Each handler is a waitable that the executor adds to its
wait set, and asks whether it is ready, on every wake-up: the agent and the mock wake
about three times a control tick. Their robot-facing endpoints (joint states, the
trajectory command, ``/diagnostics``) go without: a mismatch still fails to connect, and
on a real arm franka_ros2's side (rclcpp, default handlers) still logs it. The
decoupler's own interface (status, description, step commands, step timing) keeps them,
for clients written elsewhere.

Humble's rclpy (3.3) has the classes in ``rclpy.qos_event``; Iron and later in
``rclpy.event_handler``.
"""

from __future__ import annotations

try:
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import (  # type: ignore[import-not-found,no-redef]
        PublisherEventCallbacks,
        SubscriptionEventCallbacks,
    )


def no_publisher_events() -> PublisherEventCallbacks:
    return PublisherEventCallbacks(use_default_callbacks=False)


def no_subscription_events() -> SubscriptionEventCallbacks:
    return SubscriptionEventCallbacks(use_default_callbacks=False)
