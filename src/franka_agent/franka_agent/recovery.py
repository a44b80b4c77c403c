"""How the Panda agent asks the robot to recover from a stop it made itself.

The parameter ``recovery`` names what the robot offers (docs/robot_stops.md):

- ``none``: nothing (franka_ros2 v0.1.0): a person must recover the robot;
- ``trigger:<service>``: a std_srvs/Trigger service (the MuJoCo mock's
  ``/mock_hardware/error_recovery``, or a site's own wrapper);
- ``franka_action:<action>``: franka_ros2 v2.x's ``franka_msgs/action/ErrorRecovery``
  (``/action_server/error_recovery``) alone; ``franka_msgs`` is imported only then, so
  the agent runs where it is not installed;
- ``franka_hardware:<action>``: franka_ros2 v2.4+ / v3.3+, where an error deactivates the
  hardware and its controllers: the action, then controller_manager's
  ``set_hardware_component_state`` (the profile's ``hardware_component`` to active), then
  its ``switch_controller`` (the profile's controller), each only after the one before
  succeeded (``controller_manager_msgs`` imported only then).

A call is started with ``start()`` and polled with ``poll()`` from the control loop,
which never blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from action_msgs.msg import GoalStatus
from rclpy.client import Client
from rclpy.node import Node
from rclpy.task import Future
from std_srvs.srv import Trigger

from franka_agent.core.profile import RobotProfile
from spin_decoupler_ros.action_clients import drop_orphaned_futures
from spin_decoupler_ros.core.errors import ParameterError

RECOVERY_KINDS = ("none", "trigger", "franka_action", "franka_hardware")
ACTIVE_STATE_ID = 3  # lifecycle_msgs/State.PRIMARY_STATE_ACTIVE
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


class ServiceRecovery:
    """One service call; ``judge`` turns its response into the outcome."""

    def __init__(self, node: Node, srv_type: Any, service: str, request: Any, judge: Callable[[Any], Outcome]) -> None:
        self.name = f"service {service}"
        self._client: Client = node.create_client(srv_type, service)
        self._request = request
        self._judge = judge
        self._future: Future | None = None

    def start(self) -> Outcome | None:
        if not self._client.service_is_ready():
            return Outcome(False, f"{self.name} is not available")
        self._future = self._client.call_async(self._request)
        return None

    def poll(self) -> Outcome | None:
        if self._future is None or not self._future.done():
            return None
        response = self._future.result()
        self._future = None
        if response is None:
            return Outcome(False, f"{self.name} gave no response")
        return self._judge(response)

    def cancel(self) -> None:
        self._future = None


def trigger_recovery(node: Node, service: str) -> ServiceRecovery:
    return ServiceRecovery(
        node,
        Trigger,
        service,
        Trigger.Request(),
        lambda response: Outcome(bool(response.success), str(response.message)),
    )


class SequenceRecovery:
    """Steps in order, each started once the one before succeeded; the first that fails
    is the outcome."""

    def __init__(self, steps: list[Recovery]) -> None:
        self.steps = steps
        self.name = " then ".join(step.name for step in steps)
        self._index = 0
        self._said: list[str] = []

    def start(self) -> Outcome | None:
        self._index, self._said = 0, []
        return self._start_current()

    def _start_current(self) -> Outcome | None:
        failed = self.steps[self._index].start()
        return None if failed is None else Outcome(False, f"{self.steps[self._index].name}: {failed.message}")

    def poll(self) -> Outcome | None:
        step = self.steps[self._index]
        outcome = step.poll()
        if outcome is None:
            return None
        if not outcome.succeeded:
            return Outcome(False, f"{step.name}: {outcome.message}")
        self._said.append(outcome.message)
        self._index += 1
        if self._index == len(self.steps):
            return Outcome(True, "; ".join(self._said))
        return self._start_current()

    def cancel(self) -> None:
        self.steps[self._index].cancel()


def franka_hardware_recovery(node: Node, action: str, profile: RobotProfile) -> SequenceRecovery:
    """franka_ros2 v2.4+'s three steps (docs/robot_stops.md), on the profile's names."""
    from controller_manager_msgs.srv import (  # type: ignore[import-not-found,unused-ignore]
        SetHardwareComponentState,
        SwitchController,
    )

    manager = profile.recovery.controller_manager.rstrip("/")
    hardware = SetHardwareComponentState.Request(name=profile.recovery.hardware_component)
    hardware.target_state.id = ACTIVE_STATE_ID
    hardware.target_state.label = "active"
    switch = SwitchController.Request(
        activate_controllers=[profile.controller.name], strictness=SwitchController.Request.STRICT
    )
    return SequenceRecovery(
        [
            FrankaActionRecovery(node, action),
            ServiceRecovery(
                node,
                SetHardwareComponentState,
                f"{manager}/set_hardware_component_state",
                hardware,
                lambda response: Outcome(bool(response.ok), f"{hardware.name} {response.state.label or 'not active'}"),
            ),
            ServiceRecovery(
                node,
                SwitchController,
                f"{manager}/switch_controller",
                switch,
                lambda response: Outcome(
                    bool(response.ok), str(getattr(response, "message", "")) or f"{profile.controller.name} switched"
                ),
            ),
        ]
    )


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


def make_recovery(node: Node, text: str, profile: RobotProfile) -> Recovery | None:
    """The recovery the parameter ``recovery`` names (None for ``none``), on the names of
    the arm's ``profile``; ParameterError naming the parameter for anything else."""
    kind, _, target = text.partition(":")
    if kind == "none" and not target:
        return None
    if kind not in RECOVERY_KINDS[1:] or not target:
        raise ParameterError(
            f"parameter 'recovery' = '{text}': expected none, trigger:<service>, franka_action:<action> or "
            "franka_hardware:<action>"
        )
    if kind == "trigger":
        return trigger_recovery(node, target)
    try:
        if kind == "franka_hardware":
            return franka_hardware_recovery(node, target, profile)
        return FrankaActionRecovery(node, target)
    except ImportError as missing:
        raise ParameterError(
            f"parameter 'recovery' = '{text}': {missing.name} is not installed here (franka_msgs comes with "
            "franka_ros2 v2.x, controller_manager_msgs with ros2_control)"
        ) from None
