"""Bare rclpy echo node for the step-overhead benchmark's baseline: answers every
7-float64 "ping" with a 30-float64 "pong", on a SingleThreadedExecutor like the agent."""

from __future__ import annotations

import sys

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray

from spin_decoupler_ros.dds_profile import use_dds_profile

QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


class Pong(Node):
    def __init__(self) -> None:
        super().__init__("pong")
        self._answer = Float64MultiArray(data=[0.0] * 30)
        self._pub = self.create_publisher(Float64MultiArray, "pong", QOS)
        self._sub = self.create_subscription(Float64MultiArray, "ping", self._on_ping, QOS)
        self.get_logger().info("pong ready")

    def _on_ping(self, msg: Float64MultiArray) -> None:
        self._pub.publish(self._answer)


def main() -> int:
    use_dds_profile()  # the profile the agent and the client run with
    rclpy.init()
    node = Pong()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
