"""RobotModeWatch: the arm's own word that it stopped, where its profile says it has one.

A Franka on franka_ros2 v2.4+ / v3.3+ publishes its robot state
(``franka_msgs/msg/FrankaRobotState`` on franka_robot_state_broadcaster's topic, the
profile's ``stop.topic``, best effort): ``robot_mode`` REFLEX (4) or USER_STOPPED (5) is
a stop, with the errors that caused it. The agent reads the newest state each control tick and reports a stop
once, when the mode enters one of the profile's ``stopped_modes``; it watches again once
the mode has left them (after the recovery). Joint states standing still while commanded
(``core/stops.py``) remain the sign on every arm.

``franka_msgs`` is imported only here, only for such a profile; where it is missing the
agent says so and keeps to the joint states
(test_robot_stops.py::test_an_fr3_reflex_is_read_from_its_robot_state_and_recovered_in_three_steps).
"""

from __future__ import annotations

from typing import Any

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message

from franka_agent.core.profile import RobotProfile
from spin_decoupler_ros.agent import LatestMessage

MODE_NAMES = {
    0: "OTHER",
    1: "IDLE",
    2: "MOVE",
    3: "GUIDING",
    4: "REFLEX",
    5: "USER_STOPPED",
    6: "AUTOMATIC_ERROR_RECOVERY",
}
STATE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)  # as the broadcaster's since v3.3.0


class RobotModeWatch:
    def __init__(self, node: Node, profile: RobotProfile, state_type: Any) -> None:
        self._type = state_type
        self._stopped_modes = frozenset(profile.stop.stopped_modes)
        self._reader = LatestMessage(node, state_type, profile.stop.topic, STATE_QOS)
        self._reported = False
        self.topic = profile.stop.topic

    def stop(self) -> str | None:
        """What the robot says, the first time its newest state is a stop; else None."""
        raw = self._reader.take_serialized()
        if raw is None:
            return None
        state = deserialize_message(raw, self._type)
        mode = int(state.robot_mode)
        if mode not in self._stopped_modes:
            self._reported = False
            return None
        if self._reported:
            return None
        self._reported = True
        errors = [
            name for name in state.current_errors.get_fields_and_field_types() if getattr(state.current_errors, name)
        ]
        return f"robot_mode {MODE_NAMES.get(mode, mode)} on {self.topic}" + (
            f" ({', '.join(errors)})" if errors else ""
        )


def robot_mode_watch(node: Node, profile: RobotProfile) -> RobotModeWatch | None:
    """The watch for a profile whose stop surface is a Franka robot state; None for other
    arms, or where franka_msgs is not installed (said in the log)."""
    if profile.stop.kind != "franka_robot_state":
        return None
    try:
        from franka_msgs.msg import FrankaRobotState  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        node.get_logger().warning(
            f"franka_msgs is not installed: the {profile.name}'s robot state ({profile.stop.topic}) goes unread; "
            "a stop is seen from the joint states alone"
        )
        return None
    return RobotModeWatch(node, profile, FrankaRobotState)
