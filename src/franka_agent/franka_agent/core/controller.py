"""ArmController: what the arm agent does each control period, without ROS.

The agent node feeds it measured joint states and asks it, every period, for the
next short trajectory to send; the in-process benchmark env does the same against
``ArmSim``. So both run one and the same control logic.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass

import numpy as np

from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.limits import MotionLimits, WorkspaceBox
from franka_agent.core.motion import ArmMotion, MotionState
from franka_agent.core.reference import braking_knots
from franka_agent.core.trajectory import sample_knots
from spin_decoupler_ros.core.transitions import TransitionTable

NS = 1_000_000_000
DEFAULT_COMMAND_LEAD = 0.03  # s: see lead_periods_for and docs/timing.md
SETTLE_NS = 300_000_000  # how long after a trajectory ends the arm is taken to rest on it
# After re-planning from a measured rest, the first point comes this long after it: the
# joint controller moves from where it holds (the end of the command it followed) to the
# measured rest, which differ by the arm's tracking error, a cubic from rest to rest
# (6 d / T^2: 0.27 rad/s^2 per mrad over 150 ms, so up to 22 mrad within 6 rad/s^2).
BRIDGE_NS = 150_000_000


class Link(enum.Enum):
    """What the joint controller follows of the commands sent; its transitions are
    LINK_NEXT (test_controller_lateness.py::test_the_link_goes_only_where_its_table_says)."""

    NONE = "none"  # nothing sent since the reference (re)started from the arm
    SENT = "sent"  # the controller follows the last command sent
    WITHDRAWN = "withdrawn"  # the last one never got there: it follows the one before
    UNCERTAIN = "uncertain"  # which one it follows is unknown until the arm rests


# What may follow each. Besides these, any may go to NONE: the reference starts again
# from the arm (a re-plan, or the arm at rest after an uncertain command).
LINK_NEXT: dict[Link, frozenset[Link]] = {
    Link.NONE: frozenset({Link.SENT}),  # a command
    Link.SENT: frozenset({Link.SENT, Link.WITHDRAWN, Link.UNCERTAIN}),  # the next; not sent after all; a stall
    Link.WITHDRAWN: frozenset({Link.SENT, Link.UNCERTAIN}),  # the next command; a stall
    Link.UNCERTAIN: frozenset({Link.UNCERTAIN}),  # (another stall) until the arm rests: NONE
}


LINKS = TransitionTable("LINK_NEXT", "the link", LINK_NEXT, frozenset({Link.NONE}))


def link_may_go(link: Link, to: Link) -> bool:
    """Whether LINK_NEXT (and the way out of any) lets ``link`` go to ``to``."""
    return LINKS.allows(link, to)


def lead_periods_for(command_lead: float, period_ns: int) -> int:
    """Whole control periods covering ``command_lead`` seconds (at least one)."""
    return max(1, math.ceil(command_lead * NS / period_ns - 1e-9))


@dataclass(frozen=True)
class Command:
    """A short trajectory: ``points`` (q, v) at ``times_ns`` after ``stamp_ns``: the points
    of the trajectory sent before that still lie ahead of the horizon, the plan a control
    period apart from the horizon on, then the knots of braking to rest (the last point
    is at rest). ``repeat``: the command already sent, still in force (``bridging``):
    not to be sent again."""

    stamp_ns: int
    period_ns: int
    points: list[tuple[np.ndarray, np.ndarray]]
    times_ns: list[int]
    repeat: bool = False

    @property
    def reaches_ns(self) -> int:
        """Its first point after its stamp (its first may be past): where a lockstep mock
        stops until the next command (mock_hardware_node.py, _on_trajectory), so the world
        an agent commits with it (``AgentNode.commit_world``) ends there too
        (test_timing_models.py::test_a_seeded_run_repeats_through_terminations_resets_and_a_resume)."""
        ahead = next((t for t in self.times_ns if t > 0), self.times_ns[-1])
        return self.stamp_ns + ahead


class ArmController:
    """The reference the agent commands, advanced one control period at a time.

    Commands are planned ``lead_periods`` control periods ahead: each ``command(now)``
    moves the reference to the *horizon*, the first point of its period grid at least
    that lead after now, along what the commands already sent make the joint controller
    do; only then does it apply what arrived since (an action, a reset goal, a stop).
    The command it returns is the trajectory sent before, restricted to (now, horizon]
    (its points in between, then the state at the horizon), followed by the new plan
    from there and a braking tail.

    So a command replaces the controller's trajectory with one that coincides with it
    wherever the controller can be when the command arrives, as long as it arrives
    before its horizon: before its first point, the controller's spline from where it
    is to that point is the very segment it was following; after it, the segment that
    holds the arrival time is one it was following too. Lateness of up to the lead,
    from the network, a starved process or a stale clock, never bends the motion
    (``test_controller_lateness.py::test_no_delay_or_stall_up_to_the_lead_breaks_a_limit``).
    A new action takes hold at the horizon, the lead after it arrives.

    Every command ends braking to rest, so a joint controller that hears nothing more
    (the agent stalled or died) stops the arm within the limits instead of holding a
    moving reference's last point; after a stall the next command picks up from where
    that put the controller (part-way down the braking tail, or at rest).

    :param mode: "ee_delta" or "joint_delta" (see ``ArmMotion``).
    :param period_ns: control period.
    :param lead_periods: how many control periods ahead commands are planned: more than
        the worst lateness of a command at the joint controller (delivery, a stalled
        agent, a stale clock), and the delay before a new action takes hold.
    :param trajectory_points: planned points per command, from the horizon on (each costs
        an IK step); the braking tail follows them.
    """

    def __init__(
        self,
        mode: str,
        limits: MotionLimits,
        box: WorkspaceBox,
        period_ns: int,
        *,
        lead_periods: int = 3,
        trajectory_points: int = 3,
        reset_noise: float = 0.1,
        **motion_options: float,
    ) -> None:
        if trajectory_points < 2:
            raise ValueError("trajectory_points must be at least 2: the horizon's point and one more")
        if lead_periods < 1:
            raise ValueError("lead_periods must be at least 1")
        self.mode = mode
        self.limits = limits
        self.box = box
        self.period_ns = period_ns
        self.lead_periods = lead_periods
        self.trajectory_points = trajectory_points
        self.reset_noise = reset_noise
        self._motion_options = motion_options
        self.kinematics = ArmKinematics(limits.profile)
        self.motion: ArmMotion | None = None  # created from the first measured state
        self._reference_ns = 0  # the time the reference state refers to (the last horizon)
        # The last command sent, as absolute knots (ns, q, v), and its planned states by time.
        self._last: Command | None = None  # the last command sent (``bridging`` repeats it)
        self._sent_ns = np.zeros(0, dtype=np.int64)
        self._sent_q: list[np.ndarray] = []
        self._sent_v: list[np.ndarray] = []
        self._sent_plan: dict[int, MotionState] = {}
        self._before: tuple[np.ndarray, list[np.ndarray], list[np.ndarray]] = (self._sent_ns, [], [])
        self.link = Link.NONE
        self._pending_action: np.ndarray | None = None
        self._pending_goal: np.ndarray | None = None
        self._pending_stop = False
        self.reset_goal = limits.profile.home.copy()

    @property
    def reference_ns(self) -> int:
        """The time the reference state refers to: the last command's horizon."""
        return self._reference_ns

    @property
    def action_size(self) -> int:
        return 3 if self.mode == "ee_delta" else self.limits.dof

    def warm_up(self) -> Command:
        """Run a scratch copy through a reset and a few actions, so that first-call costs
        (lazy imports, numpy's first use of a routine: 24 ms once) are paid now, not by the
        first command, which would then reach the controller after its planned points.
        Returns the scratch copy's last command (to warm up whatever sends commands)."""
        scratch = ArmController(
            self.mode,
            self.limits,
            self.box,
            self.period_ns,
            lead_periods=self.lead_periods,
            trajectory_points=self.trajectory_points,
            reset_noise=self.reset_noise,
            **self._motion_options,
        )
        home = self.limits.profile.home.copy()
        dof = self.limits.dof
        scratch.start(home, 0)
        scratch.begin_reset(0, np.zeros(0), home, np.zeros(dof))
        now_ns = 0
        for tick in range(6):
            if tick == 3:
                scratch.act(np.ones(scratch.action_size))
            now_ns += self.period_ns * (1 if tick != 4 else 2)  # and one late tick
            scratch.reset_reached(home, np.zeros(dof))
            scratch.command(now_ns)
        scratch.observation(home, np.zeros(dof))
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
        """Head for an episode's start: the joint positions in ``options``, or home plus
        ``reset_noise`` drawn from ``seed``; other options raise ValueError (``check_reset_options``)."""
        self.check_reset_options(options)
        if options.size == self.limits.dof:
            goal = np.asarray(options, dtype=np.float64).copy()
        else:
            goal = self.limits.profile.home + np.random.default_rng(seed).uniform(
                -self.reset_noise, self.reset_noise, self.limits.dof
            )
        self.reset_goal = np.clip(goal, self.limits.lower, self.limits.upper)
        motion = self.motion
        # If the arm is not where the reference thinks (moved by hand after a fault, say)
        # and at rest, start again from where it really is.
        if motion is not None and q is not None and np.max(np.abs(q - motion.q)) > 0.05 and np.max(np.abs(dq)) < 0.05:
            self.replan_from(q)
        self._pending_action = None
        self._pending_goal = self.reset_goal

    def check_reset_options(self, options: np.ndarray) -> None:
        """Reset options are none (home) or one finite position per joint: anything else is
        refused with what was sent, before the arm is told to go anywhere
        (test_panda_controller.py::test_reset_options_other_than_a_pose_are_refused)."""
        dof = self.limits.dof
        if options.size not in (0, dof) or not np.all(np.isfinite(options)):
            raise ValueError(
                f"reset options {np.array2string(options, precision=4)}: the arm takes none (home plus its reset "
                f"noise) or {dof} finite joint positions (rad, the start pose)"
            )

    def replan_from(self, q: np.ndarray) -> None:
        """Start the reference again, at rest, from a measured configuration (forgetting
        what was sent: the joint controller gets a new plan from there)."""
        if self.motion is not None:
            self.motion.reset(q)
        self._forget_sent()

    def _forget_sent(self) -> None:
        self._sent_ns = np.zeros(0, dtype=np.int64)
        self._sent_q, self._sent_v, self._sent_plan = [], [], {}
        self._before = (self._sent_ns, [], [])
        self._enter(Link.NONE)

    def _enter(self, link: Link) -> None:
        """Go to ``link`` where LINK_NEXT allows it; anything else is a defect."""
        LINKS.check(self.link, link)
        self.link = link

    @property
    def uncertain(self) -> bool:
        """Whether the last command reached the joint controller is unknown."""
        return self.link is Link.UNCERTAIN

    def mark_uncertain(self) -> None:
        """What the joint controller follows is unknown: the agent stalled while sending
        a command, or was stopped (a command sent just before may have reached the
        controller too late, and been refused). ``settle_uncertainty`` waits for the arm
        to rest, before the next command."""
        if self._sent_ns.size > 0:
            self._enter(Link.UNCERTAIN)

    def settle_uncertainty(self, q: np.ndarray, dq: np.ndarray, t_ns: int) -> bool:
        """Once the arm, measured (q, dq) at ``t_ns``, rests at the end of whichever command
        the joint controller followed (every command ends braking to rest), plan on from
        there, at rest; False while it cannot be at rest yet. No guess of which command
        that was (test_controller_lateness.py::
        test_after_an_uncertain_command_the_agent_replans_from_the_arm_at_rest)."""
        if not self.uncertain:
            return True
        ends = max(int(self._sent_ns[-1]), int(self._before[0][-1]) if self._before[0].size else 0)
        # At rest after the later end (or, should the arm's velocity never read still,
        # a while after that: its position tells all the same).
        if t_ns < ends + SETTLE_NS or (np.max(np.abs(dq)) > 1e-3 and t_ns < ends + 4 * SETTLE_NS):
            return False
        self.replan_from(q)
        # (What the controller holds is the end of what it followed, q only up to the
        # tracking error: the new plan starts at rest at q, BRIDGE_NS on.)
        self._reference_ns = max(self._reference_ns, t_ns + BRIDGE_NS)
        return True

    def withdraw(self) -> None:
        """The last command never reached the joint controller, or was refused by it (it
        left too late, the agent having stalled): plan the next one from the one before,
        which the controller goes on following."""
        self._sent_ns, self._sent_q, self._sent_v = self._before
        self._sent_plan = {}
        self._enter(Link.WITHDRAWN)

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
        """The trajectory to send now (None before the first measured state; while
        ``bridging``, the last one again, marked ``repeat``)."""
        motion = self.motion
        if motion is None:
            return None
        period_ns = self.period_ns
        behind_ns = now_ns + self.lead_periods * period_ns - self._reference_ns
        horizon_ns = self._reference_ns + max(0, -(-behind_ns // period_ns)) * period_ns
        self._commit_reference(horizon_ns)
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
        plan = [motion.state, *motion.preview(period_ns / NS, self.trajectory_points - 1)]
        # From the last point sent at or before now (its time from now is negative): the
        # controller then samples this message's own segments, the very ones it followed,
        # and never a bridge from its previous command, which each release of
        # joint_trajectory_controller stamps a control period off (core/jtc_update.py).
        if self.bridging(now_ns) and self._last is not None:
            return dataclasses.replace(self._last, repeat=True)
        past = np.flatnonzero(self._sent_ns <= now_ns)
        kept = (self._sent_ns > now_ns) & (self._sent_ns < horizon_ns)
        if past.size:
            kept[past[-1]] = True
        times_ns = [int(t) for t in self._sent_ns[kept]]
        points = [(self._sent_q[i], self._sent_v[i]) for i in np.flatnonzero(kept)]
        plan_ns = [horizon_ns + i * period_ns for i in range(len(plan))]
        times_ns += plan_ns
        points += [(state.q, state.v) for state in plan]
        for after_ns, q, v in braking_knots(plan[-1].q, plan[-1].v, self.limits):
            points.append((q, v))
            times_ns.append(plan_ns[-1] + after_ns)
        self._before = (self._sent_ns, self._sent_q, self._sent_v)
        self._enter(Link.SENT)
        self._sent_ns = np.array(times_ns, dtype=np.int64)
        self._sent_q = [q for q, _ in points]
        self._sent_v = [v for _, v in points]
        self._sent_plan = dict(zip(plan_ns, plan, strict=True))
        self._last = Command(now_ns, period_ns, points, [t - now_ns for t in times_ns])
        return self._last

    def bridging(self, now_ns: int) -> bool:
        """Whether the joint controller is still on its way from its last command to the
        first point of the one command sent since the agent (re)started its plan: nothing
        new is sent then (``Command.repeat``), as every new trajectory would start that bridge again from the
        last command, which joint_trajectory_controller takes one update off
        (core/jtc_update.py): a jump at every message, measured on the genuine controller
        (test_panda_controller.py::test_a_new_plan_is_sent_once_until_its_first_point_is_reached)."""
        return self.link is Link.SENT and self._sent_ns.size > 0 and int(self._sent_ns[0]) > now_ns

    def _commit_reference(self, horizon_ns: int) -> None:
        """Move the reference to the horizon along what the commands sent make the joint
        controller do: the planned state sent for that time (stepped to, one period on,
        so a reset's phases advance), else the point the sent trajectory reaches then
        (part-way down its braking tail, or at its end)."""
        motion = self.motion
        assert motion is not None
        gap_ns = horizon_ns - self._reference_ns
        self._reference_ns = horizon_ns
        if self._sent_ns.size == 0 or (gap_ns <= 0 and self.link is not Link.WITHDRAWN):
            return  # nothing sent (yet, or since a replan): the arm rests where the reference is
        planned = self._sent_plan.get(horizon_ns)
        if planned is not None:
            if gap_ns == self.period_ns:
                motion.step(gap_ns / NS)  # the state previewed for it, normally
            if gap_ns != self.period_ns or not (
                np.array_equal(motion.q, planned.q) and np.array_equal(motion.v, planned.v)
            ):
                motion.adopt(planned)
            return
        times = (self._sent_ns - self._sent_ns[0]) / NS
        q, v = sample_knots(times, self._sent_q, self._sent_v, (horizon_ns - self._sent_ns[0]) / NS)
        motion.adopt(motion.state_of(q, v))

    def observation(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """The agent's observation: joint positions, joint velocities, TCP position."""
        return np.concatenate([q, dq, self.kinematics.tcp(q)])
