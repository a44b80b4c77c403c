"""Typed errors of the decoupler, shared by the RL side and the agent side.

Every failure a caller can meet has its own type, so RL code can tell an agent that
never came up from one that crashed mid-step or one that refused a bad action.
"""

from __future__ import annotations


class DecouplerError(Exception):
    """Base of every error raised by spin_decoupler."""


class AgentNotFoundError(DecouplerError):
    """No agent answered on the expected names within the connect timeout."""


class AgentConflictError(DecouplerError):
    """More than one agent answers in the namespace (a stray one from another run?)."""


class AgentBusyError(DecouplerError):
    """The agent refused the episode: it serves another RL client."""


class AgentInactiveError(AgentBusyError):
    """The agent refused the episode: it is not active (lifecycle), e.g. an operator
    deactivated it; it holds the robot until activated again."""


class StepTimeoutError(DecouplerError, TimeoutError):
    """An answer (reset observation, step observation, result) did not arrive in time."""


class AgentError(DecouplerError):
    """The agent answered with an error: a rejected step, or an episode it ended."""


class EpisodeEndedError(AgentError):
    """The agent ended the episode on its own (hook failure, watchdog, another client).

    ``outcome`` is the name of the Episode result outcome (for example ``"ABORTED"``).
    """

    def __init__(self, message: str, outcome: str) -> None:
        super().__init__(message)
        self.outcome = outcome


class RobotStoppedError(EpisodeEndedError):
    """The robot stopped on its own (a reflex, an emergency or user stop, a controller
    that went inactive) and the episode cannot go on.

    An agent hook raises it to end the episode with outcome ROBOT_STOPPED (and hold);
    the RL side receives it. ``needs_person``: the agent cannot recover the robot itself,
    a person must act (the message says what); otherwise the next reset recovers it.
    """

    def __init__(self, message: str, *, needs_person: bool = False) -> None:
        super().__init__(message, "ROBOT_STOPPED")
        self.needs_person = needs_person


class ActionSpaceError(DecouplerError, ValueError):
    """An action does not fit the agent's action space (length, NaN/inf, range)."""


class NotResetError(DecouplerError, RuntimeError):
    """step() was called with no episode running: call reset() first."""


class ParameterError(DecouplerError, ValueError):
    """A node parameter has a value outside its allowed range; the message names it."""
