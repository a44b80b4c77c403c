"""The control loop: a timer that commands the plant every period, between RL steps as
through them, observes where a step's duration ends, holds when the learner is silent,
and keeps running whatever a hook does (a hook that raises ends the episode and holds).
A self-clocked agent runs its ticks back to back on its own clock while its world runs.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from rclpy.timer import Timer

from spin_decoupler_msgs.action import Episode
from spin_decoupler_msgs.msg import AgentStatus, StepCommand
from spin_decoupler_ros.agent.agent_base import AgentBase
from spin_decoupler_ros.core.errors import RobotStoppedError
from spin_decoupler_ros.core.protocol import AgentState, TickEvent
from spin_decoupler_ros.core.timing import ns_to_seconds

# A self-clocked agent simulates ticks back to back for at most this long (wall) per
# callback, so commands, cancels and goals are taken in between.
SIMULATION_SLICE_S = 0.002


def rephase_timer(timer: Timer, period_ns: int, lead_ns: int) -> None:
    """Make ``timer``'s next tick due ``period_ns - lead_ns`` from now, then every
    ``period_ns`` after it: so that it *runs* one period from now, its callbacks running
    ``lead_ns`` (see WakeLatency) after they are due. rcl's reset counts from now with
    the period at that moment, and every later call adds the period it has then."""
    timer.timer_period_ns = period_ns - lead_ns
    timer.reset()
    timer.timer_period_ns = period_ns


class ControlLoop(AgentBase):
    """Runs the control ticks."""

    def _log_ready(self) -> None:
        self._ready_logged = True
        spec = self._protocol.spec
        self.get_logger().info(
            f"agent ready: action size {spec.size}, observation size {self.observation_size}, "
            f"rl_timestep {ns_to_seconds(self.params.rl_timestep_ns):g} s, "
            f"control period {ns_to_seconds(self.params.control_period_ns) * 1e3:g} ms, "
            f"watchdog {ns_to_seconds(self.params.watchdog_ns):g} s, "
            f"timing model {self.params.timing_model.describe()}"
        )

    def _on_control_timer(self) -> None:
        if self._self_clocked:
            self._simulate()
            return
        if not self._ready_logged and self._active:  # said from the loop itself: ready means running
            self._log_ready()
        now = self.now_ns()
        self._note_period(now, self._tick_monitor.on_tick(now))
        if not self._on_simulated_time:
            # On wall time, how late this tick ran (the timer already counts from its next
            # due time). On simulated time a tick runs when /clock reaches it: nothing to learn.
            until_next = self._control_timer.time_until_next_call()
            if until_next is not None:
                self._wake_latency.on_tick(self.params.control_period_ns - until_next)
        self._control_step(now)

    def _simulate(self) -> None:
        """A self-clocked agent's ticks, back to back while its world runs (for one slice
        of wall time at most); the timer stops when the world waits."""
        period = self.params.control_period_ns
        slice_end = time.monotonic() + SIMULATION_SLICE_S
        while True:
            now = self._simulated_now_ns
            self._note_period(now, self._tick_monitor.on_tick(now))
            if not self._control_step(now):
                self._control_timer.cancel()
                return
            self._simulated_now_ns = now + period
            if time.monotonic() >= slice_end:
                return

    def _note_period(self, now: int, period: int | None) -> None:
        if period is not None:
            self._diagnostics.window.on_period(now, period, period > self._tick_monitor.late_threshold_ns)

    def _resume_world(self) -> None:
        if self._self_clocked and self._control_timer.is_canceled():
            self._control_timer.reset()

    def _control_step(self, now: int) -> bool:
        """One control tick at ``now``; False when the world waits there for the learner
        (nothing was applied: the tick is to be run again when it may go on)."""
        protocol = self._protocol
        goal = self._waiting_goal
        if goal is not None and self._world.may_start(now):
            self._waiting_goal = None
            self._begin_episode(goal, now)  # the reset's first tick is this one (below)
        command = self._waiting_command
        if command is not None and self._world.may_start(now):
            self._waiting_command = None
            if command.kind == StepCommand.FINISH:
                self._finish(bytes(command.episode_id.uuid))
            else:
                self._begin_step(command, now)  # applies the new action for this tick
            return True
        if protocol.state is AgentState.AFTER_RESET:
            # The reset hook drives the plant until it reports done.
            done = self._call_hook("reset_done", self.reset_done)
            self._commanded(now)
            if done:
                self._send_reset_observation(now)
                return self._world.may_run(now)
            return True
        if self._self_clocked and protocol.state is AgentState.IDLE:
            return False  # no episode: a paused simulation holds
        event = protocol.on_tick(now)
        observed = False
        if event is TickEvent.OBSERVE:
            observed = self._send_step_observation(now)  # first: the RL side is waiting for it
            if observed:
                self._world.observed(now)
                step = self._current_step
                if step is not None and step.then_action is not None:  # it runs from here on
                    self._call_hook("on_action_start", self.on_action_start, step.then_action)
        elif event is TickEvent.WATCHDOG:
            self._on_watchdog(now)
        if self._waits_on_clock:
            runs = protocol.state is AgentState.EXECUTING or self._world.may_commit(self.commitment_ns(now))
            if not runs:
                self._check_the_clock_waits(now)
        else:
            runs = self._world.may_run(now) or protocol.state is AgentState.EXECUTING
        if runs:
            self._apply_current()
            self._commanded(now)
        if observed and self._timing_pub.get_subscription_count() > 0:
            # After the commands, and only for a listener: it is for logs (the client
            # has each step's timing in its answer).
            self._timing_pub.publish(self._feedback_msg.timing)
        return runs

    def _check_the_clock_waits(self, now: int) -> None:
        """Say once if the simulator's clock runs on although the world waits for the
        learner: it is not lockstep, and think times are the machine's, not the model's."""
        until = self._world.waits_from_ns
        if until is None or self._clock_ran_on_logged:
            return
        if now > until + self.params.control_period_ns:
            self._clock_ran_on_logged = True
            self.get_logger().error(
                f"timing model {self.params.timing_model.describe()}: the simulator's clock ran on past "
                f"{ns_to_seconds(now - until):.3f} s after where the world waits for the learner; it does not "
                "wait for commands (the Panda mock waits with lockstep: true and lockstep_timeout: 0), so think "
                "times are longer than the model's"
            )

    def _apply_current(self) -> None:
        action = self._protocol.active_action
        if action is not None:
            self._call_hook("apply_action", self.apply_action, action)
        else:
            self._hold_safely()

    def _hold_safely(self) -> None:
        try:
            self.safe_hold()
            self._faulted_hold_logged = False
        except Exception as exc:
            if not self._faulted_hold_logged:
                self.get_logger().error(f"safe_hold raised {type(exc).__name__}: {exc}; retrying every tick")
                self._faulted_hold_logged = True

    def _call_hook(self, name: str, hook: Any, *args: Any) -> Any:
        """Run a user hook; if it raises, abort the episode, hold, and keep the loop alive."""
        try:
            return hook(*args)
        except RobotStoppedError as stop:
            self._robot_stopped(stop)
            return None
        except Exception as exc:
            self._fault(name, exc)
            return None

    def _fault(self, hook: str, exc: BaseException) -> None:
        text = f"{hook} raised {type(exc).__name__}: {exc}"
        self.get_logger().error(f"{text}; aborting the episode and holding\n{traceback.format_exc()}")
        self._end_episode(Episode.Result.ABORTED, text)
        self._set_status(AgentStatus.FAULT, f"{text}; holding until the next reset", "")
        self._hold_safely()

    def _robot_stopped(self, stop: RobotStoppedError) -> None:
        """The plant stopped on its own (a hook said so): end the episode with outcome
        ROBOT_STOPPED and hold. If a person must act, refuse episodes until the agent is
        activated again (test_robot_stops.py holds these rules)."""
        text = str(stop)
        if stop.needs_person:
            name = self.get_fully_qualified_name()
            text += (
                f"; then bring the agent back: ros2 lifecycle set {name} deactivate, then ros2 lifecycle set "
                f"{name} activate (episodes are refused until then)"
            )
        self.get_logger().error(f"robot stopped: {text}")
        self._end_episode(Episode.Result.ROBOT_STOPPED, text, needs_person=stop.needs_person)
        if stop.needs_person:
            self._stopped_reason = text
            self._set_status(AgentStatus.STOPPED, text, "")
        else:
            self._set_status(AgentStatus.FAULT, f"{text}; holding until the next reset", "")
        self._hold_safely()

    def _on_watchdog(self, now: int) -> None:
        episode = self._protocol.episode
        client = episode.client_id if episode else ""
        message = (
            f"RL client '{client}' silent for {ns_to_seconds(self.params.watchdog_ns):g} s "
            "(watchdog): holding position; its next step resumes the episode, or another client may reset"
        )
        self.get_logger().warning(message)
        self._set_status(AgentStatus.HOLDING, message, client)
