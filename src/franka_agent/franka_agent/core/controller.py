"""PandaController: what the Panda agent does each control period, without ROS.

The agent node feeds it measured joint states and asks it, every period, for the
next short trajectory to send; the in-process benchmark env does the same against
``PandaSim``. So both run one and the same control logic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from franka_agent.core import panda
from franka_agent.core.kinematics import PandaKinematics
from franka_agent.core.motion import ArmMotion, MotionLimits, MotionState, WorkspaceBox, braking_knots
from franka_agent.core.trajectory import sample_knots

NS = 1_000_000_000


@dataclass(frozen=True)
class Command:
    """A short trajectory: ``points`` (q, v) at ``times_ns`` after ``stamp_ns``: the planned
    ones a control period apart (``period``, 2 ``period``...), then the knots of braking to
    rest (the last point is at rest)."""

    stamp_ns: int
    period_ns: int
    points: list[tuple[np.ndarray, np.ndarray]]
    times_ns: list[int]


class PandaController:
    """The reference the agent commands, advanced one control period at a time.

    Each ``command(now)`` commits the reference one period ahead along what it was
    doing, and only then applies what arrived since (an action, a reset goal, a stop):
    the first point of every command was already promised by the one before, so a
    command that reaches the joint controller a few ms late never has to bend the part
    it is already executing (that would squeeze a change of course into less than a
    period and spike the acceleration). A new action therefore takes hold one control
    period after it arrives.

    Every command ends braking to rest, so a joint controller that hears nothing more
    (the agent stalled or died) stops the arm within the limits instead of holding a
    moving reference's last point. A tick that comes late therefore carries on from
    where the commands already sent put the joint controller at the new horizon, which
    may be part-way down that braking tail, not from where the plan would have been.

    :param mode: "ee_delta" or "joint_delta" (see ``ArmMotion``).
    :param period_ns: control period.
    :param trajectory_points: planned points per command (the committed one and the next
        ones); the braking tail follows them. They are the margin for a command that
        reaches the controller late: one arriving after all its planned points sends the
        controller from where it is straight to the first knot still ahead (with 2, a
        mock 20 ms ahead of the agent's clock saw 22 rad/s^2). Each costs an IK step.
    """

    def __init__(
        self,
        mode: str,
        limits: MotionLimits,
        box: WorkspaceBox,
        period_ns: int,
        *,
        trajectory_points: int = 3,
        reset_noise: float = 0.1,
        **motion_options: float,
    ) -> None:
        if trajectory_points < 2:
            raise ValueError("trajectory_points must be at least 2: the committed point and one more")
        self.mode = mode
        self.limits = limits
        self.box = box
        self.period_ns = period_ns
        self.trajectory_points = trajectory_points
        self.reset_noise = reset_noise
        self._motion_options = motion_options
        self.kinematics = PandaKinematics()
        self.motion: ArmMotion | None = None  # created from the first measured state
        self._reference_ns = 0  # the time the reference state refers to (one period ahead)
        self._sent_start_ns = 0  # the time of the last command's first point
        self._sent_plan: list[MotionState] = []  # its planned points, exactly
        self._sent_times = np.zeros(0)  # every point's time after the first (s)
        self._sent_q: list[np.ndarray] = []
        self._sent_v: list[np.ndarray] = []
        self._pending_action: np.ndarray | None = None
        self._pending_goal: np.ndarray | None = None
        self._pending_stop = False
        self.reset_goal = panda.HOME.copy()

    @property
    def action_size(self) -> int:
        return 3 if self.mode == "ee_delta" else panda.DOF

    def warm_up(self) -> Command:
        """Run a scratch copy through a reset and a few actions, so that first-call costs
        (lazy imports, numpy's first use of a routine: 24 ms once) are paid now, not by the
        first command, which would then reach the controller after its planned points.
        Returns the scratch copy's last command (to warm up whatever sends commands)."""
        scratch = PandaController(
            self.mode,
            self.limits,
            self.box,
            self.period_ns,
            trajectory_points=self.trajectory_points,
            reset_noise=self.reset_noise,
            **self._motion_options,
        )
        home = panda.HOME.copy()
        scratch.start(home, 0)
        scratch.begin_reset(0, np.zeros(0), home, np.zeros(panda.DOF))
        now_ns = 0
        for tick in range(6):
            if tick == 3:
                scratch.act(np.ones(scratch.action_size))
            now_ns += self.period_ns * (1 if tick != 4 else 2)  # and one late tick
            scratch.reset_reached(home, np.zeros(panda.DOF))
            scratch.command(now_ns)
        scratch.observation(home, np.zeros(panda.DOF))
        scratch.hold()
        last = scratch.command(now_ns + self.period_ns)
        assert last is not None
        return last

    def start(self, q: np.ndarray, now_ns: int) -> ArmMotion:
        """Begin from a measured configuration (once; later calls return the motion)."""
        if self.motion is None:
            self.motion = ArmMotion(
                self.mode, self.limits, self.box, q, kinematics=self.kinematics, **self._motion_options
            )
            self._reference_ns = now_ns
        return self.motion

    # -- what to do next (applied after the committed period) ---------------------------

    def act(self, action: np.ndarray) -> None:
        self._pending_action = np.asarray(action, dtype=np.float64)

    def hold(self) -> None:
        self._pending_action = self._pending_goal = None
        self._pending_stop = True

    def begin_reset(self, seed: int | None, options: np.ndarray, q: np.ndarray | None, dq: np.ndarray) -> None:
        """Head for an episode's start: the 7 joint positions in ``options``, or home plus
        ``reset_noise`` drawn from ``seed``."""
        if options.size == panda.DOF:
            goal = np.asarray(options, dtype=np.float64).copy()
        else:
            goal = panda.HOME + np.random.default_rng(seed).uniform(-self.reset_noise, self.reset_noise, panda.DOF)
        self.reset_goal = np.clip(goal, self.limits.lower, self.limits.upper)
        motion = self.motion
        # If the arm is not where the reference thinks (moved by hand after a fault, say)
        # and at rest, start again from where it really is.
        if motion is not None and q is not None and np.max(np.abs(q - motion.q)) > 0.05 and np.max(np.abs(dq)) < 0.05:
            self.replan_from(q)
        self._pending_action = None
        self._pending_goal = self.reset_goal

    def replan_from(self, q: np.ndarray) -> None:
        """Start the reference again, at rest, from a measured configuration (forgetting
        what was sent: the joint controller gets a new plan from there)."""
        if self.motion is not None:
            self.motion.reset(q)
        self._sent_plan = []

    def reset_reached(self, q: np.ndarray, dq: np.ndarray) -> bool:
        """Whether the arm rests at the reset goal (keep calling ``command`` meanwhile)."""
        motion = self.motion
        if motion is None:
            return False
        heading = motion.heading_for(self.reset_goal)
        if self._pending_goal is None and not heading:
            self._pending_goal = self.reset_goal
        return bool(motion.settled() and np.max(np.abs(q - self.reset_goal)) < 5e-3 and np.max(np.abs(dq)) < 0.02)

    def reset_error(self, q: np.ndarray) -> float:
        return float(np.max(np.abs(q - self.reset_goal)))

    # -- the period's command -----------------------------------------------------------

    def command(self, now_ns: int) -> Command | None:
        """The trajectory to send now (None before the first measured state)."""
        motion = self.motion
        if motion is None:
            return None
        period = self.period_ns / NS
        horizon = now_ns + self.period_ns
        self._commit_reference(horizon)
        if self._pending_action is not None:
            motion.act(self._pending_action)
        elif self._pending_goal is not None:
            motion.move_home(self._pending_goal)
        elif self._pending_stop:
            motion.stop()
        self._pending_action = self._pending_goal = None
        self._pending_stop = False
        # ArmMotion keeps every reference within the joint limits and, braking included,
        # inside the workspace box: what it plans is what is sent.
        plan = [motion.state, *motion.preview(period, self.trajectory_points - 1)]
        points = [(state.q, state.v) for state in plan]
        times_ns = [(i + 1) * self.period_ns for i in range(len(plan))]
        for after_ns, q, v in braking_knots(plan[-1].q, plan[-1].v, self.limits):
            points.append((q, v))
            times_ns.append(times_ns[len(plan) - 1] + after_ns)
        self._sent_start_ns = horizon
        self._sent_plan = plan
        self._sent_times = (np.array(times_ns) - self.period_ns) / NS
        self._sent_q = [q for q, _ in points]
        self._sent_v = [v for _, v in points]
        return Command(now_ns, self.period_ns, points, times_ns)

    def _commit_reference(self, horizon_ns: int) -> None:
        """Move the reference to the horizon: one period along the plan when on time (the
        point the last command promised); when late by half a period or more, to where
        the commands sent put the joint controller then (its plan, or the braking tail)."""
        motion = self.motion
        assert motion is not None
        gap_ns = horizon_ns - self._reference_ns
        self._reference_ns = horizon_ns
        if not self._sent_plan or 2 * gap_ns < 3 * self.period_ns:
            motion.step(min(max(gap_ns / NS, 0.0), 3 * self.period_ns / NS))
            return
        since_ns = horizon_ns - self._sent_start_ns
        index, offset_ns = divmod(since_ns, self.period_ns)
        if offset_ns == 0 and index < len(self._sent_plan):
            motion.adopt(self._sent_plan[index])  # a planned point, with all it came from
            return
        q, v = sample_knots(self._sent_times, self._sent_q, self._sent_v, since_ns / NS)
        motion.adopt(motion.state_of(q, v))

    def observation(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """The agent's observation: joint positions, joint velocities, TCP position."""
        return np.concatenate([q, dq, self.kinematics.tcp(q)])
