"""FrankaSurface: how the mock of a Franka on franka_ros2 v2.4+ / v3.3+ shows a stop and
takes the recovery, on the names the profile gives (the FR3's).

- the robot state (``franka_msgs/msg/FrankaRobotState``, best effort as since v3.3.0)
  with ``robot_mode`` (MOVE, REFLEX, IDLE) and the error flag that caused the reflex;
- the ``franka_msgs/action/ErrorRecovery`` action, and controller_manager's
  ``set_hardware_component_state`` and ``switch_controller`` services: the three steps
  of ``core/franka_hardware.py``, refused out of order. The third step gives the arm back
  to the mock's controller (``on_following``).

``franka_msgs`` and ``controller_manager_msgs`` are imported here only: where they are
not installed, the mock has no Franka surface and says so. (On this project's machines
the tests build stand-ins with the releases' fields: test/interfaces.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.action import ActionServer
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from franka_agent.core.franka_hardware import FrankaHardware
from franka_agent.core.profile import RobotProfile

# What the mock's desired-state check found, as the libfranka error it makes on the arm.
ERROR_OF_VIOLATION = {
    "position": "joint_motion_generator_position_limits_violation",
    "velocity": "joint_motion_generator_velocity_limits_violation",
    "acceleration": "joint_motion_generator_acceleration_discontinuity",
}
ACTIVE_STATE_ID = 3  # lifecycle_msgs/State.PRIMARY_STATE_ACTIVE


class FrankaSurface:
    def __init__(self, node: Node, profile: RobotProfile, on_following: Callable[[], None]) -> None:
        from controller_manager_msgs.srv import (  # type: ignore[import-not-found,unused-ignore]
            SetHardwareComponentState,
            SwitchController,
        )
        from franka_msgs.action import ErrorRecovery  # type: ignore[import-not-found,unused-ignore]
        from franka_msgs.msg import FrankaRobotState  # type: ignore[import-not-found,unused-ignore]

        self.hardware = FrankaHardware()
        self.steps: list[str] = []  # the recovery steps taken, in order, for tests and the log
        self._node = node
        self._profile = profile
        self._on_following = on_following
        self._recovery_type = ErrorRecovery
        self._state = FrankaRobotState()
        self._state.measured_joint_state.name = list(profile.joint_names)
        best_effort = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
        self._state_pub = node.create_publisher(FrankaRobotState, profile.stop.topic, best_effort)
        action = profile.recovery.agent_parameter.partition(":")[2]
        manager = profile.recovery.controller_manager.rstrip("/")
        self._action = ActionServer(node, ErrorRecovery, action, self._on_error_recovery)
        self._hardware_srv = node.create_service(
            SetHardwareComponentState, f"{manager}/set_hardware_component_state", self._on_set_hardware
        )
        self._switch_srv = node.create_service(SwitchController, f"{manager}/switch_controller", self._on_switch)

    def reflex(self, error: str) -> None:
        """An FCI error: the hardware and the controllers go inactive, robot_mode REFLEX."""
        self.hardware.reflex(error)
        self._node.get_logger().warning(
            f"reflex ({error}): the hardware and its controllers are inactive until the error recovery action, "
            f"set_hardware_component_state and switch_controller"
        )

    def publish(self, stamp: Time, q: np.ndarray, dq: np.ndarray) -> None:
        state = self._state
        state.header.stamp = stamp
        state.measured_joint_state.header.stamp = stamp
        state.measured_joint_state.position = q.tolist()
        state.measured_joint_state.velocity = dq.tolist()
        state.robot_mode = self.hardware.robot_mode
        errors = type(state.current_errors)()
        if self.hardware.error is not None:
            setattr(errors, self.hardware.error, True)
            state.last_motion_errors = errors
        state.current_errors = errors
        self._state_pub.publish(state)

    def _taken(self, step: str, ok: bool, message: str) -> None:
        self.steps.append(f"{step}: {'ok' if ok else 'refused'}")
        (self._node.get_logger().info if ok else self._node.get_logger().warning)(f"{step}: {message}")

    def _on_error_recovery(self, goal: Any) -> Any:
        answer = self.hardware.error_recovery()
        self._taken("error recovery", answer.ok, answer.message)
        goal.succeed()
        return self._recovery_type.Result()

    def _on_set_hardware(self, request: Any, response: Any) -> Any:
        target = request.target_state
        if request.name != self._profile.recovery.hardware_component:
            response.ok = False
            self._taken("set_hardware_component_state", False, f"no hardware component '{request.name}'")
            return response
        if target.id != ACTIVE_STATE_ID and target.label != "active":
            response.ok = False
            self._taken("set_hardware_component_state", False, f"the mock only activates ({target})")
            return response
        answer = self.hardware.activate_hardware()
        response.ok = answer.ok
        response.state.id = ACTIVE_STATE_ID if answer.ok else 1
        response.state.label = "active" if answer.ok else "unconfigured"
        self._taken("set_hardware_component_state", answer.ok, answer.message)
        return response

    def _on_switch(self, request: Any, response: Any) -> Any:
        wanted = list(request.activate_controllers)
        if self._profile.controller.name not in wanted:
            response.ok = False
            response.message = f"activates {wanted}, not {self._profile.controller.name}"
            self._taken("switch_controller", False, response.message)
            return response
        was_following = self.hardware.following
        answer = self.hardware.activate_controllers()
        response.ok = answer.ok
        response.message = answer.message
        self._taken("switch_controller", answer.ok, answer.message)
        if answer.ok and not was_following:
            self._on_following()
        return response


def franka_surface(node: Node, profile: RobotProfile, on_following: Callable[[], None]) -> FrankaSurface | None:
    """The mock's Franka surface where the profile's arm stops and recovers as a Franka on
    franka_ros2 v2.4+ does; None for other arms, or where the interfaces are missing
    (then the mock's ``~/error_recovery`` stands in, as it says)."""
    if profile.stop.kind != "franka_robot_state":
        return None
    try:
        return FrankaSurface(node, profile, on_following)
    except ImportError as error:
        node.get_logger().warning(f"no robot state or three-step recovery ({error}): ~/error_recovery stands in")
        return None
