"""ArmSim: the simulated arm behind the mock hardware, without ROS.

MuJoCo physics of the profile's arm at ``physics_rate``; a ``TrajectoryFollower``
standing in for joint_trajectory_controller; its joint PD (the profile's gains, by
default) on an arm whose gravity is compensated, like a Franka's torque interface. Every update's desired state is
checked (``DesiredStateMonitor``) and what breaks a limit is kept in ``violations``.
The mock node wraps it in franka_ros2's topics; the in-process benchmark env drives it
directly.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np

from franka_agent.core.arm_mjcf import EE_SITE, arm_mjcf
from franka_agent.core.command_check import DesiredStateMonitor, Violation
from franka_agent.core.jtc_update import ControllerUpdate
from franka_agent.core.profile import RobotProfile
from franka_agent.core.trajectory import TrajectoryFollower, TrajectoryPoint

INTERPOLATE_FROM = ("desired", "measured")


class ArmSim:
    def __init__(
        self,
        profile: RobotProfile,
        physics_rate: float = 1000.0,
        p_gains: Sequence[float] | None = None,
        d_gains: Sequence[float] | None = None,
        interpolate_from: str = "desired",
        release: str = "jazzy",
    ) -> None:
        """:param p_gains: the joint PD's stiffness (Nm/rad); the profile's controller's by default.
        :param interpolate_from: where a new trajectory starts from, as
        joint_trajectory_controller's ``interpolate_from_desired_state`` (Jazzy) or
        ``open_loop_control`` (Humble) set it: "desired" (true, this project's setting) or
        "measured" (false, the controller's default).
        :param release: whose update timing the controller has (``core/jtc_update.py``)."""
        if interpolate_from not in INTERPOLATE_FROM:
            raise ValueError(f"interpolate_from must be one of {INTERPOLATE_FROM}, got {interpolate_from!r}")
        self.interpolate_from = interpolate_from
        # Time is counted in whole physics steps of whole nanoseconds: a float that adds up
        # the timestep drifts off the nanosecond grid that stamps and timers live on (the
        # mock's clock once read 1 ns short of a tick the agent waited for).
        self.timestep_ns = round(1e9 / physics_rate)
        self.model = mujoco.MjModel.from_xml_string(arm_mjcf(profile, timestep=self.timestep_ns * 1e-9))
        self.data = mujoco.MjData(self.model)
        self.update = ControllerUpdate(release, self.timestep_ns * 1e-9)  # one update per physics step
        self.steps_taken = 0
        self.profile = profile
        self.p_gains = np.asarray(profile.controller.p_gains if p_gains is None else p_gains, dtype=np.float64)
        self.d_gains = np.asarray(profile.controller.d_gains if d_gains is None else d_gains, dtype=np.float64)
        if self.p_gains.shape != (profile.dof,) or self.d_gains.shape != (profile.dof,):
            raise ValueError(f"p_gains and d_gains need {profile.dof} entries each, one per joint of the arm")
        self._effort = profile.limits.effort
        self.follower = TrajectoryFollower(profile.home)
        self.monitor = DesiredStateMonitor(profile.limits)
        self.violations: list[Violation] = []  # what the controller commanded beyond a limit
        self._site = self.model.site(EE_SITE).id
        self.place(profile.home)

    @property
    def time_ns(self) -> int:
        """Simulated time (ns), exact."""
        return self.steps_taken * self.timestep_ns

    @property
    def time(self) -> float:
        return self.time_ns * 1e-9

    @property
    def timestep(self) -> float:
        return float(self.model.opt.timestep)

    @property
    def q(self) -> np.ndarray:
        return self.data.qpos.copy()

    @property
    def dq(self) -> np.ndarray:
        return self.data.qvel.copy()

    @property
    def tcp(self) -> np.ndarray:
        return self.data.site_xpos[self._site].copy()

    def place(self, q: np.ndarray) -> None:
        """Put the arm at ``q``, at rest, holding there."""
        self.data.qpos[:] = q
        self.data.qvel[:] = 0.0
        self.data.ctrl[:] = 0.0
        mujoco.mj_forward(self.model, self.data)
        self.follower.hold(q)
        self.monitor.restart()

    def command(self, points: list[TrajectoryPoint], start: float | None = None) -> bool:
        """A new trajectory for the controller, timed from ``start`` (a zero stamp: None);
        False if the controller refuses it (it ends before now)."""
        if self.interpolate_from == "measured":
            return self.follower.set_trajectory(self.time, points, start, (self.q, self.dq))
        return self.update.take(self.follower, self.time, points, start)

    def step(self, steps: int = 1) -> None:
        """Advance ``steps`` physics steps, the joint PD tracking the trajectory."""
        model, data = self.model, self.data
        # The trajectory cannot change within one call: its desired states, and their
        # check, are computed for all the updates at once (the same numbers as one at a
        # time: test_trajectory_model.py::test_stepping_many_updates_at_once_moves_the_arm_as_one_at_a_time).
        # One update alone (a free-running mock publishing at the physics rate) is cheaper
        # without the arrays.
        if steps == 1:
            q_one, v_one = self.follower.sample(self.update.commanded_time(self.time))
            found = self.monitor.check(self.time, q_one, v_one)
            q_desired, v_desired = q_one[np.newaxis], v_one[np.newaxis]
        else:
            times = (self.steps_taken + np.arange(steps, dtype=np.int64)) * self.timestep_ns * 1e-9
            q_desired, v_desired = self.follower.sample_many(times + (self.update.commanded_time(0.0)))
            found = self.monitor.check_many(times, q_desired, v_desired)
        if found:
            self.violations.extend(found)
        for row in range(steps):
            torque = self.p_gains * (q_desired[row] - data.qpos) + self.d_gains * (v_desired[row] - data.qvel)
            data.ctrl[:] = np.clip(torque, -self._effort, self._effort)
            mujoco.mj_step(model, data)
            self.steps_taken += 1
            data.time = self.time
