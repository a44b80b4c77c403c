"""What every part of an agent shares: the state configure makes, declared once.

``AgentNode`` is put together from rooms of one purpose, each a class of its own file
that reads and changes this state: the Episode server (``episode_server.py``), the
intake of step commands (``command_intake.py``), the control loop (``control_loop.py``),
the answers it sends (``answers.py``) and its status (``status.py``); ``agent_node.py``
keeps the lifecycle and the hooks. The rooms call each other only through the methods
declared here, so each can be read alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from rclpy.action import ActionServer
from rclpy.action.server import ServerGoalHandle
from rclpy.lifecycle import LifecycleNode
from rclpy.publisher import Publisher
from rclpy.subscription import Subscription
from rclpy.timer import Timer

from spin_decoupler_msgs.action import Episode
from spin_decoupler_msgs.msg import StepCommand
from spin_decoupler_ros.agent.diagnostics import AgentDiagnostics, Check
from spin_decoupler_ros.agent.parameters import AgentParameters, AgentSpaces
from spin_decoupler_ros.core.errors import RobotStoppedError
from spin_decoupler_ros.core.health import Figures, HealthThresholds
from spin_decoupler_ros.core.protocol import AgentProtocol, StepStart
from spin_decoupler_ros.core.think_time import WorldGate
from spin_decoupler_ros.core.timing import TickMonitor, WakeLatency


@dataclass
class EpisodeHandle:
    """An accepted Episode goal, kept until its episode ends."""

    goal_handle: ServerGoalHandle
    received_ns: int  # when the goal arrived: the reset's "command received" time


class AgentBase(LifecycleNode):
    """The state the rooms share (made by ``AgentNode``'s configure) and the methods by
    which one room asks another."""

    # -- made at construction ------------------------------------------------------------
    start_state: str
    transition_error: BaseException | None
    _given_spaces: AgentSpaces | None
    _agent_type: str
    _configured: bool
    _active: bool
    _kept_entities: set[int]
    _exit_timer: Timer

    # -- made by configure --------------------------------------------------------------
    params: AgentParameters
    health_thresholds: HealthThresholds
    observation_size: int
    _protocol: AgentProtocol
    _world: WorldGate
    _on_simulated_time: bool
    _self_clocked: bool  # simulates its plant on a clock of its own, under a timing model
    _waits_on_clock: bool  # on a lockstep simulator's clock, under a timing model
    _simulated_now_ns: int  # a self-clocked agent's time: its next tick
    # Arrived while the world runs on for the learner's think time: a step, a finish or a
    # new episode starts where the think time ends, never at the wall time it came
    # (test_timing_models.py::test_a_seeded_run_repeats_through_terminations_resets_and_a_resume).
    _waiting_command: StepCommand | None
    _waiting_goal: ServerGoalHandle | None
    _episodes: dict[bytes, EpisodeHandle]
    _current_step: StepStart | None
    _last_duration_ns: int  # the last observed action's, for the learner's think time
    _stopped_reason: str | None  # the robot stopped and a person must act
    _tick_monitor: TickMonitor
    _wake_latency: WakeLatency
    _diagnostics: AgentDiagnostics
    _feedback_msg: Episode.Feedback
    _control_timer: Timer
    _action_server: ActionServer
    _command_sub: Subscription
    _status_pub: Publisher
    _timing_pub: Publisher
    _description_pub: Publisher
    _alive_timer: Timer
    _ready_logged: bool
    _clock_ran_on_logged: bool
    _faulted_hold_logged: bool
    # status and refusal counts (status.py)
    _status_state: int
    _status_message: str
    _status_client: str
    _rejected: int
    _dropped: int  # commands for the running episode that its client did not send
    _dropped_said_at: float
    _dropped_published: int  # the count the last status carried
    _refusal_said: str
    _refusal_said_at: float
    _refusals_unsaid: int

    if TYPE_CHECKING:  # implemented by the rooms and AgentNode; AgentNode's bases resolve them

        def now_ns(self) -> int: ...
        def commitment_ns(self, now_ns: int) -> int: ...
        def build_observation(self) -> Sequence[float] | np.ndarray: ...
        def apply_action(self, action: np.ndarray) -> None: ...
        def reset_workspace(self, seed: int | None, options: np.ndarray) -> None: ...
        def reset_done(self) -> bool: ...
        def on_action_start(self, action: np.ndarray) -> None: ...
        def agent_reward(self) -> float | None: ...
        def safe_hold(self) -> None: ...
        def diagnostic_checks(self, figures: Figures) -> list[Check]: ...
        def world_waits(self) -> bool: ...
        def _commanded(self, now: int) -> None: ...
        def _exit(self) -> None: ...
        # control_loop.py
        def _log_ready(self) -> None: ...
        def _simulate(self) -> None: ...
        def _resume_world(self) -> None: ...
        def _hold_safely(self) -> None: ...
        def _call_hook(self, name: str, hook: Any, *args: Any) -> Any: ...
        def _robot_stopped(self, stop: RobotStoppedError) -> None: ...
        def _fault(self, hook: str, exc: BaseException) -> None: ...
        def _on_watchdog(self, now: int) -> None: ...
        # answers.py
        def _send_reset_observation(self, now: int) -> None: ...
        def _send_step_observation(self, now: int) -> bool: ...
        # command_intake.py
        def _begin_step(self, msg: StepCommand, now: int) -> None: ...
        def _drop_command(self, what: str) -> None: ...
        def _reject_step(self, episode_id: bytes, seq: int, reason: str) -> None: ...
        # episode_server.py
        def _begin_episode(self, goal_handle: ServerGoalHandle, now: int) -> None: ...
        def _finish(self, episode_id: bytes) -> None: ...
        def _end_episode(self, outcome: int, reason: str, *, needs_person: bool = False) -> None: ...
        def _complete(
            self, episode_id: bytes, outcome: int, steps: int, error: str, *, needs_person: bool = False
        ) -> None: ...
        # status.py
        def _set_status(self, state: int, message: str, client_id: str) -> None: ...
        def _publish_status(self, message: str) -> None: ...
        def _say_refusal(self, text: str) -> None: ...
