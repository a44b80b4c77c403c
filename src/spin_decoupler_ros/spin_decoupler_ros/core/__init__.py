"""Pure logic of the decoupler (no rclpy): protocol state machine, timing, spaces, errors."""

from spin_decoupler_ros.core.errors import (
    ActionSpaceError,
    AgentBusyError,
    AgentConflictError,
    AgentError,
    AgentInactiveError,
    AgentNotFoundError,
    DecouplerError,
    EpisodeEndedError,
    NotResetError,
    ParameterError,
    RobotStoppedError,
    StepTimeoutError,
)
from spin_decoupler_ros.core.protocol import AgentProtocol, AgentState, CommandRejected, StepStart, TickEvent
from spin_decoupler_ros.core.spaces import ActionSpec
from spin_decoupler_ros.core.timing import ClockOffsetEstimator, TickMonitor, exchange_sample

__all__ = [
    "ActionSpaceError",
    "ActionSpec",
    "AgentBusyError",
    "AgentConflictError",
    "AgentError",
    "AgentInactiveError",
    "AgentNotFoundError",
    "AgentProtocol",
    "AgentState",
    "ClockOffsetEstimator",
    "CommandRejected",
    "DecouplerError",
    "EpisodeEndedError",
    "NotResetError",
    "ParameterError",
    "RobotStoppedError",
    "StepStart",
    "StepTimeoutError",
    "TickEvent",
    "TickMonitor",
    "exchange_sample",
]
