"""What a Franka arm on franka_ros2 v2.4+ / v3.3+ does after an error, as the FR3 mock
models it: an enum and a table.

An FCI error (a reflex: a joint limit, a discontinuity, a collision) deactivates the
hardware component and the controllers that claimed its interfaces, and the robot state's
``robot_mode`` reads REFLEX. It comes back only through three steps, in order
(franka_hardware/doc/index.rst, v2.5.0 and v3.4.0):

1. the ``franka_msgs/action/ErrorRecovery`` action clears the error (``robot_mode`` IDLE);
2. controller_manager's ``set_hardware_component_state`` makes the hardware component
   active again (refused while the error stands);
3. its ``switch_controller`` activates the controllers (refused while the hardware is
   inactive); the arm follows trajectories again.

Pure Python; ``test_franka_hardware.py`` walks the table.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from spin_decoupler_ros.core.transitions import TransitionTable


class Hardware(enum.Enum):
    """Where the arm is between an error and following again; HARDWARE_NEXT its moves."""

    ACTIVE = "active"  # hardware and controllers active: the arm follows trajectories
    REFLEX = "reflex"  # an error: hardware and controllers inactive
    CLEARED = "cleared"  # the error recovered; the hardware still inactive
    HARDWARE_ACTIVE = "hardware active"  # the hardware active again; its controllers not yet


HARDWARE_NEXT: dict[Hardware, frozenset[Hardware]] = {
    Hardware.ACTIVE: frozenset(),
    Hardware.REFLEX: frozenset({Hardware.CLEARED}),
    Hardware.CLEARED: frozenset({Hardware.HARDWARE_ACTIVE}),
    Hardware.HARDWARE_ACTIVE: frozenset({Hardware.ACTIVE}),
}
# An error can come in any state.
HARDWARE = TransitionTable("HARDWARE_NEXT", "the Franka hardware", HARDWARE_NEXT, frozenset({Hardware.REFLEX}))

# FrankaRobotState.robot_mode in each state.
ROBOT_MODE_IDLE = 1
ROBOT_MODE_MOVE = 2
ROBOT_MODE_REFLEX = 4
ROBOT_MODE = {
    Hardware.ACTIVE: ROBOT_MODE_MOVE,
    Hardware.REFLEX: ROBOT_MODE_REFLEX,
    Hardware.CLEARED: ROBOT_MODE_IDLE,
    Hardware.HARDWARE_ACTIVE: ROBOT_MODE_IDLE,
}


@dataclass(frozen=True)
class Answer:
    """Whether a recovery step did what it was asked, and what it says."""

    ok: bool
    message: str


class FrankaHardware:
    """The arm's state between an error and following again, and the three steps."""

    def __init__(self) -> None:
        self.state = Hardware.ACTIVE
        self.error: str | None = None  # the libfranka error flag set (an Errors.msg field)

    @property
    def robot_mode(self) -> int:
        return ROBOT_MODE[self.state]

    @property
    def following(self) -> bool:
        return self.state is Hardware.ACTIVE

    def _go(self, to: Hardware) -> None:
        HARDWARE.check(self.state, to)
        self.state = to

    def reflex(self, error: str) -> None:
        """An FCI error: everything deactivated until the three steps are done."""
        self._go(Hardware.REFLEX)
        self.error = error

    def error_recovery(self) -> Answer:
        """Step 1, the ErrorRecovery action."""
        if self.state is not Hardware.REFLEX:
            return Answer(True, "no error to recover from")
        self._go(Hardware.CLEARED)
        self.error = None
        return Answer(True, "error recovered; the hardware is inactive until set_hardware_component_state")

    def activate_hardware(self) -> Answer:
        """Step 2, set_hardware_component_state to active."""
        if self.state is Hardware.REFLEX:
            return Answer(False, f"the robot is in error ({self.error}): run the error recovery first")
        if self.state is Hardware.CLEARED:
            self._go(Hardware.HARDWARE_ACTIVE)
        return Answer(True, "hardware component active")

    def activate_controllers(self) -> Answer:
        """Step 3, switch_controller activating the controllers."""
        if self.state in (Hardware.REFLEX, Hardware.CLEARED):
            return Answer(False, "the hardware component is inactive: its interfaces cannot be claimed")
        if self.state is Hardware.HARDWARE_ACTIVE:
            self._go(Hardware.ACTIVE)
        return Answer(True, "controllers active")
