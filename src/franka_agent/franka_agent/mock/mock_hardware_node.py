"""MockArmHardware: a MuJoCo arm behind its driver's interface, for training without the arm.

The arm is the one its robot profile (``robot``) describes. What the agent sees is what
the profile's driver gives it on the real robot (franka_ros2 v0.1.0 for the Panda):

- the trajectory controller's command topic (trajectory_msgs/JointTrajectory): what
  joint_trajectory_controller does with it (``core/trajectory.py``, ``core/jtc_update.py``
  for the release the profile's driver runs; held to the genuine 4.42.1 by golden
  traces): refused if it ends in the past; at an update it replaces the current
  trajectory, from the commanded state (``interpolate_from``, as the profiles set the real
  controller up) through its points (cubic Hermite), jumping onto its own segment if its
  first points are past; tracked by a joint PD (the profile's gains, 1 kHz, gravity
  compensated); one ending in motion is refused (Jazzy's default);
- the profile's joint-state topics (sensor_msgs/JointState; franka_ros2's
  ``/franka/joint_states`` and the merged ``/joint_states``) with the arm's joint names,
  limits and home pose.

It also offers what only a simulation can: ``~/reset`` (std_srvs/Trigger) puts the arm
at home (plus ``reset_noise``), ``/clock`` lets every node run on simulated time
(``use_sim_time``), and ``speed_factor`` runs it faster than real time (0: as fast as
it can). With ``lockstep`` (the default) it never simulates past the first point of
the latest command, the period the controller has committed to: at any speed, every
command then arrives before the arm needs it, as on the real robot where the
controller's clock is the wall's. If commands stop for ``lockstep_timeout`` wall
seconds, time runs on regardless, as it does for a real arm; ``lockstep_timeout: 0``
waits for the next command however long it takes, for an agent under a timing model
whose world waits for the learner (only the first command is waited for at most
FIRST_COMMAND_WAIT_S, so that a sim-time agent's first tick comes).

A stop the arm makes itself: ``~/inject_stop`` (std_srvs/Trigger) simulates a reflex as
franka_ros2 v2.x shows it to an outside node: the controller stops (the arm holds where it
is), joint states keep coming, still, and trajectories are ignored (they still pace a
lockstep clock) until the arm is recovered: by ``~/error_recovery`` (std_srvs/Trigger),
or, where the profile's stop surface is a Franka robot state (the FR3), only by the three
steps of franka_ros2 v2.4+ (``mock/franka_surface.py``), and there a commanded limit break
is a reflex too (docs/robot_stops.md).

It checks the desired state it commands at every update against the arm's position,
velocity and acceleration limits, and every commanded point against the workspace box,
counts violations on ``~/limit_violations`` (latched; ``violation_log`` records each
with the command's stamp and arrival) and reports on ``/diagnostics``.
"""

from __future__ import annotations

import array
import math
import sys
import time
from typing import Any

import numpy as np
import rclpy.subscription as rclpy_subscription
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import UInt64
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from franka_agent.core.command_check import command_violations
from franka_agent.core.jtc_update import controller_release
from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.sim import ArmSim
from franka_agent.mock.diagnostics import mock_status
from franka_agent.mock.franka_surface import ERROR_OF_VIOLATION, franka_surface
from franka_agent.mock.parameters import declare_mock_parameters
from franka_agent.mock.trajectory_intake import Refusal, accepted_points
from franka_agent.mock.violation_log import ViolationLog
from franka_agent.robots import driver_release
from spin_decoupler_ros.node_runner import run_node
from spin_decoupler_ros.qos_events import no_publisher_events, no_subscription_events
from spin_decoupler_ros.tools.realtime import request_realtime

FIRST_COMMAND_WAIT_S = 0.2  # with lockstep_timeout 0: wall time per chunk until the first command
MAX_CATCH_UP = 0.02  # s of simulated time
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class MockArmHardware(Node):
    def __init__(self) -> None:
        # The mock is the clock: it must never follow /clock itself.
        super().__init__("mock_hardware", parameter_overrides=[Parameter("use_sim_time", value=False)])
        self.settings = params = declare_mock_parameters(self)
        physics_rate, publish_rate = params.physics_rate, params.publish_rate
        self._log = ViolationLog(params.violation_log or None)
        self.profile = profile = params.profile
        release = controller_release(driver_release(profile).distro)  # whose update timing (core/jtc_update.py)
        self.sim = ArmSim(profile, physics_rate, params.p_gains, params.d_gains, params.interpolate_from, release)
        self._kinematics = ArmKinematics(profile)  # for checking commanded points' TCP
        self._steps_per_publish = max(1, round(physics_rate / publish_rate))
        self._rng = np.random.default_rng()
        self.violations = 0
        self.refused = 0  # trajectories refused as joint_trajectory_controller does: they end in the past
        self.commands = 0
        self.stopped: str | None = None  # why the controller stopped (an injected reflex), until recovered
        self.ignored = 0  # trajectories that came while it was stopped

        # The controller's joint states at the control rate and, where the driver has one,
        # the merged topic (franka_ros2's joint_state_publisher: /joint_states, 30 Hz).
        # No QoS event handlers: each is one more waitable on every spin (qos_events.py).
        quiet = no_publisher_events()
        states = profile.joint_states
        self._arm_states = self.create_publisher(JointState, states.topic, 10, event_callbacks=quiet)
        self._merged_states = (
            self.create_publisher(JointState, states.merged_topic, 10, event_callbacks=quiet)
            if states.merged_topic != states.topic
            else None
        )
        self._clock_pub = self.create_publisher(ClockMsg, "/clock", 10, event_callbacks=quiet)
        self._violations_pub = self.create_publisher(UInt64, "~/limit_violations", LATCHED, event_callbacks=quiet)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10, event_callbacks=quiet)
        self._command_sub = self.create_subscription(
            JointTrajectory,
            profile.controller.command_topic,
            # With the message info (rclpy since Iron), the violation log says when each
            # command was sent and received.
            self._on_trajectory_with_info if hasattr(rclpy_subscription, "MessageInfo") else self._on_trajectory,
            10,
            event_callbacks=no_subscription_events(),
        )
        self._reset_srv = self.create_service(Trigger, "~/reset", self._on_reset)
        self._inject_stop_srv = self.create_service(Trigger, "~/inject_stop", self._on_inject_stop)
        self._recovery_srv = self.create_service(Trigger, "~/error_recovery", self._on_error_recovery)
        self.franka = franka_surface(self, profile, self._follow_again)
        self.recovery_hint = "call ~/error_recovery" if self.franka is None else "recover in the three steps"
        self._state_msg = JointState(name=list(profile.joint_names))
        self._clock_msg = ClockMsg()

        self._wall_clock = Clock(clock_type=ClockType.STEADY_TIME)
        # Simulated time starts at the wall time the mock starts, so that a stamp means the
        # same to nodes on /clock and to nodes on wall time (at speed 1, as on the robot).
        self._epoch_ns = time.time_ns()
        self._chunk = self._steps_per_publish * self.sim.timestep
        self._chunk_ns = self._steps_per_publish * self.sim.timestep_ns
        self._horizon_ns: int | None = None  # lockstep: simulate no further than this (sim ns)
        self._waiting_since: float | None = None
        self._joint_states_every = max(1, round(publish_rate / self.settings.joint_states_rate))
        self._chunks = 0
        # Flat out in lockstep, commands drive the simulation (each one advances it, see
        # _on_trajectory) and the timer only covers silences; otherwise it paces
        # simulated time to wall time x speed.
        if self.settings.speed_factor > 0.0:
            period = self._chunk / self.settings.speed_factor
        else:
            period = (self.settings.lockstep_timeout or FIRST_COMMAND_WAIT_S) / 4 if self.settings.lockstep else 0.001
        self._wall_start = time.monotonic()
        self._sim_start = 0.0
        self._timer = self.create_timer(period, self._on_timer, clock=self._wall_clock)
        self._diagnostics_timer = self.create_timer(1.0, self._publish_diagnostics, clock=self._wall_clock)
        if self.settings.realtime_priority > 0:
            granted, text = request_realtime(self.settings.realtime_priority)
            (self.get_logger().info if granted else self.get_logger().warning)(f"mock: {text}")
        self._publish_violations()
        self._publish_state()
        self.get_logger().info(
            f"mock arm ready ({profile.name}): physics {physics_rate:g} Hz, joint states {publish_rate:g} Hz, "
            f"speed factor {self.settings.speed_factor:g}"
        )

    # -- simulation ---------------------------------------------------------------------

    @property
    def sim_time(self) -> float:
        return self.sim.time

    def _on_timer(self) -> None:
        self._advance_allowed()
        if self.settings.lockstep_timeout == 0.0 and self._horizon_ns is not None and self._blocked(time.monotonic()):
            # Waiting for the agent however long: say again where time stands, since
            # /clock is best effort for its subscribers (rclpy's time source) and a lost
            # last message would leave the agent short of the tick it waits for.
            self._clock_pub.publish(self._clock_msg)

    def _advance_allowed(self) -> None:
        """Simulate as far as wall time x speed and (in lockstep) the command horizon allow."""
        wall = time.monotonic()
        if self.settings.speed_factor == 0.0:
            target = math.inf
        else:
            # Catch up with wall time x speed, but at most MAX_CATCH_UP at once: a burst
            # simulates on without taking the commands that answer its own /clock, which
            # then arrive with their points past (a 100 ms burst once did). A real
            # controller is never starved; for the mock, a stall of its own is a pause of
            # the world (test_panda.py::test_an_agent_frozen_mid_motion...).
            target = self._sim_start + (wall - self._wall_start) * self.settings.speed_factor
            if target - self.sim_time > MAX_CATCH_UP:
                self._sim_start = self.sim_time - (wall - self._wall_start) * self.settings.speed_factor
                target = self.sim_time + self._chunk
        # A bounded batch per call, so commands and services are served in between.
        for _ in range(64):
            if self.sim_time + 0.5 * self._chunk >= target:
                return
            if self._blocked(wall):
                if self.settings.speed_factor > 0.0:  # waiting is not falling behind: no catch-up burst later
                    self._sim_start = self.sim_time - (wall - self._wall_start) * self.settings.speed_factor
                return
            self._advance_chunk()

    def _blocked(self, wall: float) -> bool:
        """Lockstep: is the next chunk past what the controller has committed to?

        Without a command (none yet, or the controller went quiet) time still moves, one
        chunk per ``lockstep_timeout``, so the controller's clock can reach its next tick;
        with ``lockstep_timeout: 0``, only until the first command.
        """
        if not self.settings.lockstep or (
            self._horizon_ns is not None and self.sim.time_ns + self._chunk_ns <= self._horizon_ns
        ):
            self._waiting_since = None
            return False
        if self.settings.lockstep_timeout == 0.0 and self._horizon_ns is not None:
            return True  # the world waits for the agent (and its learner) however long
        if self._waiting_since is None:
            self._waiting_since = wall
        if wall - self._waiting_since < (self.settings.lockstep_timeout or FIRST_COMMAND_WAIT_S):
            return True
        if self._horizon_ns is not None:
            self.get_logger().warning(
                f"no command for {self.settings.lockstep_timeout:g} s (wall): time runs on without one",
                throttle_duration_sec=5.0,
            )
        self._waiting_since = wall
        return False

    def _advance_chunk(self) -> None:
        """Simulate to the next publication of the state (a chunk, or what is left of one)."""
        self._advance_steps(self._steps_per_publish - self.sim.steps_taken % self._steps_per_publish)

    def _advance_steps(self, steps: int) -> None:
        self.sim.step(steps)
        self._take_violations()
        if self.sim.steps_taken % self._steps_per_publish == 0:
            self._publish_state()

    def _catch_up(self) -> None:
        """Free-running, simulate up to now (wall x speed) in physics steps, so that a
        command takes effect at the controller update it arrives at, as on the robot,
        not at the end of the chunk under way (up to a publication period later)."""
        if self.settings.lockstep or self.settings.speed_factor == 0.0:
            return
        target = self._sim_start + (time.monotonic() - self._wall_start) * self.settings.speed_factor
        steps = math.floor((target - self.sim_time) / self.sim.timestep + 0.5)
        if 0 < steps <= self._steps_per_publish:  # (further behind, the timer catches up)
            for _ in range(steps):
                self._advance_steps(1)

    def _stamp(self) -> Time:
        sec, nanosec = divmod(self._epoch_ns + self.sim.time_ns, 1_000_000_000)
        return Time(sec=sec, nanosec=nanosec)

    def _publish_state(self) -> None:
        stamp = self._stamp()
        msg = self._state_msg
        msg.header.stamp = stamp
        data = self.sim.data
        msg.position = array.array("d", data.qpos.tobytes())
        msg.velocity = array.array("d", data.qvel.tobytes())
        msg.effort = array.array("d", data.ctrl.tobytes())
        self._arm_states.publish(msg)
        if self._chunks % self._joint_states_every == 0:
            if self._merged_states is not None:
                self._merged_states.publish(msg)
            if self.franka is not None:
                self.franka.publish(stamp, data.qpos, data.qvel)
        self._chunks += 1
        self._clock_msg.clock = stamp
        self._clock_pub.publish(self._clock_msg)
        self._log.clock_published(self.sim.time_ns)

    # -- commands -----------------------------------------------------------------------

    def _on_trajectory_with_info(self, msg: JointTrajectory, info: Any) -> None:
        self._on_trajectory(msg, info)

    def _on_trajectory(self, msg: JointTrajectory, info: Any = None) -> None:
        points = accepted_points(msg, self.profile.joint_names, self.settings.allow_nonzero_velocity_at_trajectory_end)
        if isinstance(points, Refusal):
            self.get_logger().error(points.text)
            if points.violation is not None:
                self._count_violation(points.violation)
            return
        self.commands += 1
        stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        start_ns = stamp_ns - self._epoch_ns if stamp_ns > 0 else None
        start = start_ns * 1e-9 if start_ns is not None else None
        arrival = {
            "stamp_ns": start_ns,  # sim ns (the mock's epoch removed); None: a zero stamp
            "arrival_sim_ns": self.sim.time_ns,
            "late_ns": None if start_ns is None else self.sim.time_ns - start_ns,
            "last_clock_published_ns": self._log.last_clock_ns,
            "arrival_wall": time.time(),
            "arrival_monotonic": time.monotonic(),
            "points_ns": [round(point.time * 1e9) for point in points],
        }
        if info is not None:  # when the agent sent it and when DDS here received it (system clock)
            arrival["sent_wall_ns"] = info.get("source_timestamp")
            arrival["received_wall_ns"] = info.get("received_timestamp")
        if start_ns is not None and self._log.on:  # when the /clock it was stamped from went out
            arrival["stamp_published_wall_ns"] = self._log.stamp_published(start_ns)
        for violation in command_violations(points, self.settings.box, self._kinematics):
            self._count_violation(violation.text, {"kind": "box", "trajectory": arrival})
        offsets = [p.time_from_start.sec * 1_000_000_000 + p.time_from_start.nanosec for p in msg.points]
        ahead = next((t for t in offsets if t > 0), offsets[-1])  # as Command.reaches_ns (the agent commits the same)
        horizon_ns = (start_ns if start_ns is not None else self.sim.time_ns) + ahead
        if self.stopped is not None:
            # A stopped controller follows nothing; the commands still pace the clock.
            self.ignored += 1
            self.get_logger().warning(
                f"ignored a trajectory: the controller is stopped ({self.stopped})", throttle_duration_sec=1.0
            )
            self._horizon_ns = horizon_ns
            self._advance_allowed()
            return
        self._catch_up()
        arrival["arrival_sim_ns"] = self.sim.time_ns
        arrival["late_ns"] = None if start_ns is None else self.sim.time_ns - start_ns
        if not self.sim.command(points, start):
            # What joint_trajectory_controller does with a stamped trajectory whose last
            # point is past: refuse it and go on with the current one.
            # Not a limit violation: the arm goes on safely, and a process stalled while
            # sending cannot help it. Counted apart.
            self.refused += 1
            self.get_logger().error(
                f"refused a trajectory that ends in the past: stamped {(self.sim.time_ns - (start_ns or 0)) / 1e6:.1f} "
                "ms ago"
            )
            self._record({"text": "refused: it ends in the past", "kind": "refused", "trajectory": arrival})
            return
        self._log.followed(arrival, start_ns, None if start_ns is None else self.sim.time_ns - start_ns)
        self._horizon_ns = horizon_ns
        self._advance_allowed()

    def _take_violations(self) -> None:
        """Count what the controller commanded beyond a limit since the last look."""
        if not self.sim.violations:
            return
        for violation in self.sim.violations:
            segment, planned = self.sim.follower.planned_acceleration(violation.time)
            record = {
                "kind": violation.kind,
                "demanded": violation.values,
                "segment": segment,
                "planned": list(planned),
                "trajectory": self._log.active,
            }
            self._count_violation(violation.text, {**record, "sim_ns": round(violation.time * 1e9)})
        if self.franka is not None and self.stopped is None:
            # On a Franka a commanded limit break is a reflex (libfranka's motion generator checks).
            kind = self.sim.violations[0].kind
            self._stop(f"reflex ({kind} limit broken)", ERROR_OF_VIOLATION.get(kind, "joint_reflex"))
        self.sim.violations.clear()

    def _count_violation(self, what: str, record: dict[str, object] | None = None) -> None:
        self.violations += 1
        self.get_logger().error(f"limit violation #{self.violations}: {what}", throttle_duration_sec=1.0)
        self._publish_violations()
        self._record({"violation": self.violations, "text": what, **(record or {})})

    def _record(self, entry: dict[str, object]) -> None:
        self._log.record(self.sim.time_ns, entry)

    def _publish_violations(self) -> None:
        self._violations_pub.publish(UInt64(data=self.violations))

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        arm, noise = self.profile, self.settings.reset_noise
        self.sim.place(
            np.clip(arm.home + self._rng.uniform(-noise, noise, arm.dof), arm.limits.lower, arm.limits.upper)
        )
        self._publish_state()
        response.success = True
        response.message = f"arm at home{' with noise' if self.settings.reset_noise else ''}"
        return response

    def _stop(self, reason: str, error: str) -> None:
        """A reflex: the controller stops, the arm stops at once and holds where it is."""
        self.stopped = reason
        self.sim.place(self.sim.q)
        if self.franka is not None:
            self.franka.reflex(error)
        self.get_logger().warning(f"{reason}: the controller stopped, the arm holds; {self.recovery_hint}")

    def _on_inject_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self._stop("reflex (injected through ~/inject_stop)", "joint_reflex")
        response.success = True
        response.message = f"the controller stopped (reflex): {self.recovery_hint} to bring it back"
        return response

    def _on_error_recovery(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """franka_ros2's error recovery in one call, where the profile's arm has no other."""
        response.success = self.franka is None
        if self.franka is not None:
            response.message = "this arm recovers in three steps (the profile's recovery), not through this service"
        elif self.stopped is None:
            response.message = "no error to recover from"
        else:
            self._follow_again()
            response.message = "recovered: the controller holds where the arm is"
        return response

    def _follow_again(self) -> None:
        self.stopped = None
        self._hold_where_the_arm_is()
        self.get_logger().info("error recovery: the controller follows trajectories again")

    def _hold_where_the_arm_is(self) -> None:
        self.sim.follower.hold(self.sim.q)
        self.sim.monitor.restart()  # (a jump to holding is the robot's own doing, not a command)

    def _publish_diagnostics(self) -> None:
        self._diagnostics_pub.publish(DiagnosticArray(header=self._state_msg.header, status=[mock_status(self)]))

    def close(self) -> None:
        """Close the violation log, with how late the stamped commands arrived."""
        self._log.close(self.sim.time_ns)


def main(args: list[str] | None = None) -> int:
    return run_node(MockArmHardware, args)


if __name__ == "__main__":
    sys.exit(main())
