"""A refused reset says why, even when the agent's status (which holds the reason) comes
after the refusal: the two travel on different topics."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from rclpy.action.client import ClientGoalHandle
from rclpy.task import Future
from unique_identifier_msgs.msg import UUID

from spin_decoupler_msgs.action import Episode
from spin_decoupler_msgs.msg import AgentStatus
from spin_decoupler_ros.core.errors import AgentBusyError, RobotStoppedError
from spin_decoupler_ros.rl import channel as channel_module
from spin_decoupler_ros.rl.channel import REFUSAL_STATUS_WAIT_S, AgentChannel
from spin_decoupler_ros.rl.client import RLNode


@pytest.fixture
def channel(ros_domain: dict[str, str]) -> Iterator[AgentChannel]:
    rl_node = RLNode("refusal_test")
    try:
        yield AgentChannel(rl_node.node, "/refusing")
    finally:
        rl_node.close()


def refuse(channel: AgentChannel) -> None:
    """The agent's answer to a reset: refused (as the action client hands it over)."""
    response = Episode.Impl.SendGoalService.Response(accepted=False)
    future: Future = Future()
    future.set_result(ClientGoalHandle(channel._action_client, UUID(), response))
    channel._goal_future = future
    channel._on_goal_response(future)


def test_a_refusal_waits_for_the_status_that_says_why(channel: AgentChannel) -> None:
    channel.status = AgentStatus(state=AgentStatus.RUNNING, message="episode running")  # (the one before)
    refuse(channel)
    assert channel.poll() is None  # not yet "another client": the reason is on its way
    reason = f"rejected an episode from '{channel.client_id}': the robot stopped: a person must act"
    channel._on_status(AgentStatus(state=AgentStatus.STOPPED, message=reason))
    with pytest.raises(RobotStoppedError, match="a person must act") as refused:
        channel.poll()
    assert refused.value.needs_person


class SteppedClock:
    """``time`` as the channel sees it, with a monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_a_refusal_no_status_explains_fails_once_the_wait_is_over(
    channel: AgentChannel, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = SteppedClock()
    monkeypatch.setattr(channel_module, "time", clock)
    channel.status = AgentStatus(state=AgentStatus.RUNNING, message="episode running", client_id="someone-else")
    refuse(channel)
    clock.now += REFUSAL_STATUS_WAIT_S * 0.99
    assert channel.poll() is None  # still waiting for the status that says why
    clock.now += REFUSAL_STATUS_WAIT_S * 0.02
    with pytest.raises(AgentBusyError, match="it serves client 'someone-else'"):
        channel.poll()
