"""What the controller tests share: the Panda's profile, its workspace box, a 100 Hz
control period, and a controller at full acceleration share."""

from __future__ import annotations

from franka_agent.core.controller import ArmController
from franka_agent.core.limits import MotionLimits, WorkspaceBox
from franka_agent.core.profile_file import load_profile

PANDA = load_profile("panda")
BOX = WorkspaceBox(PANDA.workspace_low, PANDA.workspace_high)
PERIOD = 10_000_000  # 100 Hz
MS = 1_000_000


def controller(**kwargs: object) -> ArmController:
    return ArmController("ee_delta", MotionLimits(PANDA, acceleration_fraction=1.0), BOX, PERIOD, **kwargs)  # type: ignore[arg-type]
