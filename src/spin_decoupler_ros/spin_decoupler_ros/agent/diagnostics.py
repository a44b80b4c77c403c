"""An agent's health on ``/diagnostics`` (diagnostic_msgs/DiagnosticArray), where
rqt_robot_monitor, the diagnostic aggregator and Foxglove look for it.

Once per ``diagnostics_period`` seconds of wall time (whatever the agent's clock does),
one status per check: the control loop, the learner, and any the agent adds (the Panda:
its joint states). The rules are ``core/health.py``'s; the thresholds are parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from spin_decoupler_ros.core.health import Figures, HealthThresholds, HealthWindow, Level
from spin_decoupler_ros.params import declare_float
from spin_decoupler_ros.qos_events import no_publisher_events


@dataclass(frozen=True)
class Check:
    """One diagnostic status: a name under the node's, a level, a message, key values."""

    name: str
    level: Level
    message: str
    values: tuple[tuple[str, str], ...] = ()


def declare_health_parameters(node: Node) -> tuple[float, HealthThresholds]:
    """The diagnostics period (0: none) and the thresholds, as parameters."""
    default = HealthThresholds()
    period = declare_float(
        node, "diagnostics_period", 1.0, "seconds between /diagnostics messages; 0: none", unit="s", low=0.0, high=60.0
    )
    thresholds = HealthThresholds(
        late_fraction_warn=declare_float(
            node,
            "diagnostics.late_fraction_warn",
            default.late_fraction_warn,
            "late control ticks over a window that make the control loop's status WARN",
            low=0.0,
            high=1.0,
        ),
        late_fraction_error=declare_float(
            node,
            "diagnostics.late_fraction_error",
            default.late_fraction_error,
            "late control ticks over a window that make it ERROR",
            low=0.0,
            high=1.0,
        ),
        think_p99_warn_s=declare_float(
            node,
            "diagnostics.think_p99_warn",
            default.think_p99_warn_s,
            "the learner's think time (99th percentile over a window) that makes its status WARN",
            unit="s",
            low=1e-6,
            high=3600.0,
        ),
        state_age_warn_s=declare_float(
            node,
            "diagnostics.state_age_warn",
            default.state_age_warn_s,
            "age of the robot's newest state that makes its status WARN",
            unit="s",
            low=1e-6,
            high=60.0,
        ),
        state_age_error_s=declare_float(
            node,
            "diagnostics.state_age_error",
            default.state_age_error_s,
            "age of the robot's newest state that makes its status ERROR",
            unit="s",
            low=1e-6,
            high=60.0,
        ),
    )
    return period, thresholds


class AgentDiagnostics:
    """Collects a window and publishes ``checks(figures)`` every ``period`` wall seconds."""

    def __init__(self, node: Node, period_s: float, checks: Callable[[Figures], list[Check]]) -> None:
        self.window = HealthWindow()
        self._node = node
        self._checks = checks
        self._prefix = node.get_fully_qualified_name().lstrip("/")
        self._hardware_id = node.get_namespace()
        self._publisher = node.create_publisher(
            DiagnosticArray, "/diagnostics", 10, event_callbacks=no_publisher_events()
        )
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)
        self._timer = node.create_timer(period_s, self.publish, clock=self._wall) if period_s > 0.0 else None

    def publish(self) -> None:
        figures = self.window.close()
        message = DiagnosticArray()
        message.header.stamp = self._node.get_clock().now().to_msg()
        for check in self._checks(figures):
            status = DiagnosticStatus(
                level=bytes([int(check.level)]),
                name=f"{self._prefix}: {check.name}",
                message=check.message,
                hardware_id=self._hardware_id,
                values=[KeyValue(key=key, value=value) for key, value in check.values],
            )
            message.status.append(status)
        self._publisher.publish(message)
