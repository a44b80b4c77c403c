"""Why an agent refused an episode, from the status it published just before refusing,
as the typed error the learner gets (test_channel_refusal.py)."""

from __future__ import annotations

from spin_decoupler_msgs.msg import AgentStatus
from spin_decoupler_ros.core.errors import AgentBusyError, AgentInactiveError, DecouplerError, RobotStoppedError


def status_explains_refusal(status: AgentStatus | None, client_id: str) -> bool:
    """Whether ``status`` says why this client's episode was refused: it names the client,
    or the agent is inactive or stopped."""
    return status is not None and (
        client_id in status.message or status.state in (AgentStatus.INACTIVE, AgentStatus.STOPPED)
    )


def refusal_reason(status: AgentStatus | None, client_id: str) -> str:
    if status_explains_refusal(status, client_id):
        assert status is not None
        return str(status.message)
    if status is not None and status.client_id and status.client_id != client_id:
        return f"it serves client '{status.client_id}'"
    return "it serves another client (see its status topic)"


def refusal_error(status: AgentStatus | None, client_id: str, agent_name: str) -> DecouplerError:
    """The error a refused reset fails with: a stopped robot needs a person; an inactive
    agent or one busy with another client says so."""
    message = f"agent {agent_name} refused the episode: {refusal_reason(status, client_id)}"
    state = status.state if status is not None else None
    if state == AgentStatus.STOPPED:
        return RobotStoppedError(message, needs_person=True)
    return (AgentInactiveError if state == AgentStatus.INACTIVE else AgentBusyError)(message)
