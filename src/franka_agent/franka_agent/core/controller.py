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
from franka_agent.core.motion import ArmMotion, MotionLimits, WorkspaceBox

NS = 1_000_000_000


@dataclass(frozen=True)
class Command:
    """A short trajectory: ``points`` (q, v) at ``period``, 2 ``period``... after ``stamp_ns``."""

    stamp_ns: int
    period_ns: int
    points: list[tuple[np.ndarray, np.ndarray]]


class PandaController:
    """The reference the agent commands, advanced one control period at a time.

    Each ``command(now)`` commits the reference one period ahead along what it was
    doing, and only then applies what arrived since (an action, a reset goal, a stop):
    the first point of every command was already promised by the one before, so a
    command that reaches the joint controller a few ms late never has to bend the part
    it is already executing (that would squeeze a change of course into less than a
    period and spike the acceleration). A new action therefore takes hold one control
    period after it arrives.

    :param mode: "ee_delta" or "joint_delta" (see ``ArmMotion``).
    :param period_ns: control period.
    :param trajectory_points: points per command (the committed one and the next ones).
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
        self._pending_action: np.ndarray | None = None
        self._pending_goal: np.ndarray | None = None
        self._pending_stop = False
        self.reset_goal = panda.HOME.copy()

    @property
    def action_size(self) -> int:
        return 3 if self.mode == "ee_delta" else panda.DOF

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
            motion.reset(q)
        self._pending_action = None
        self._pending_goal = self.reset_goal

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
        motion.step(min(max((horizon - self._reference_ns) / NS, 0.0), 3 * period))
        self._reference_ns = horizon
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
        points = [(motion.q, motion.v), *motion.rollout(period, self.trajectory_points - 1)]
        return Command(now_ns, self.period_ns, points)

    def observation(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """The agent's observation: joint positions, joint velocities, TCP position."""
        return np.concatenate([q, dq, self.kinematics.tcp(q)])
