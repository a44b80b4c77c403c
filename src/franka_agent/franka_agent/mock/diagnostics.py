"""The mock's /diagnostics status: its limit violations, the trajectories it took, refused
and ignored, and whether its controller follows (``MockArmHardware`` publishes it once a
wall second)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

if TYPE_CHECKING:
    from franka_agent.mock.mock_hardware_node import MockArmHardware


def mock_status(mock: MockArmHardware) -> DiagnosticStatus:
    level = DiagnosticStatus.OK if mock.violations == 0 and mock.stopped is None else DiagnosticStatus.ERROR
    if mock.stopped is not None:
        message = f"controller stopped: {mock.stopped}; {mock.recovery_hint}"
    else:
        message = "ok" if level == DiagnosticStatus.OK else f"{mock.violations} limit violations"
    return DiagnosticStatus(
        level=level,
        name=f"mock_hardware: {mock.profile.name}",
        hardware_id=f"mujoco_{mock.profile.name}",
        message=message,
        values=[
            KeyValue(key="limit_violations", value=str(mock.violations)),
            KeyValue(key="trajectories_received", value=str(mock.commands)),
            KeyValue(key="trajectories_refused", value=str(mock.refused)),
            KeyValue(key="trajectories_ignored_while_stopped", value=str(mock.ignored)),
            KeyValue(key="controller", value="stopped" if mock.stopped else "active"),
            KeyValue(key="sim_time", value=f"{mock.sim_time:.3f}"),
        ],
    )
