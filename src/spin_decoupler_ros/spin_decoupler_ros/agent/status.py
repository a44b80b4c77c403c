"""The agent's status: what it is doing, latched on ``status`` with its refusal and drop
counts, its liveliness (how the RL side tells a dead agent from a live one), its
refusals said in its log without flooding it, and its statuses for /diagnostics."""

from __future__ import annotations

import time

from rclpy.clock import Clock, ClockType

from spin_decoupler_msgs.msg import AgentStatus
from spin_decoupler_ros.agent.agent_base import AgentBase
from spin_decoupler_ros.agent.diagnostics import Check
from spin_decoupler_ros.contract import AGENT_ALIVE_EVERY_S, STATUS_QOS
from spin_decoupler_ros.core.health import Figures, LearnerState, assess_control_loop, assess_learner

# The same refusal (a client retrying while the agent is paused) is logged at most this
# often, with a count (test_lifecycle.py).
REFUSAL_LOG_EVERY_S = 10.0

# What /diagnostics says of the learner, from the agent's status.
LEARNER_STATES = {
    AgentStatus.IDLE: LearnerState.IDLE,
    AgentStatus.RUNNING: LearnerState.RUNNING,
    AgentStatus.HOLDING: LearnerState.HOLDING,
    AgentStatus.FAULT: LearnerState.FAULT,
    AgentStatus.INACTIVE: LearnerState.INACTIVE,
    AgentStatus.STOPPED: LearnerState.ROBOT_STOPPED,
    AgentStatus.OFFLINE: LearnerState.INACTIVE,
}


class StatusReporting(AgentBase):
    """Publishes the agent's status and says its refusals."""

    def _make_status(self) -> None:
        """The status topic, its liveliness and the counts it carries (at configure)."""
        self._status_state = -1
        self._status_message = ""
        self._status_client = ""
        self._rejected = 0
        self._refusal_said, self._refusal_said_at, self._refusals_unsaid = "", 0.0, 0  # (_say_refusal)
        self._dropped = 0
        self._dropped_said_at = -1.0
        self._dropped_published = 0
        self._status_pub = self.create_publisher(AgentStatus, "status", STATUS_QOS)
        self._alive_timer = self.create_timer(
            AGENT_ALIVE_EVERY_S, self._status_pub.assert_liveliness, clock=Clock(clock_type=ClockType.STEADY_TIME)
        )

    def _set_status(self, state: int, message: str, client_id: str) -> None:
        if state == self._status_state and message == self._status_message:
            return
        self._status_state = state
        self._status_message = message
        self._status_client = client_id
        self._publish_status(message)

    def _publish_status(self, message: str) -> None:
        if self._status_state == AgentStatus.STOPPED and message != self._status_message:
            message = f"{message}; {self._status_message}"  # what a person must do stays said
        self._dropped_published = self._dropped
        self._status_pub.publish(
            AgentStatus(
                state=max(self._status_state, 0),
                client_id=self._status_client,
                message=message,
                stamp=self.get_clock().now().to_msg(),
                rejected_commands=self._rejected,
                dropped_commands=self._dropped,
            )
        )

    def _say_refusal(self, text: str) -> None:
        """Log a refusal: a new one at once; the same one again (a client retrying while
        the agent is paused) at most every REFUSAL_LOG_EVERY_S, with how many there were."""
        now = time.monotonic()
        if text == self._refusal_said and now - self._refusal_said_at < REFUSAL_LOG_EVERY_S:
            self._refusals_unsaid += 1
            return
        again = (
            f" ({self._refusals_unsaid} more like it since)"
            if text == self._refusal_said and self._refusals_unsaid
            else ""
        )
        self.get_logger().warning(text + again)
        self._refusal_said, self._refusal_said_at, self._refusals_unsaid = text, now, 0

    def _health_checks(self, figures: Figures) -> list[Check]:
        """The base's statuses for /diagnostics (core/health.py holds the rules). Also,
        once a period, the status topic catches up with drops its throttle left unsaid."""
        if self._dropped != self._dropped_published:
            self._publish_status(self._status_message)
        thresholds = self.health_thresholds
        values = figures.key_values()
        level, text = assess_control_loop(figures, thresholds, waiting=self.world_waits())
        checks = [Check("control loop", level, text, tuple(values[:4]))]
        level, text = assess_learner(LEARNER_STATES.get(self._status_state, LearnerState.IDLE), figures, thresholds)
        about = (("client", self._status_client or "-"), ("status", self._status_message))
        checks.append(Check("learner", level, text, (*about, *values[4:])))
        checks.extend(self.diagnostic_checks(figures))
        return checks
