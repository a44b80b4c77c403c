"""PandaAgent: the decoupler's agent for a Franka Emika Panda driven through franka_ros2.

It talks to the arm exactly as an outside node talks to franka_ros2 v0.1.0: joint
state in from ``/franka/joint_states`` (or ``/joint_states``), short trajectories out
to ``/joint_trajectory_controller/joint_trajectory``. It cannot tell the MuJoCo mock
from the real arm, and does not try.

Action (``action_mode``):
  - ``ee_delta`` (default, 3 values in [-1, 1]): move the hand's TCP target by up to
    ``max_ee_step`` m per axis from where the commanded TCP is; the TCP reference
    moves there in a straight line within ``cartesian_speed`` and
    ``cartesian_acceleration`` and never leaves the workspace box (less
    ``workspace_margin``), and differential IK turns it into joint goals;
  - ``joint_delta`` (7 values): move each joint by up to ``max_joint_step`` rad
    (scaled back if the TCP would leave the box).
  Every control period the joint reference moves towards its goal within the joint
  position, velocity and acceleration limits (``velocity_fraction``,
  ``acceleration_fraction`` of the Panda's, ``joint_margin`` from its stops), and the
  agent sends the next ``trajectory_points`` periods of it, positions and velocities,
  then the reference braking to rest: the controller interpolates smoothly, rides out a
  late tick, and, if the agent falls silent, stops the arm within the limits.
Observation (17 values): joint positions (7, rad), joint velocities (7, rad/s), TCP
  position (3, m, base frame), from the latest joint state.
Safe null action: zero displacement: the reference brakes within the limits and holds.
Reset: the arm moves home (plus ``reset_noise`` drawn from the episode's seed, or the 7
  joint positions given as reset options) along the same limited reference; the reset
  observation goes out once it has settled.
Stops the arm makes itself (a reflex, a stop, a controller that went inactive): joint
  states still over ``stop_window`` of their stamps while the commands move end the
  episode (outcome ROBOT_STOPPED) and the agent holds; the next reset first calls the
  robot's error recovery (``recovery``), or, where there is none or it fails, the agent
  says what a person must do and refuses episodes until it is activated again
  (docs/robot_stops.md; test_robot_stops.py).
"""

from __future__ import annotations

import signal
import sys
import time

import numpy as np
from builtin_interfaces.msg import Duration
from rclpy.serialization import deserialize_message, serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from franka_agent.core import panda
from franka_agent.core.controller import DEFAULT_COMMAND_LEAD, Command, PandaController, lead_periods_for
from franka_agent.core.limits import MotionLimits, WorkspaceBox
from franka_agent.core.motion import ACTION_MODES
from franka_agent.core.stops import StopDetector
from franka_agent.recovery import PERSON_MUST_ACT, Outcome, Recovery, make_recovery
from spin_decoupler_ros.agent import AgentNode, AgentSpaces, LatestMessage, sensor_qos
from spin_decoupler_ros.agent.diagnostics import Check
from spin_decoupler_ros.conversions import float64_field, set_stamp, time_to_ns
from spin_decoupler_ros.core.errors import ParameterError, RobotStoppedError
from spin_decoupler_ros.core.health import Figures, Level, assess_state_age
from spin_decoupler_ros.core.timing import ns_to_seconds, seconds_to_ns
from spin_decoupler_ros.node_runner import run_node
from spin_decoupler_ros.params import declare_float, declare_float_list, declare_int, declare_str
from spin_decoupler_ros.qos_events import no_publisher_events

STATE_QOS = sensor_qos(depth=8)  # a few kept, should other joints share the topic
# Wall seconds without commands after a stall, while what the agent hears catches up.
STALL_QUIET_S = 0.02
STALL_QUIET_MAX_S = 0.2
# After a stop, at least this long: the first command sent right after a 1 s stop once
# took 100 ms to reach the controller (DDS catching up), several times the lead.
STOPPED_QUIET_S = 0.15
# The warning when the process was stopped (SIGSTOP) between a command's last check and
# its leaving; the tests match it.
STOPPED_WHILE_SENDING = "the agent was stopped while sending a command"
# Where the world waits for the agent: how long a tick waits for the joint state stamped
# at its time (published before the /clock that made the tick, on another topic), polling.
STATE_AT_TICK_WAIT_S = 0.5
STATE_POLL_S = 0.0002
OBSERVATION_NAMES = (
    *(f"q{i}" for i in range(1, 8)),
    *(f"dq{i}" for i in range(1, 8)),
    "ee_x",
    "ee_y",
    "ee_z",
)


class PandaAgent(AgentNode):
    # A command lets a lockstep mock run to its first point: the next tick's (a point of
    # the command before), or a lead ahead (the first after a rest or a re-plan).
    reports_commitments = True
    # Between steps the arm runs the step's action on, every command braking to rest at
    # its end; a plan restarted at the observation is not measured against the limits and
    # the lockstep commitments (test_panda.py::test_the_panda_refuses_a_then_action).
    then_action_refusal = (
        "the Panda agent runs each step's action on until the next step; a second action starting at the "
        "observation is not measured against its limits and lockstep commitments"
    )

    def __init__(self) -> None:
        super().__init__("panda_agent")

    def setup(self) -> None:
        """The arm's state, its topics, and first-call costs paid before the first tick."""
        self._q: np.ndarray | None = None
        self._dq = np.zeros(panda.DOF)
        self._state_ns = 0
        self._state_wall: float | None = None  # monotonic time the newest state was taken in
        self._order: list[int] = []  # where panda_joint1..7 are in messages named like
        self._order_names: list[str] | None = None  # this (the arm's last message)
        self._reset_started_ns: int | None = None
        # On simulated time, commands are stamped with the newest /clock that has arrived,
        # read at the tick: the node's clock can lag it (a backlog of /clock messages after
        # a stall or on a starved core, each making a tick due), and a command stamped
        # with a stale time reaches the controller late for its own points.
        self._clock_reader = LatestMessage(self, Clock, "/clock") if self.get_parameter("use_sim_time").value else None
        self._newest_clock_ns = 0
        self._state_stamp_ns = 0  # the time the latest joint state refers to (its stamp)
        # Where the world waits for the agent: arm states stamped after the tick that took
        # them (for later ticks), and the step between the topic's stamps (see _decode_state).
        self._ahead_states: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._state_grid_ns = 0
        self._quiet_until = 0.0  # monotonic time until which nothing is sent (after a stall)
        self._continued_at = 0.0  # monotonic time of the last SIGCONT
        self._settled_stop_at = 0.0  # the SIGCONT after which commanding was made safe again
        # The simulated clock's pace against the wall (s/s) and the last tick's (wall, newest
        # clock): after a stop, how far the clock should have got, to tell a stale reading.
        self._clock_pace = 0.0
        self._last_tick: tuple[float, int] | None = None
        self._stopped_at: tuple[float, int] | None = None
        signal.signal(signal.SIGCONT, self._on_continued)
        self._trajectory = JointTrajectory(joint_names=list(panda.JOINT_NAMES))
        self._points: list[JointTrajectoryPoint] = []  # made once, filled for each command
        # First-call costs now, before the first tick (the message is filled, not sent).
        self._fill_message(self.controller.warm_up())
        deserialize_message(serialize_message(JointState()), JointState)
        deserialize_message(serialize_message(Clock()), Clock)
        # High-rate state (1 kHz on the robot), best effort: never spun, the newest of the
        # arm's is taken and decoded when a tick needs it (a callback per message cost the
        # loop more than its ticks did); a few kept, should other joints share the topic.
        # Commands reliable.
        self._joint_state_reader = LatestMessage(self, JointState, self.joint_states_topic, STATE_QOS)
        self._command_pub = self.create_publisher(
            JointTrajectory, self.command_topic, 10, event_callbacks=no_publisher_events()
        )
        window_ns = seconds_to_ns(self.stop_window)
        self._stops = StopDetector(window_ns) if window_ns > 0 else None
        self._stop_pending: str | None = None  # a stop seen: the next reset recovers first
        self._recovery: Recovery | None = make_recovery(self, self.recovery_name)
        self._recovering: tuple[float, int | None, np.ndarray] | None = None  # (started, seed, options)
        self._recovered_unproven = False  # recovered, the arm not yet seen following

    def configure(self) -> AgentSpaces:
        mode = declare_str(self, "action_mode", "ee_delta", "what an action means", choices=ACTION_MODES)
        limits = MotionLimits(
            velocity_fraction=declare_float(
                self, "velocity_fraction", 0.5, "share of the Panda's velocity limits", low=0.01, high=1.0
            ),
            acceleration_fraction=declare_float(
                self, "acceleration_fraction", 0.5, "share of the Panda's acceleration limits", low=0.01, high=1.0
            ),
            joint_margin=declare_float(
                self, "joint_margin", 0.05, "distance kept from the joint limits", unit="rad", low=0.0, high=0.4
            ),
        )
        rate = 1e9 / self.params.control_period_ns
        if rate > limits.max_control_rate() * 1.0001:
            allowed = limits.acceleration_fraction * limits.max_control_rate() / rate
            raise ParameterError(
                f"parameter 'acceleration_fraction' = {limits.acceleration_fraction:g} would let the commands' jerk "
                f"exceed the Panda's limits at control_rate {rate:g} Hz; allowed at this rate: "
                f"acceleration_fraction <= {allowed:.3g}"
            )
        low = declare_float_list(self, "workspace_low", [0.2, -0.45, 0.05], "workspace box lower corner (m)")
        high = declare_float_list(self, "workspace_high", [0.75, 0.45, 0.8], "workspace box upper corner (m)")
        margin = declare_float(
            self, "workspace_margin", 0.02, "targets stay this far inside the box", unit="m", low=0.0, high=0.2
        )
        try:
            box = WorkspaceBox(np.array(low), np.array(high))
            box.shrunk(margin)
        except ValueError as exc:
            raise ParameterError(f"workspace parameters: {exc}") from None
        motion_options = {
            "box_margin": margin,
            "max_ee_step": declare_float(
                self, "max_ee_step", 0.03, "largest TCP move per axis per step", unit="m", low=0.001, high=0.2
            ),
            "max_joint_step": declare_float(
                self, "max_joint_step", 0.15, "largest joint move per step", unit="rad", low=0.001, high=0.5
            ),
            "cartesian_speed": declare_float(
                self, "cartesian_speed", 0.3, "TCP speed limit per axis", unit="m/s", low=0.01, high=1.7
            ),
            "cartesian_acceleration": declare_float(
                self, "cartesian_acceleration", 2.0, "TCP acceleration limit per axis", unit="m/s^2", low=0.1, high=13.0
            ),
        }
        reset_noise = declare_float(
            self, "reset_noise", 0.1, "noise added to home at each reset (seeded)", unit="rad", low=0.0, high=0.5
        )
        self.reset_timeout = declare_float(
            self, "reset_timeout", 15.0, "longest a reset may take", unit="s", low=0.1, high=600.0
        )
        self.state_timeout = declare_float(
            self, "state_timeout", 0.5, "oldest joint state still usable", unit="s", low=0.001, high=60.0
        )
        command_lead = declare_float(
            self,
            "command_lead",
            DEFAULT_COMMAND_LEAD,
            "how far ahead commands are planned (rounded up to whole control periods): more than the worst "
            "lateness of a command at the joint controller; a new action takes hold this much after it arrives",
            unit="s",
            low=0.0,
            high=1.0,
        )
        lead_periods = lead_periods_for(command_lead, self.params.control_period_ns)
        self._command_lead_ns = lead_periods * self.params.control_period_ns
        # A publish call that takes more than half the lead (wall) was interrupted by a stall.
        self._stall_wall_s = self._command_lead_ns / 2e9
        trajectory_points = declare_int(
            self, "trajectory_points", 3, "planned points per command, before the braking tail", low=2, high=50
        )
        self.joint_states_topic = declare_str(self, "joint_states_topic", "/joint_states", "joint state input")
        self.stop_window = declare_float(
            self,
            "stop_window",
            0.1,
            "joint states still for this long (their stamps) while the commands move: the robot stopped on its "
            "own; 0 turns the check off",
            unit="s",
            low=0.0,
            high=5.0,
        )
        self.recovery_name = declare_str(
            self,
            "recovery",
            "none",
            "what the next reset calls after a stop: none (a person must act), trigger:<std_srvs/Trigger service> "
            "or franka_action:<franka_msgs ErrorRecovery action> (docs/robot_stops.md)",
        )
        self.recovery_timeout = declare_float(
            self, "recovery_timeout", 10.0, "longest the robot's error recovery may take", unit="s", low=0.1, high=300.0
        )
        self.command_topic = declare_str(
            self,
            "command_topic",
            "/joint_trajectory_controller/joint_trajectory",
            "joint_trajectory_controller's command topic",
        )
        self.box = box
        self.controller = PandaController(
            mode,
            limits,
            box,
            self.params.control_period_ns,
            lead_periods=lead_periods,
            trajectory_points=trajectory_points,
            reset_noise=reset_noise,
            **motion_options,
        )
        size = self.controller.action_size
        return AgentSpaces(-np.ones(size), np.ones(size), len(OBSERVATION_NAMES), OBSERVATION_NAMES)

    # -- robot state --------------------------------------------------------------------

    def _decode_state(self, wait: bool = True) -> None:
        """Take in the newest of the arm's joint states that came since the last look.

        Where the world waits for the agent (``waits_on_clock``), the state a tick reads is
        the one stamped at the tick's time, so that a seeded run repeats: the newest
        stamped at or before now (later ones are kept for later ticks), and, where the
        topic has a state at this time (its stamps' grid), the tick waits for it should the
        /clock that made the tick have overtaken it (up to STATE_AT_TICK_WAIT_S, wall)
        (test_panda.py::test_on_a_waiting_clock_a_tick_reads_the_state_stamped_at_its_time).
        """
        if not self.waits_on_clock:
            for raw in reversed(self._joint_state_reader.take_all_serialized()):
                state = self._arm_state(deserialize_message(raw, JointState))
                if state is not None:
                    self._keep(*state)
                    return
            return
        now_ns = self.now_ns()
        self._take_until(now_ns)
        if not wait or self._state_stamp_ns >= now_ns or not self._state_due(now_ns):
            return
        deadline = time.monotonic() + STATE_AT_TICK_WAIT_S
        while time.monotonic() < deadline:
            time.sleep(STATE_POLL_S)
            self._take_until(now_ns)
            if self._state_stamp_ns >= now_ns:
                return
        self._state_grid_ns = 0  # learnt again from the next states
        self.get_logger().warning(
            f"no joint state stamped at the tick's time ({now_ns / 1e9:.3f} s) within {STATE_AT_TICK_WAIT_S:g} s: "
            "the tick reads an older one (this run may not repeat exactly)",
            throttle_duration_sec=5.0,
        )

    def _take_until(self, now_ns: int) -> None:
        """Take in the newest arm state stamped at or before ``now_ns``; keep later ones."""
        ahead = self._ahead_states
        taken = self._joint_state_reader.take_all_serialized()
        newer: list[tuple[int, np.ndarray, np.ndarray]] = []
        candidates = [*ahead, *(self._arm_state(deserialize_message(raw, JointState)) for raw in taken)]
        chosen = None
        for state in reversed(candidates):
            if state is None:
                continue
            if state[0] > now_ns:
                newer.append(state)
                continue
            chosen = state
            break
        self._ahead_states = newer[::-1]
        if chosen is not None and chosen[0] > self._state_stamp_ns:
            if self._state_stamp_ns:
                step = chosen[0] - self._state_stamp_ns
                self._state_grid_ns = step if not self._state_grid_ns else min(self._state_grid_ns, step)
            self._keep(*chosen)

    def _state_due(self, now_ns: int) -> bool:
        """Whether the state topic has a state stamped ``now_ns``: its stamps so far lie on
        a grid (the smallest step between the states taken in) that ``now_ns`` is on."""
        grid = self._state_grid_ns
        return grid > 0 and self._state_stamp_ns > 0 and (now_ns - self._state_stamp_ns) % grid == 0

    def _arm_state(self, msg: JointState) -> tuple[int, np.ndarray, np.ndarray] | None:
        """The arm's (stamp, positions, velocities) in ``msg``, or None if it does not hold them."""
        if msg.name != self._order_names:
            try:
                order = [msg.name.index(name) for name in panda.JOINT_NAMES]
            except ValueError:
                return None  # the gripper's, or another robot's, on a shared topic
            self._order, self._order_names = order, list(msg.name)
        position = np.asarray(msg.position)
        if position.size < len(msg.name):
            return None
        velocity = np.asarray(msg.velocity)
        dq = velocity[self._order] if velocity.size >= len(msg.name) else np.zeros(panda.DOF)
        return time_to_ns(msg.header.stamp), position[self._order], dq

    def _keep(self, stamp_ns: int, q: np.ndarray, dq: np.ndarray) -> None:
        """Make ``q``, ``dq`` (stamped ``stamp_ns``) the arm's state the loop reads."""
        if self._q is None:
            self.get_logger().info(f"joint states arrive on {self.joint_states_topic}: commanding the arm")
        self._state_stamp_ns = stamp_ns
        self._q, self._dq = q, dq
        self._state_ns = self.now_ns()  # within a tick of its arrival
        self._state_wall = time.monotonic()

    def _measured(self) -> tuple[np.ndarray, np.ndarray]:
        self._decode_state()
        if self._q is None:
            raise RuntimeError(f"no joint state received on {self.joint_states_topic} yet")
        # (A state heard before a simulated clock started, at time 0, is as fresh as the clock.)
        age = ns_to_seconds(self.now_ns() - self._state_ns) if self._state_ns else 0.0
        if age > self.state_timeout:
            raise RuntimeError(
                f"joint state on {self.joint_states_topic} is {age:.3f} s old (state_timeout {self.state_timeout} s)"
            )
        return self._q, self._dq

    def _on_continued(self, signum: int, frame: object) -> None:
        """SIGCONT: the process was stopped, and has just been continued."""
        self._continued_at = time.monotonic()
        self._quiet_until = self._continued_at + STOPPED_QUIET_S
        self._stopped_at = self._last_tick

    def _stale_after_stop(self, wall: float, clock_ns: int) -> bool:
        """After a stop (SIGCONT), whether the newest /clock is still short of where the
        clock, at its pace before the stop, should be by now: what the process hears is
        still the backlog from the stop (delivered oldest first). At most
        STALL_QUIET_MAX_S (a clock that waits for the agent, as the lockstep mock does,
        never gets there)."""
        if self._stopped_at is None or self._clock_reader is None:
            return False
        if wall - self._continued_at > STALL_QUIET_MAX_S:
            self._stopped_at = None
            return False
        stop_wall, stop_clock_ns = self._stopped_at
        expected_ns = stop_clock_ns + self._clock_pace * (wall - stop_wall) * 1e9
        if clock_ns < expected_ns - self._command_lead_ns / 2:
            return True
        self._stopped_at = None
        return False

    def _note_tick(self, wall: float, clock_ns: int) -> None:
        """Learn the clock's pace from ticks that no stop separates. (A stall of this
        process without a stop looks the same from inside, but so does a clock that waits
        for the agent, as the lockstep mock does: only a SIGCONT says which.)"""
        last, self._last_tick = self._last_tick, (wall, clock_ns)
        if last is None or self._stopped_at is not None or self._continued_at > last[0] or wall - last[0] < 1e-3:
            return
        pace = (clock_ns - last[1]) / 1e9 / (wall - last[0])
        self._clock_pace += 0.1 * (min(max(pace, 0.0), 100.0) - self._clock_pace)

    def _catching_up(self, wall: float, now_ns: int) -> bool:
        """Whether the node's clock lags the newest /clock heard by more than half the lead:
        the process fell behind (starved, or just continued) and what it hears is still
        arriving; if so, keep quiet a moment."""
        if self._clock_reader is None:
            return False
        if now_ns - self.now_ns() <= self._command_lead_ns // 2:
            return False
        self._quiet_until = wall + STALL_QUIET_S
        return True

    def _command_time_ns(self) -> int:
        """Now, for stamping a command: the node's clock, or the newest /clock that has
        arrived if that is ahead (see ``__init__``)."""
        now = self.now_ns()
        if self._clock_reader is not None:
            raw = self._clock_reader.take_serialized()
            if raw is not None:
                self._newest_clock_ns = max(self._newest_clock_ns, time_to_ns(deserialize_message(raw, Clock).clock))
            now = max(now, self._newest_clock_ns)
        return now

    # -- commanding -----------------------------------------------------------------------

    def _command(self) -> None:
        """Send the controller's next short trajectory (see PandaController.command).

        Lateness of up to the lead is what the commands are built for; the rest is here
        (test_panda.py::test_stalls_while_braking_while_resetting_and_between_steps_break_no_limit):
        - after the agent was stopped (SIGCONT) or while its clock lags the newest /clock
          it has heard (a starved process), what it reads may be old (the /clock backlog
          is still being delivered): nothing is sent for a moment, while the last
          command's braking tail carries the arm;
        - a command that got older than its lead while it was planned is not sent;
        - after a stop, or a stall while sending, the last command may or may not have
          reached the joint controller in time: nothing is sent until the arm rests at
          the end of whichever it followed, and the next command starts from there;
        - a stop between the last check and the message leaving cannot be helped from
          here: the command may reach the controller after its lead, and
          joint_trajectory_controller jumps onto its own segment; the agent says so
          (STOPPED_WHILE_SENDING) and goes on as after any stop. A real-time priority
          (``realtime_priority``) keeps such stalls away.
        """
        started = time.monotonic()
        now_ns = self._command_time_ns()  # (read again before sending: planning takes time)
        if self._clock_reader is not None:
            self._note_tick(started, now_ns)
            if self._stale_after_stop(started, now_ns):
                return
        # (A lockstep mock under a timing model waits for every command: nothing can be
        # late, and a command not sent would leave it standing for good;
        # test_timing_models.py::test_the_panda_mock_waits_for_the_learner...)
        if not self.waits_on_clock and (started < self._quiet_until or self._catching_up(started, now_ns)):
            return
        if self._continued_at > self._settled_stop_at:
            # Stopped: the last command may have reached the controller after the stop,
            # too late, and been refused, without the agent seeing anything of it.
            self._settled_stop_at = self._continued_at
            self.controller.mark_uncertain()
        if self.controller.uncertain:
            if self._stops is not None:
                self._stops.clear()  # what the controller follows is unknown: compare nothing
            q, dq = self._measured()
            if not self.controller.settle_uncertainty(q, dq, self._state_stamp_ns):
                return  # not at rest yet: the controller goes on with whichever it has
        command = self.controller.command(now_ns)
        if command is None:  # nothing measured yet: the joint controller holds the arm where it is
            self.get_logger().warning(
                f"no joint state on {self.joint_states_topic} yet: commanding nothing (is the robot's driver, or the "
                "mock, running and publishing there?)",
                throttle_duration_sec=5.0,
            )
            return
        if not all(np.isfinite(q).all() and np.isfinite(v).all() for q, v in command.points):
            # Never sent: plan again from where the arm really is, and say so (the
            # episode fails with this text and the arm holds).
            q, _ = self._measured()
            self.controller.replan_from(q)
            raise RuntimeError("the motion planner produced a non-finite reference: not sent; replanning from the arm")
        message = self._fill_message(command)
        sending = time.monotonic()  # (before the check: a stop after it is seen by _sent_late)
        late_ns = self._command_time_ns() - command.stamp_ns
        if self._continued_at > started or late_ns > self._command_lead_ns - self.params.control_period_ns // 2:
            self.controller.withdraw()
            self.get_logger().warning(
                f"a command was {late_ns / 1e6:.1f} ms old before it could be sent (the agent stalled): "
                "not sent; the next tick plans from the one before",
                throttle_duration_sec=1.0,
            )
            return
        self._command_pub.publish(message)
        self.commit_world(command.stamp_ns + command.times_ns[0])
        self._note_commanded(command)
        if self._continued_at > sending:
            # Stopped between the last check and the message leaving: nothing on this side
            # can take it back. Said every time, so that what the controller did with it
            # can be traced to it (test_panda.py::assert_no_violation_but_of_stopped_sends).
            self._settled_stop_at = self._continued_at
            self.controller.mark_uncertain()
            self.get_logger().warning(
                f"{STOPPED_WHILE_SENDING}: it may have reached the controller after its lead, and the controller "
                "then jumps onto it; commanding goes on from the arm once it rests"
            )
        elif self._sent_late(sending, command.stamp_ns):
            self.controller.mark_uncertain()
            self.get_logger().warning(
                "the agent stalled while sending a command: it may have reached the controller too late; "
                "commanding goes on from the arm once it rests",
                throttle_duration_sec=1.0,
            )

    # -- stops the arm makes itself --------------------------------------------------------

    def _note_commanded(self, command: Command) -> None:
        """What the joint controller is to follow up to the command's horizon (its later
        points are replaced by the next command), for the stop check."""
        if self._stops is None:
            return
        horizon_ns = self.controller.reference_ns
        times = [command.stamp_ns + t for t in command.times_ns]
        kept = [i for i, t in enumerate(times) if t <= horizon_ns]
        self._stops.commanded([times[i] for i in kept], [command.points[i][0] for i in kept])

    def _check_for_stop(self) -> None:
        """Raise RobotStoppedError if the newest joint state completes a stop (see
        StopDetector): the reference starts again from the arm, which the agent holds."""
        if self._stops is None:
            return
        self._decode_state()
        if self._q is None:
            return
        stop = self._stops.measured(self._state_stamp_ns, self._q)
        if self._stops.followed:
            self._recovered_unproven = False
        if stop is None:
            return
        self._stops.clear()
        self.controller.replan_from(self._q)
        text = f"the robot stopped on its own: {stop.describe()}"
        if self._recovery is None:
            raise self._person_must_act(f"{text}; no error recovery is configured (recovery: none)")
        if self._recovered_unproven:
            raise self._person_must_act(
                f"{text}, again, right after its error recovery ({self._recovery.name}) succeeded (its controller "
                "may be inactive)"
            )
        self._stop_pending = text
        raise RobotStoppedError(
            f"{text}; holding; the next reset calls the robot's error recovery ({self._recovery.name}) first"
        )

    def _person_must_act(self, text: str) -> RobotStoppedError:
        """The error that says what a person must do; the agent leaves the robot to them."""
        self._stop_pending = None
        self._recovering = None
        self._recovered_unproven = False
        return RobotStoppedError(f"{text}; {PERSON_MUST_ACT}", needs_person=True)

    def _poll_recovery(self) -> bool:
        """Drive the error recovery started by a reset; True once it succeeded (the reset
        then begins), False while it runs; RobotStoppedError (a person must act) if it
        failed or ran out of time."""
        assert self._recovering is not None and self._recovery is not None
        started, seed, options = self._recovering
        outcome: Outcome | None = self._recovery.poll()
        if outcome is None and time.monotonic() - started > self.recovery_timeout:
            self._recovery.cancel()
            outcome = Outcome(False, f"no answer within recovery_timeout {self.recovery_timeout:g} s")
        if outcome is None:
            return False
        self._recovering = None
        if not outcome.succeeded:
            raise self._person_must_act(
                f"{self._stop_pending}; the robot's error recovery ({self._recovery.name}) failed: {outcome.message}"
            )
        self.get_logger().info(f"the robot recovered ({self._recovery.name}: {outcome.message}); resetting")
        self._stop_pending = None
        self._recovered_unproven = True
        self._reset_started_ns = self.now_ns()  # (reset_timeout counts from here)
        q, dq = self._measured()
        self.controller.replan_from(q)
        self.controller.begin_reset(seed, options, q, dq)
        return True

    def _sent_late(self, sending: float, stamp_ns: int) -> bool:
        """Whether a publish that returned just now may have left after its command's lead
        ran out. On wall time, a publish that took more than half the lead. On a simulated
        clock, only if the newest /clock says so: a clock that waits for the agent (the
        lockstep mock) has not moved while the agent was slow, and the command is as good
        as one sent on time (test_panda.py::test_a_slow_send_on_a_waiting_clock_is_not_uncertain)."""
        if time.monotonic() - sending <= self._stall_wall_s:
            return False
        if self._clock_reader is None:
            return True
        late_ns = self._command_time_ns() - stamp_ns
        return late_ns > self._command_lead_ns - self.params.control_period_ns // 2

    def _fill_message(self, command: Command) -> JointTrajectory:
        """The command as a JointTrajectory (one message and its points, reused)."""
        # Stamped with the time the plan counts from: like joint_trajectory_controller,
        # the receiver keeps the plan's timing whatever the transport delay.
        set_stamp(self._trajectory.header.stamp, command.stamp_ns)
        while len(self._points) < len(command.points):
            self._points.append(JointTrajectoryPoint())
        for point, (q, v), t_ns in zip(self._points, command.points, command.times_ns, strict=False):
            sec, nanosec = divmod(t_ns, 1_000_000_000)
            if point.time_from_start.sec != sec or point.time_from_start.nanosec != nanosec:
                point.time_from_start = Duration(sec=sec, nanosec=nanosec)
            point.positions = float64_field(q)
            point.velocities = float64_field(v)
        self._trajectory.points = self._points[: len(command.points)]
        return self._trajectory

    # -- AgentNode hooks ----------------------------------------------------------------

    def diagnostic_checks(self, figures: Figures) -> list[Check]:
        """The joint states' age in wall time (a stopped robot, or a mock that is, stops
        them whatever the clock does), unless the world waits for the learner."""
        self._decode_state(wait=False)
        values = (("topic", self.joint_states_topic),)
        if self.world_waits():
            return [Check("joint states", Level.OK, "the world waits for the learner (timing model)", values)]
        age = None if self._state_wall is None else time.monotonic() - self._state_wall
        level, text = assess_state_age(age, self.health_thresholds)
        return [Check("joint states", level, text, values)]

    def build_observation(self) -> np.ndarray:
        q, dq = self._measured()
        return self.controller.observation(q, dq)

    def on_action_start(self, action: np.ndarray) -> None:
        q, _ = self._measured()
        self.controller.start(q, self.now_ns())
        self.controller.act(action)  # takes hold after the committed period

    def apply_action(self, action: np.ndarray) -> None:
        self._check_for_stop()
        self._command()

    def safe_hold(self) -> None:
        self.controller.hold()
        self._command()

    def reset_workspace(self, seed: int | None, options: np.ndarray) -> None:
        # Timed from the first control tick of the reset, not from here: a goal can come
        # before the first /clock, when simulated time still reads 0.
        self._reset_started_ns = None
        self._decode_state()
        if self._stops is not None:
            self._stops.clear()
        if self._stop_pending is not None and self._recovery is not None:
            self._recovering = (time.monotonic(), seed, options)
            failed = self._recovery.start()
            if failed is not None:
                raise self._person_must_act(
                    f"{self._stop_pending}; the robot's error recovery could not be called: {failed.message}"
                )
            self.get_logger().info(f"calling the robot's error recovery ({self._recovery.name}) before the reset")
            return
        self._recovering = None
        self.controller.begin_reset(seed, options, self._q, self._dq)

    def reset_done(self) -> bool:
        if self._reset_started_ns is None:
            self._reset_started_ns = self.now_ns()
        elapsed = ns_to_seconds(self.now_ns() - self._reset_started_ns)
        self._decode_state()
        if self._q is None:
            if elapsed > self.reset_timeout:
                raise RuntimeError(f"no joint state on {self.joint_states_topic} within {self.reset_timeout} s")
            return False
        if self._recovering is not None:
            self.safe_hold()
            if not self._poll_recovery():
                return False
        q, dq = self._measured()
        self.controller.start(q, self.now_ns())
        reached = self.controller.reset_reached(q, dq)
        self._check_for_stop()
        self._command()
        if reached:
            return True
        if elapsed > self.reset_timeout:
            raise RuntimeError(
                f"the arm did not reach its start pose within {self.reset_timeout} s "
                f"(joint error {self.controller.reset_error(q):.4f} rad)"
            )
        return False


def main(args: list[str] | None = None) -> int:
    return run_node(PandaAgent, args)


if __name__ == "__main__":
    sys.exit(main())
