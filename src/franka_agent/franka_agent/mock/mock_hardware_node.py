"""MockPandaHardware: a MuJoCo Panda behind franka_ros2's interface, for training without the arm.

What the agent sees is what franka_ros2 v0.1.0 gives it on the real robot:

- ``/joint_trajectory_controller/joint_trajectory`` (trajectory_msgs/JointTrajectory):
  a new message replaces the current trajectory, which is interpolated from the
  controller's current desired state (cubic Hermite through points with velocities)
  and tracked by a joint PD with franka_ros2's gains, at the physics rate (1 kHz),
  on an arm whose gravity is compensated like the real one's;
- ``/franka/joint_states`` and ``/joint_states`` (sensor_msgs/JointState) with
  ``panda_joint1..7``, the Panda's limits and franka_ros2's home pose.

It also offers what only a simulation can: ``~/reset`` (std_srvs/Trigger) puts the arm
at home (plus ``reset_noise``), ``/clock`` lets every node run on simulated time
(``use_sim_time``), and ``speed_factor`` runs it faster than real time (0: as fast as
it can). It checks every command it receives against the Panda's position, velocity
and acceleration limits and the workspace box, counts violations on
``~/limit_violations`` (latched) and reports on ``/diagnostics``.
"""

from __future__ import annotations

import array
import sys
import time

import mujoco
import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import UInt64
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from franka_agent.core import panda
from franka_agent.core.motion import WorkspaceBox
from franka_agent.core.trajectory import TrajectoryFollower, TrajectoryPoint
from franka_agent.mock.panda_mjcf import EE_SITE, panda_mjcf
from spin_decoupler_ros.node_runner import run_node
from spin_decoupler_ros.params import declare_float, declare_float_list

# franka_ros2 v0.1.0 joint_trajectory_controller gains (franka_bringup/config/controllers.yaml).
DEFAULT_P_GAINS = [600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0]
DEFAULT_D_GAINS = [30.0, 30.0, 30.0, 30.0, 10.0, 10.0, 5.0]
COMMAND_TOPIC = "/joint_trajectory_controller/joint_trajectory"
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
# A limit is violated when exceeded by more than this share (floating-point and
# interpolation slack, far below anything physical).
LIMIT_TOLERANCE = 1e-3


class MockPandaHardware(Node):
    def __init__(self) -> None:
        # The mock is the clock: it must never follow /clock itself.
        super().__init__("mock_hardware", parameter_overrides=[Parameter("use_sim_time", value=False)])
        physics_rate = declare_float(
            self, "physics_rate", 1000.0, "physics and joint PD rate", unit="Hz", low=100.0, high=10000.0
        )
        publish_rate = declare_float(
            self,
            "publish_rate",
            500.0,
            "joint state and /clock rate, simulated time",
            unit="Hz",
            low=1.0,
            high=physics_rate,
        )
        self.speed_factor = declare_float(
            self,
            "speed_factor",
            1.0,
            "simulated seconds per wall second; 0 runs as fast as it can",
            low=0.0,
            high=1000.0,
        )
        self.reset_noise = declare_float(
            self, "reset_noise", 0.0, "uniform noise added to home on ~/reset", unit="rad", low=0.0, high=0.5
        )
        self.p_gains = np.array(declare_float_list(self, "p_gains", DEFAULT_P_GAINS, "joint PD stiffness (Nm/rad)"))
        self.d_gains = np.array(declare_float_list(self, "d_gains", DEFAULT_D_GAINS, "joint PD damping (Nm s/rad)"))
        low = declare_float_list(self, "workspace_low", [0.2, -0.45, 0.05], "workspace box lower corner (m)")
        high = declare_float_list(self, "workspace_high", [0.75, 0.45, 0.8], "workspace box upper corner (m)")
        self.box = WorkspaceBox(np.array(low), np.array(high))

        self.model = mujoco.MjModel.from_xml_string(panda_mjcf(timestep=1.0 / physics_rate))
        self.data = mujoco.MjData(self.model)
        self._scratch = mujoco.MjData(self.model)  # for checking commanded points' TCP
        self._steps_per_publish = max(1, round(physics_rate / publish_rate))
        self._rng = np.random.default_rng()
        self.follower = TrajectoryFollower(panda.HOME)
        self.violations = 0
        self.commands = 0
        self._set_configuration(panda.HOME)

        self._joint_states = [
            self.create_publisher(JointState, "/franka/joint_states", 10),
            self.create_publisher(JointState, "/joint_states", 10),
        ]
        self._clock_pub = self.create_publisher(ClockMsg, "/clock", 10)
        self._violations_pub = self.create_publisher(UInt64, "~/limit_violations", LATCHED)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._command_sub = self.create_subscription(JointTrajectory, COMMAND_TOPIC, self._on_trajectory, 10)
        self._reset_srv = self.create_service(Trigger, "~/reset", self._on_reset)
        self._state_msg = JointState(name=list(panda.JOINT_NAMES))
        self._clock_msg = ClockMsg()

        self._wall_clock = Clock(clock_type=ClockType.STEADY_TIME)
        self._chunk = self._steps_per_publish * self.model.opt.timestep
        period = 0.0 if self.speed_factor == 0.0 else self._chunk / self.speed_factor
        self._wall_start = time.monotonic()
        self._sim_start = 0.0
        self._timer = self.create_timer(period, self._on_wall_tick, clock=self._wall_clock)
        self._diagnostics_timer = self.create_timer(1.0, self._publish_diagnostics, clock=self._wall_clock)
        self._publish_violations()
        self._publish_state()
        self.get_logger().info(
            f"mock Panda ready: physics {physics_rate:g} Hz, joint states {publish_rate:g} Hz, "
            f"speed factor {self.speed_factor:g}"
        )

    # -- simulation ---------------------------------------------------------------------

    @property
    def sim_time(self) -> float:
        return float(self.data.time)

    def _set_configuration(self, q: np.ndarray) -> None:
        self.data.qpos[:] = q
        self.data.qvel[:] = 0.0
        self.data.ctrl[:] = 0.0
        mujoco.mj_forward(self.model, self.data)
        self.follower.hold(q)

    def _on_wall_tick(self) -> None:
        if self.speed_factor == 0.0:
            self._advance_chunk()
            return
        # Catch up with wall time x speed, but never spiral: beyond 0.1 s behind, let go.
        target = self._sim_start + (time.monotonic() - self._wall_start) * self.speed_factor
        if target - self.sim_time > 0.1:
            self._sim_start = self.sim_time - (time.monotonic() - self._wall_start) * self.speed_factor
            target = self.sim_time + self._chunk
        while self.sim_time + 0.5 * self._chunk < target:
            self._advance_chunk()

    def _advance_chunk(self) -> None:
        model, data = self.model, self.data
        for _ in range(self._steps_per_publish):
            q_desired, v_desired = self.follower.sample(data.time)
            torque = self.p_gains * (q_desired - data.qpos) + self.d_gains * (v_desired - data.qvel)
            data.ctrl[:] = np.clip(torque, -panda.MAX_EFFORT, panda.MAX_EFFORT)
            mujoco.mj_step(model, data)
        self._publish_state()

    def _stamp(self) -> Time:
        sec, nanosec = divmod(round(self.sim_time * 1e9), 1_000_000_000)
        return Time(sec=sec, nanosec=nanosec)

    def _publish_state(self) -> None:
        stamp = self._stamp()
        msg = self._state_msg
        msg.header.stamp = stamp
        msg.position = array.array("d", self.data.qpos.tobytes())
        msg.velocity = array.array("d", self.data.qvel.tobytes())
        msg.effort = array.array("d", self.data.ctrl.tobytes())
        for publisher in self._joint_states:
            publisher.publish(msg)
        self._clock_msg.clock = stamp
        self._clock_pub.publish(self._clock_msg)

    # -- commands -----------------------------------------------------------------------

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        try:
            order = [list(msg.joint_names).index(name) for name in panda.JOINT_NAMES]
        except ValueError:
            self.get_logger().error(
                f"rejected a trajectory for joints {list(msg.joint_names)}: expected {list(panda.JOINT_NAMES)}"
            )
            return
        points = []
        for point in msg.points:
            positions = np.asarray(point.positions, dtype=np.float64)
            velocities = np.asarray(point.velocities, dtype=np.float64)
            if positions.size != panda.DOF or velocities.size not in (0, panda.DOF):
                self.get_logger().error("rejected a trajectory: a point has the wrong number of values")
                return
            if not (np.all(np.isfinite(positions)) and np.all(np.isfinite(velocities))):
                self.get_logger().error("rejected a trajectory with NaN or inf values")
                self._count_violation("NaN or inf in a commanded point")
                return
            t = point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
            points.append(TrajectoryPoint(t, positions[order], velocities[order] if velocities.size else None))
        self.commands += 1
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        start = stamp if stamp > 0.0 else self.sim_time
        self._check_limits(points, start)
        self.follower.set_trajectory(self.sim_time, points, start)

    def _check_limits(self, points: list[TrajectoryPoint], start: float) -> None:
        """Count what the real controller would refuse or the real arm would fault on."""
        tolerance = 1.0 + LIMIT_TOLERANCE
        _, v_previous = self.follower.sample(self.sim_time)
        t_previous = self.sim_time - start
        for point in points:
            if point.time <= t_previous:
                continue  # already past: the follower drops it too
            q, v = point.positions, point.velocities
            if np.any(q < panda.LOWER - 1e-6) or np.any(q > panda.UPPER + 1e-6):
                self._count_violation(f"position outside the joint limits: {np.round(q, 4)}")
            if v is not None:
                if np.any(np.abs(v) > panda.MAX_VELOCITY * tolerance):
                    self._count_violation(f"velocity above the limits: {np.round(v, 4)}")
                dt = point.time - t_previous
                if dt > 0 and np.any(np.abs(v - v_previous) / dt > panda.MAX_ACCELERATION * tolerance):
                    self._count_violation(f"acceleration above the limits: {np.round((v - v_previous) / dt, 2)}")
                v_previous = v
            self._scratch.qpos[:] = q
            mujoco.mj_kinematics(self.model, self._scratch)
            excess = self.box.excess(self._scratch.site(EE_SITE).xpos)
            if excess > 1e-3:
                self._count_violation(f"TCP {excess * 1000:.1f} mm outside the workspace box")
            t_previous = point.time

    def _count_violation(self, what: str) -> None:
        self.violations += 1
        self.get_logger().error(f"limit violation #{self.violations}: {what}", throttle_duration_sec=1.0)
        self._publish_violations()

    def _publish_violations(self) -> None:
        self._violations_pub.publish(UInt64(data=self.violations))

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        q = panda.HOME + self._rng.uniform(-self.reset_noise, self.reset_noise, panda.DOF)
        self._set_configuration(np.clip(q, panda.LOWER, panda.UPPER))
        self._publish_state()
        response.success = True
        response.message = f"arm at home{' with noise' if self.reset_noise else ''}"
        return response

    def _publish_diagnostics(self) -> None:
        level = DiagnosticStatus.OK if self.violations == 0 else DiagnosticStatus.ERROR
        status = DiagnosticStatus(
            level=level,
            name="mock_hardware: Panda",
            hardware_id="mujoco_panda",
            message="ok" if level == DiagnosticStatus.OK else f"{self.violations} limit violations",
            values=[
                KeyValue(key="limit_violations", value=str(self.violations)),
                KeyValue(key="trajectories_received", value=str(self.commands)),
                KeyValue(key="sim_time", value=f"{self.sim_time:.3f}"),
            ],
        )
        self._diagnostics_pub.publish(DiagnosticArray(header=self._state_msg.header, status=[status]))


def main(args: list[str] | None = None) -> int:
    return run_node(MockPandaHardware, args)


if __name__ == "__main__":
    sys.exit(main())
