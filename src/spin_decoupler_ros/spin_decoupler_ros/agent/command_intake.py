"""Step commands in: each is checked to come from the running episode's client (its
HMAC tag under the episode's key, not a copy of one taken), then started at once or
where the learner's think time ends, or refused by name on the episode's feedback and
the status topic. Starting a step applies its action and re-phases the control loop to
the action's start."""

from __future__ import annotations

import time

import numpy as np

from spin_decoupler_msgs.action import Episode
from spin_decoupler_msgs.msg import AgentStatus, StepCommand
from spin_decoupler_ros.agent.agent_base import AgentBase
from spin_decoupler_ros.agent.control_loop import rephase_timer
from spin_decoupler_ros.contract import COMMAND_QOS
from spin_decoupler_ros.conversions import duration_to_ns, ns_to_time
from spin_decoupler_ros.core.auth import command_tag, tags_match
from spin_decoupler_ros.core.protocol import AgentState, CommandRejected, StepStart
from spin_decoupler_ros.core.timing import ns_to_seconds


class CommandIntake(AgentBase):
    """Takes step commands from the ``step_command`` topic."""

    def _make_command_intake(self) -> None:
        """The ``step_command`` subscription (at configure)."""
        self._command_sub = self.create_subscription(StepCommand, "step_command", self._on_step_command, COMMAND_QOS)

    def _on_step_command(self, msg: StepCommand) -> None:
        now = self.now_ns()
        episode_id = bytes(msg.episode_id.uuid)
        if not self._authentic(msg, episode_id):
            return
        for name, stamp in (("duration", msg.duration), ("sent_at", msg.sent_at)):
            if stamp.nanosec >= 1_000_000_000:
                self._reject_step(
                    episode_id, msg.seq, f"{name}.nanosec = {stamp.nanosec} is not below 1e9 (a malformed time field)"
                )
                return
        if msg.kind == StepCommand.STEP:
            if self._world.may_start(now):
                self._begin_step(msg, now)
                if self._self_clocked and not self._control_timer.is_canceled():
                    # The step's ticks at once, in this callback: a short step is answered
                    # without another round of the executor for the timer.
                    self._simulate()
            elif self._waiting_command is not None:
                waiting = self._waiting_command.seq
                self._reject_step(episode_id, msg.seq, f"step {msg.seq} came while step {waiting} waits to start")
            else:  # the world runs on for the think time the model drew; then it starts
                self._waiting_command = msg
        elif msg.kind == StepCommand.FINISH:
            if self._world.may_start(now):
                self._waiting_command = None
                self._finish(episode_id)
            else:  # the action runs on for the think time, as before a step; then the hold
                self._waiting_command = msg
        else:
            self._reject_step(episode_id, msg.seq, f"unknown command kind {msg.kind}: expected STEP (0) or FINISH (1)")

    def _authentic(self, msg: StepCommand, episode_id: bytes) -> bool:
        """Whether a command naming the running episode comes from its client: tagged
        under the episode's key, and not a copy of a step already taken. Anything else is
        dropped and counted, never answered on the client's feedback nor executed
        (test_faults.py::test_an_episode_belongs_to_its_client). A command naming no
        running episode goes on, to be refused on the status topic."""
        episode = self._protocol.episode
        if episode is None or episode.episode_id != episode_id:
            return True
        action = np.asarray(msg.action, dtype=np.float64)
        then_action = np.asarray(msg.then_action, dtype=np.float64)
        expected = command_tag(
            episode.key, msg.kind, episode_id, msg.seq, action, msg.duration.sec, msg.duration.nanosec, then_action
        )
        if not tags_match(expected, bytes(msg.tag)):
            self._drop_command(f"a command for the running episode that its client did not sign (seq {msg.seq})")
            return False
        waiting = self._waiting_command
        if msg.kind == StepCommand.STEP and (
            msg.seq <= episode.steps or (waiting is not None and waiting.seq == msg.seq and waiting.tag == msg.tag)
        ):
            self._drop_command(f"a copy of step {msg.seq}, already taken")
            return False
        return True

    def _drop_command(self, what: str) -> None:
        self._dropped += 1
        self.get_logger().warning(f"dropped {what}", throttle_duration_sec=1.0)
        wall = time.monotonic()
        if wall - self._dropped_said_at >= 1.0:  # (a flood of them must not flood the status topic)
            self._dropped_said_at = wall
            self._publish_status(f"dropped {what}")

    def _begin_step(self, msg: StepCommand, now: int) -> None:
        episode_id = bytes(msg.episode_id.uuid)
        try:
            step = self._protocol.start_step(
                episode_id, msg.seq, msg.action, duration_to_ns(msg.duration), now, msg.then_action
            )
        except CommandRejected as exc:
            self._reject_step(episode_id, msg.seq, str(exc))
            return
        self._world.start_ns(now)
        lat_s = ns_to_seconds(step.lat_ns)
        self._diagnostics.window.on_step(lat_s, lat_s - ns_to_seconds(self._last_duration_ns))
        self._start_step(step, now)
        self._commanded(now)
        if self._self_clocked:  # the start applied the action for this tick's period
            self._simulated_now_ns = now + self.params.control_period_ns
        self._resume_world()

    def _start_step(self, step: StepStart, now: int) -> None:
        self._current_step = step
        if self._status_state != AgentStatus.RUNNING:
            episode = self._protocol.episode
            self._set_status(AgentStatus.RUNNING, "RL client is back: running", episode.client_id if episode else "")
        # The action starts now, not at the next tick: run a control step for it and
        # re-phase the timer so its ticks (and the observation) count from this instant.
        # (A self-clocked agent's ticks fall on its own grid, where actions start.)
        if not self._self_clocked:
            rephase_timer(self._control_timer, self.params.control_period_ns, self._wake_latency.lead_ns)
        self._tick_monitor.on_tick(now, scheduled=False)
        self._call_hook("on_action_start", self.on_action_start, step.action)
        if self._protocol.state is AgentState.EXECUTING:  # not if the hook just failed
            self._call_hook("apply_action", self.apply_action, step.action)

    def _reject_step(self, episode_id: bytes, seq: int, reason: str) -> None:
        self._rejected += 1
        episode = self._protocol.episode
        handle = self._episodes.get(episode_id) if episode and episode.episode_id == episode_id else None
        self.get_logger().warning(f"rejected a command: {reason}", throttle_duration_sec=1.0)
        if handle is not None:
            feedback = Episode.Feedback()
            feedback.step.seq = seq
            feedback.step.error = reason
            feedback.step.ato = ns_to_time(self.now_ns())
            handle.goal_handle.publish_feedback(feedback)
        # Always say it on the status topic too: a client with no episode has no feedback.
        self._publish_status(f"rejected a command: {reason}")
