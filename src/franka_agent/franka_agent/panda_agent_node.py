"""PandaAgent: the decoupler's agent for an arm driven through a joint trajectory
controller: a Franka Panda on franka_ros2, or any arm its robot profile (``robot``)
describes.

It talks to the arm exactly as an outside node talks to the arm's driver: joint state in
from the profile's joint-state topic, short trajectories out to its trajectory
controller's command topic. It cannot tell the MuJoCo mock from the real arm, and does
not try.

Action (``action_mode``):
  - ``ee_delta`` (default, 3 values in [-1, 1]): move the tool's TCP target by up to
    ``max_ee_step`` m per axis from where the commanded TCP is; the TCP reference
    moves there in a straight line within ``cartesian_speed`` and
    ``cartesian_acceleration`` and never leaves the workspace box (less
    ``workspace_margin``), and differential IK turns it into joint goals;
  - ``joint_delta`` (one value per joint): move each joint by up to ``max_joint_step`` rad
    (scaled back if the TCP would leave the box).
  Every control period the joint reference moves towards its goal within the joint
  position, velocity and acceleration limits (``velocity_fraction``,
  ``acceleration_fraction`` of the arm's, ``joint_margin`` from its stops), and the
  agent sends the next ``trajectory_points`` periods of it, positions and velocities,
  then the reference braking to rest: the controller interpolates smoothly, rides out a
  late tick, and, if the agent falls silent, stops the arm within the limits.
Observation (2 x joints + 3 values; 17 for a 7-joint arm): joint positions (rad), joint
  velocities (rad/s), TCP position (3, m, base frame), from the latest joint state.
Safe null action: zero displacement: the reference brakes within the limits and holds.
Reset: the arm moves home (plus ``reset_noise`` drawn from the episode's seed, or the joint
  positions given as reset options) along the same limited reference; the reset
  observation goes out once it has settled.
Stops the arm makes itself (a reflex, a stop, a controller that went inactive): joint
  states still over ``stop_window`` of their stamps while the commands move end the
  episode (outcome ROBOT_STOPPED) and the agent holds; the next reset first calls the
  robot's error recovery (``recovery``), or, where there is none or it fails, the agent
  says what a person must do and refuses episodes until it is activated again
  (docs/robot_stops.md; test_robot_stops.py).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from builtin_interfaces.msg import Duration
from rclpy.serialization import deserialize_message, serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from franka_agent.arm_state import ArmState
from franka_agent.core.controller import Command
from franka_agent.core.stops import StopDetector, StopHandling, StopPhase
from franka_agent.panda_parameters import declare_panda_parameters
from franka_agent.recovery import PERSON_MUST_ACT, Outcome, Recovery, make_recovery
from franka_agent.robot_mode import robot_mode_watch
from franka_agent.stall_guard import STALLED_WHILE_SENDING, STOPPED_WHILE_SENDING, Sent, StallGuard
from spin_decoupler_ros.agent import AgentNode, AgentSpaces, LatestMessage
from spin_decoupler_ros.agent.diagnostics import Check
from spin_decoupler_ros.conversions import float64_field, set_stamp
from spin_decoupler_ros.core.errors import RobotStoppedError
from spin_decoupler_ros.core.health import Figures, Level, assess_state_age
from spin_decoupler_ros.core.timing import ns_to_seconds, seconds_to_ns
from spin_decoupler_ros.node_runner import run_node
from spin_decoupler_ros.qos_events import no_publisher_events


def observation_names(dof: int) -> tuple[str, ...]:
    """Joint positions, joint velocities, TCP position: the observation's entries."""
    return (*(f"q{i}" for i in range(1, dof + 1)), *(f"dq{i}" for i in range(1, dof + 1)), "ee_x", "ee_y", "ee_z")


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
        self._reset_started_ns: int | None = None
        clock_reader = LatestMessage(self, Clock, "/clock") if self.get_parameter("use_sim_time").value else None
        self._guard = StallGuard(self, clock_reader, self.settings.command_lead_ns, self.params.control_period_ns)
        self._trajectory = JointTrajectory(joint_names=list(self.settings.profile.joint_names))
        self._points: list[JointTrajectoryPoint] = []  # made once, filled for each command
        # First-call costs now, before the first tick (the message is filled, not sent).
        self._fill_message(self.controller.warm_up())
        deserialize_message(serialize_message(JointState()), JointState)
        deserialize_message(serialize_message(Clock()), Clock)
        self.arm = ArmState(
            self, self.settings.profile.joint_names, self.settings.joint_states_topic, self.settings.state_timeout
        )
        # Commands reliable.
        self._command_pub = self.create_publisher(
            JointTrajectory, self.settings.command_topic, 10, event_callbacks=no_publisher_events()
        )
        window_ns = seconds_to_ns(self.settings.stop_window)
        self._stops = StopDetector(window_ns) if window_ns > 0 else None
        self._recovery: Recovery | None = make_recovery(self, self.settings.recovery_name, self.settings.profile)
        self._robot_mode = robot_mode_watch(self, self.settings.profile)  # the arm's own word, where it has one
        self._after_stop = StopHandling()  # what is being done about a stop the arm made

    def configure(self) -> AgentSpaces:
        self.settings = declare_panda_parameters(self, self.params.control_period_ns)
        self.controller = self.settings.controller
        size = self.controller.action_size
        names = observation_names(self.settings.profile.dof)
        return AgentSpaces(-np.ones(size), np.ones(size), len(names), names)

    # -- commanding -----------------------------------------------------------------------

    def _command(self) -> None:
        """Send the controller's next short trajectory (see ArmController.command).

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
        guard = self._guard
        started = time.monotonic()
        now_ns = guard.command_time_ns()  # (read again before sending: planning takes time)
        if guard.keeps_quiet(started, now_ns):
            return
        if guard.stopped_since_settled():
            self.controller.mark_uncertain()
        if self.controller.uncertain:
            if self._stops is not None:
                self._stops.clear()  # what the controller follows is unknown: compare nothing
            q, dq = self.arm.measured()
            if not self.controller.settle_uncertainty(q, dq, self.arm.stamp_ns):
                return  # not at rest yet: the controller goes on with whichever it has
        if self.controller.motion is not None and self._command_pub.get_subscription_count() == 0:
            # (Without a joint state, that is said first: command() below.) Nothing is
            # planned into a topic no controller reads yet: a command sent
            # before the controller's subscription is matched is lost, and a new plan's
            # first one is sent once (Command.repeat); the arm would then hold while
            # the agent believed it moving
            # (test_panda.py::test_a_stop_inside_a_send_is_reported_and_commanding_waits_for_the_arm).
            self.get_logger().warning(
                f"no controller subscribes to {self.settings.command_topic} yet: commanding nothing (is the "
                "trajectory controller loaded and active?)",
                throttle_duration_sec=5.0,
            )
            return
        command = self.controller.command(now_ns)
        if command is not None and command.repeat:
            return  # the last command goes on: the controller bridges to its first point
        if command is None:  # nothing measured yet: the joint controller holds the arm where it is
            self.get_logger().warning(
                f"no joint state on {self.settings.joint_states_topic} yet: commanding nothing (is the robot's "
                "driver, or the mock, running and publishing there?)",
                throttle_duration_sec=5.0,
            )
            return
        if not all(np.isfinite(q).all() and np.isfinite(v).all() for q, v in command.points):
            # Never sent: plan again from where the arm really is, and say so (the
            # episode fails with this text and the arm holds).
            q, _ = self.arm.measured()
            self.controller.replan_from(q)
            raise RuntimeError("the motion planner produced a non-finite reference: not sent; replanning from the arm")
        message = self._fill_message(command)
        sending = time.monotonic()  # (before the check: a stop after it is seen by how_sent)
        late_ns = guard.late_ns(command.stamp_ns)
        if guard.too_late(started, late_ns):
            self.controller.withdraw()
            self.get_logger().warning(
                f"a command was {late_ns / 1e6:.1f} ms old before it could be sent (the agent stalled): "
                "not sent; the next tick plans from the one before",
                throttle_duration_sec=1.0,
            )
            return
        self._command_pub.publish(message)
        self.commit_world(command.reaches_ns)
        self._note_commanded(command)
        sent = guard.how_sent(sending, command.stamp_ns)
        if sent is Sent.STOPPED:
            # Nothing on this side can take it back. Said every time, so that what the
            # controller did with it can be traced to it
            # (test_panda.py::assert_no_violation_but_of_stopped_sends).
            self.controller.mark_uncertain()
            self.get_logger().warning(
                f"{STOPPED_WHILE_SENDING}: it may have reached the controller after its lead, and the controller "
                "then jumps onto it; commanding goes on from the arm once it rests"
            )
        elif sent is Sent.LATE:
            self.controller.mark_uncertain()
            self.get_logger().warning(  # (every time, as above)
                f"{STALLED_WHILE_SENDING}: it may have reached the controller too late; "
                "commanding goes on from the arm once it rests"
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
        """Raise RobotStoppedError if the robot says it stopped (its robot mode, where the
        profile has one: RobotModeWatch) or the newest joint state completes a stop (see
        StopDetector): the reference starts again from the arm, which the agent holds."""
        said = self._robot_mode.stop() if self._robot_mode is not None else None
        if self._stops is None and said is None:
            return
        self.arm.decode()
        if self.arm.q is None:
            return
        if self._stops is not None:
            stop = self._stops.measured(self.arm.stamp_ns, self.arm.q)
            if self._stops.followed and self._after_stop.phase is StopPhase.UNPROVEN:
                self._after_stop.enter(StopPhase.NONE)
            said = said or (stop.describe() if stop is not None else None)
            if said is None:
                return
            self._stops.clear()
        self.controller.replan_from(self.arm.q)
        text = f"the robot stopped on its own: {said}"
        if self._recovery is None:
            raise self._person_must_act(f"{text}; no error recovery is configured (recovery: none)")
        if self._after_stop.phase is StopPhase.UNPROVEN:
            raise self._person_must_act(
                f"{text}, again, right after its error recovery ({self._recovery.name}) succeeded (its controller "
                "may be inactive)"
            )
        self._after_stop.text = text
        self._after_stop.enter(StopPhase.STOPPED)
        raise RobotStoppedError(
            f"{text}; holding; the next reset calls the robot's error recovery ({self._recovery.name}) first"
        )

    def _person_must_act(self, text: str) -> RobotStoppedError:
        """The error that says what a person must do; the agent leaves the robot to them."""
        self._after_stop.enter(StopPhase.NONE)
        return RobotStoppedError(f"{text}; {PERSON_MUST_ACT}", needs_person=True)

    def _poll_recovery(self) -> bool:
        """Drive the error recovery started by a reset; True once it succeeded (the reset
        then begins), False while it runs; RobotStoppedError (a person must act) if it
        failed or ran out of time."""
        assert self._after_stop.call is not None and self._recovery is not None
        started, seed, options = self._after_stop.call
        outcome: Outcome | None = self._recovery.poll()
        if outcome is None and time.monotonic() - started > self.settings.recovery_timeout:
            self._recovery.cancel()
            outcome = Outcome(False, f"no answer within recovery_timeout {self.settings.recovery_timeout:g} s")
        if outcome is None:
            return False
        if not outcome.succeeded:
            raise self._person_must_act(
                f"{self._after_stop.text}; the robot's error recovery ({self._recovery.name}) failed: {outcome.message}"
            )
        self.get_logger().info(f"the robot recovered ({self._recovery.name}: {outcome.message}); resetting")
        self._after_stop.enter(StopPhase.UNPROVEN)
        self._reset_started_ns = self.now_ns()  # (reset_timeout counts from here)
        q, dq = self.arm.measured()
        self.controller.replan_from(q)
        self.controller.begin_reset(seed, options, q, dq)
        return True

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
        self.arm.decode(wait=False)
        values = (("topic", self.settings.joint_states_topic),)
        if self.world_waits():
            return [Check("joint states", Level.OK, "the world waits for the learner (timing model)", values)]
        age = None if self.arm.taken_wall is None else time.monotonic() - self.arm.taken_wall
        level, text = assess_state_age(age, self.health_thresholds)
        return [Check("joint states", level, text, values)]

    def build_observation(self) -> np.ndarray:
        q, dq = self.arm.measured()
        return self.controller.observation(q, dq)

    def on_action_start(self, action: np.ndarray) -> None:
        q, _ = self.arm.measured()
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
        self.controller.check_reset_options(options)  # (before a recovery holds them)
        self._reset_started_ns = None
        self.arm.decode()
        if self._stops is not None:
            self._stops.clear()
        if self._after_stop.phase in (StopPhase.STOPPED, StopPhase.RECOVERING) and self._recovery is not None:
            self._after_stop.enter(StopPhase.RECOVERING)
            self._after_stop.call = (time.monotonic(), seed, options)
            failed = self._recovery.start()
            if failed is not None:
                raise self._person_must_act(
                    f"{self._after_stop.text}; the robot's error recovery could not be called: {failed.message}"
                )
            self.get_logger().info(f"calling the robot's error recovery ({self._recovery.name}) before the reset")
            return
        self.controller.begin_reset(seed, options, self.arm.q, self.arm.dq)

    def reset_done(self) -> bool:
        if self._reset_started_ns is None:
            self._reset_started_ns = self.now_ns()
        elapsed = ns_to_seconds(self.now_ns() - self._reset_started_ns)
        self.arm.decode()
        if self.arm.q is None:
            if elapsed > self.settings.reset_timeout:
                raise RuntimeError(
                    f"no joint state on {self.settings.joint_states_topic} within {self.settings.reset_timeout} s"
                )
            return False
        if self._after_stop.phase is StopPhase.RECOVERING:
            self.safe_hold()
            if not self._poll_recovery():
                return False
        q, dq = self.arm.measured()
        self.controller.start(q, self.now_ns())
        reached = self.controller.reset_reached(q, dq)
        self._check_for_stop()
        self._command()
        if reached:
            return True
        if elapsed > self.settings.reset_timeout:
            raise RuntimeError(
                f"the arm did not reach its start pose within {self.settings.reset_timeout} s "
                f"(joint error {self.controller.reset_error(q):.4f} rad)"
            )
        return False


def main(args: list[str] | None = None) -> int:
    return run_node(PandaAgent, args)


if __name__ == "__main__":
    sys.exit(main())
