"""How the Panda agent asks the robot to recover from a stop it made itself.

The parameter ``recovery`` names what the robot offers (docs/robot_stops.md):

- ``none``: nothing (franka_ros2 v0.1.0): a person must recover the robot;
- ``trigger:<service>``: a std_srvs/Trigger service (the MuJoCo mock's
  ``/mock_hardware/error_recovery``, or a site's own wrapper);
- ``franka_action:<action>``: franka_ros2 v2.x's ``franka_msgs/action/ErrorRecovery``
  (``/action_server/error_recovery``); ``franka_msgs`` is imported only then, so the
  agent runs where it is not installed.

A call is started with ``start()`` and polled with ``poll()`` from the control loop,
which never blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from action_msgs.msg import GoalStatus
from rclpy.client import Client
from rclpy.node import Node
from rclpy.task import Future
from std_srvs.srv import Trigger

from spin_decoupler_ros.action_clients import drop_orphaned_futures
from spin_decoupler_ros.core.errors import ParameterError

RECOVERY_KINDS = ("none", "trigger", "franka_action")
# What a person does when the agent cannot recover the robot itself.
PERSON_MUST_ACT = (
    "a person must act: release the stop if one is pressed, clear the robot's error (Desk, or franka_ros2's "
    "error recovery) and make sure its joint_trajectory_controller is active"
)


@dataclass(frozen=True)
class Outcome:
    succeeded: bool
    message: str


class Recovery(Protocol):
    name: str

    def start(self) -> Outcome | None:
        """Start the call; an outcome at once if it cannot be made (nothing answers)."""

    def poll(self) -> Outcome | None:
        """The call's outcome, None while it runs."""

    def cancel(self) -> None:
        """Forget a call that ran out of time."""


class TriggerRecovery:
    def __init__(self, node: Node, service: str) -> None:
        self.name = f"service {service}"
        self._client: Client = node.create_client(Trigger, service)
        self._future: Future | None = None

    def start(self) -> Outcome | None:
        if not self._client.service_is_ready():
            return Outcome(False, f"{self.name} is not available")
        self._future = self._client.call_async(Trigger.Request())
        return None

    def poll(self) -> Outcome | None:
        if self._future is None or not self._future.done():
            return None
        response = self._future.result()
        self._future = None
        if response is None:
            return Outcome(False, f"{self.name} gave no response")
        return Outcome(bool(response.success), str(response.message))

    def cancel(self) -> None:
        self._future = None


class FrankaActionRecovery:
    """franka_ros2 v2.x's error recovery action: an empty goal; the action succeeds if
    libfranka's automaticErrorRecovery did (franka_hardware/src/franka_action_server.cpp).

    :param action_type: the action's type; None: ``franka_msgs/action/ErrorRecovery``
        (any action whose default goal asks for the recovery works the same way).
    """

    def __init__(self, node: Node, action: str, action_type: Any = None) -> None:
        from rclpy.action import ActionClient

        if action_type is None:
            from franka_msgs.action import ErrorRecovery  # type: ignore[import-not-found]  # only where installed

            action_type = ErrorRecovery
        self.name = f"action {action}"
        self._goal = action_type.Goal()
        self._client: Any = ActionClient(node, action_type, action)
        self._goal_future: Future | None = None
        self._result_future: Future | None = None

    def start(self) -> Outcome | None:
        if not self._client.server_is_ready():
            return Outcome(False, f"{self.name} is not available")
        self._goal_future = self._client.send_goal_async(self._goal)
        drop_orphaned_futures(self._client)  # a run may recover many times
        self._result_future = None
        return None

    def poll(self) -> Outcome | None:
        if self._result_future is None:
            if self._goal_future is None or not self._goal_future.done():
                return None
            handle: Any = self._goal_future.result()
            self._goal_future = None
            if handle is None or not handle.accepted:
                return Outcome(False, f"{self.name} refused the goal")
            self._result_future = handle.get_result_async()
        if not self._result_future.done():
            return None
        response: Any = self._result_future.result()
        self._result_future = None
        succeeded = response is not None and response.status == GoalStatus.STATUS_SUCCEEDED
        return Outcome(succeeded, "recovered" if succeeded else f"{self.name} did not succeed (the robot refused)")

    def cancel(self) -> None:
        self._goal_future = self._result_future = None


def make_recovery(node: Node, text: str) -> Recovery | None:
    """The recovery the parameter ``recovery`` names (None for ``none``); ParameterError
    naming the parameter for anything else."""
    kind, _, target = text.partition(":")
    if kind == "none" and not target:
        return None
    if kind not in RECOVERY_KINDS[1:] or not target:
        raise ParameterError(
            f"parameter 'recovery' = '{text}': expected none, trigger:<service> or franka_action:<action>"
        )
    if kind == "trigger":
        return TriggerRecovery(node, target)
    try:
        return FrankaActionRecovery(node, target)
    except ImportError:
        raise ParameterError(
            f"parameter 'recovery' = '{text}': franka_msgs is not installed here (it comes with franka_ros2 v2.x)"
        ) from None
