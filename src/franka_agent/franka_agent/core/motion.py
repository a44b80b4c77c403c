"""From a normalised RL action to a joint reference the arm can follow, within hard limits.

``ArmMotion`` is what the agent commands. An ``ee_delta`` action moves a Cartesian
reference for the TCP (bounded by the shrunk workspace box, so straight, target-based
and drift-free), differential IK turns it into joint goals, and a joint reference
(``reference.ReferenceGenerator``) tracks those within the joint limits
(``limits.MotionLimits``). A ``joint_delta`` action (and a reset, ``homing.py``) sets
the joint goal directly. Whatever the goal, a step is taken only if the arm could still
brake from it (``reference.braking_knots``), within the acceleration limits, without the
TCP leaving the workspace box; otherwise the reference brakes instead.

Pure numpy, no ROS.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import numpy as np

from franka_agent.core.homing import HOMING, Homing, joint_route_search
from franka_agent.core.kinematics import ArmKinematics, solve_ik
from franka_agent.core.limits import Bounds, MotionLimits, WorkspaceBox
from franka_agent.core.reference import ReferenceGenerator, braking_tcps

ACTION_MODES = ("ee_delta", "joint_delta")
FOLLOW_GAIN = 20.0  # 1/s: how fast the joints close a gap to the IK solution (50 ms)
ROUTE_CHECK_EVERY = 0.002  # s of control period per check a reset's route search makes (0.2-0.3 ms each)


@dataclass
class MotionState:
    """Everything ``ArmMotion`` advances from: replaying one restores its plan exactly."""

    q: np.ndarray  # joint reference
    v: np.ndarray
    x: np.ndarray  # Cartesian reference of the TCP
    xv: np.ndarray
    ik: np.ndarray  # joints that put the TCP at x (the joint goal while Cartesian)
    risk: float  # _box_risk(q, v)


def _uniform_scale(limit: np.ndarray, vector: np.ndarray) -> float:
    """The largest factor <= 1 that brings every element of ``vector`` within ``limit``
    (elements that are zero constrain nothing)."""
    magnitude = np.abs(vector)
    moving = magnitude > 1e-12
    if not np.any(moving):
        return 1.0
    return min(1.0, float(np.min(limit[moving] / magnitude[moving])))


# m/s^2 per axis, the Cartesian reference's acceleration: with jerk-capped joint
# accelerations (``MotionLimits.jerk_capped``), what those joints follow without the hand
# overshooting (at 2 m/s^2 a proportional policy no longer reached the Franka arms'
# targets: test_panda_controller.py::test_inprocess_env_runs_the_task_and_a_proportional_policy_solves_it).
CARTESIAN_ACCELERATION = 2.0
CARTESIAN_ACCELERATION_JERK_CAPPED = 0.5
# m per axis, the hand target's move for a full ``ee_delta`` action: fine enough that a
# learned policy stops inside the reach task's 2 cm rather than overshooting it (at 3 cm
# its deterministic policies circled targets: docs/panda.md, bench/robot_minutes.py).
MAX_EE_STEP = 0.015


class ArmMotion:
    """The commanded motion of the arm, advanced one control period at a time.

    :param mode: "ee_delta" or "joint_delta" (see the module docstring).
    :param limits: joint limits of the commands.
    :param box: the workspace box; Cartesian targets stay ``box_margin`` inside it.
    :param max_ee_step: TCP move per axis for a full ``ee_delta`` action (m).
    :param max_joint_step: joint move for a full ``joint_delta`` action (rad).
    :param cartesian_speed: TCP speed limit per axis (m/s) of the Cartesian reference.
    :param cartesian_acceleration: its acceleration limit per axis (m/s^2).
    """

    def __init__(
        self,
        mode: str,
        limits: MotionLimits,
        box: WorkspaceBox,
        q: np.ndarray,
        *,
        max_ee_step: float = MAX_EE_STEP,
        max_joint_step: float = 0.15,
        box_margin: float = 0.02,
        cartesian_speed: float = 0.3,
        cartesian_acceleration: float = CARTESIAN_ACCELERATION,
        kinematics: ArmKinematics | None = None,
    ) -> None:
        if mode not in ACTION_MODES:
            raise ValueError(f"action mode '{mode}' is not one of {', '.join(ACTION_MODES)}")
        self.mode = mode
        self.limits = limits
        self.box = box
        self.goal_box = box.shrunk(box_margin)
        self._guard_box = box.shrunk(min(0.001, box_margin / 2))
        self.max_ee_step = max_ee_step
        self.max_joint_step = max_joint_step
        self.kinematics = kinematics or ArmKinematics(limits.profile)
        self.joints = ReferenceGenerator(limits.joints, q)
        cartesian = Bounds(
            self.goal_box.low, self.goal_box.high, np.full(3, cartesian_speed), np.full(3, cartesian_acceleration)
        )
        self.cartesian = ReferenceGenerator(cartesian, self.kinematics.tcp(self.joints.q))
        self._ik = self.joints.q.copy()
        self.cartesian_active = False  # joint goals come from the Cartesian reference
        self.guard_brakes = 0  # steps the box guard had to brake (rare with ee_delta)
        self._final_goal: np.ndarray | None = None  # where move_home ends
        self.homing = Homing.IDLE
        self._phase_ticks = 0  # in the phase (posture: since the last progress)
        self._phase_best = np.inf  # posture: the smallest joint error so far
        self._route: list[np.ndarray] = []  # joint waypoints still to go, the final goal last
        self._search: Generator[None, None, list[np.ndarray] | None] | None = None
        self._hand_first_if_no_route = True
        # Routes are checked a centimetre inside the box: the joints' real path strays
        # from the profile checked by a few mm, and the guard brakes 1 mm inside.
        self._route_box = box.shrunk(min(0.01, box_margin / 2))
        self._risk: float | None = None
        # States ``preview`` computed ahead (each with whether the guard braked), valid
        # until an input changes: the next ``step`` of the same length takes the first
        # instead of computing it again (two thirds of a steady tick's planning).
        self.reuse_lookahead = True
        self._lookahead: list[tuple[MotionState, bool]] = []
        self._lookahead_dt = 0.0

    @property
    def action_size(self) -> int:
        return 3 if self.mode == "ee_delta" else self.limits.dof

    @property
    def q(self) -> np.ndarray:
        return self.joints.q

    @property
    def v(self) -> np.ndarray:
        return self.joints.v

    @property
    def state(self) -> MotionState:
        """The reference now (q, v, and the Cartesian reference and IK seed it came from)."""
        return self._state()

    def state_of(self, q: np.ndarray, v: np.ndarray) -> MotionState:
        """A reference state for joints at (q, v): the Cartesian reference on the TCP,
        moving with it, and the IK seed on the joints."""
        tcp, jacobian = self.kinematics.tcp_and_jacobian(q)
        return MotionState(q.copy(), v.copy(), tcp, jacobian @ v, q.copy(), self._box_risk(q, v))

    def adopt(self, state: MotionState) -> None:
        """Carry on from ``state`` (where the joint controller is, after a late tick) with
        the same goals: every step from any state within the limits stays within them."""
        self.joints.q, self.joints.v = state.q.copy(), state.v.copy()
        self.cartesian.q, self.cartesian.v = state.x.copy(), state.xv.copy()
        self._ik = state.ik.copy()
        self._risk = state.risk
        self._lookahead = []

    # -- commands -----------------------------------------------------------------------

    def reset(self, q: np.ndarray) -> None:
        """Restart at rest from a measured configuration, holding it joint by joint (a
        Cartesian hold would let the posture drift through the IK's null space;
        test_controller_lateness.py::test_a_replanned_hold_stays_where_the_arm_is)."""
        self.joints.reset(q)
        self.cartesian_active = False
        self._final_goal = None
        self._enter(Homing.IDLE)
        self._risk = None
        self._lookahead = []
        self._follow_joints()

    def act(self, action: np.ndarray) -> None:
        """Take a normalised action: set the Cartesian target, or the joint goal."""
        self._final_goal = None
        self._enter(Homing.IDLE)
        self._lookahead = []
        action = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        if self.mode == "ee_delta":
            if not self.cartesian_active:
                self._follow_joints()
                self.cartesian_active = True
            self.cartesian.set_goal(self.cartesian.q + action * self.max_ee_step)
        else:
            self.move_joints(self._pull_into_box(self.joints.q, self.joints.q + action * self.max_joint_step))

    def move_joints(self, goal: np.ndarray) -> None:
        """Go to a joint configuration (a joint action)."""
        self.cartesian_active = False
        self._final_goal = None
        self._enter(Homing.IDLE)
        self._lookahead = []
        self.joints.set_goal(goal)

    def move_home(self, goal: np.ndarray) -> None:
        """Go to a start configuration from anywhere in the box. Once at rest, the joints
        go there on a route that keeps the hand in the box: straight if that does, else
        the most joints at a time (a direct move can swing the hand out, where the guard
        would stop it for good). Without such a route, the hand first goes in a straight
        line to where ``goal`` puts it, then the posture turns towards ``goal`` through
        the IK's null space, then the joints go the rest of the way."""
        self._lookahead = []
        self._final_goal = np.clip(goal, self.limits.lower, self.limits.upper)
        self._brake_then_search(then_hand_first=True)

    def stop(self) -> None:
        """Brake within the limits and hold."""
        self._final_goal = None
        self._enter(Homing.IDLE)
        self._lookahead = []
        if self.cartesian_active:
            self.cartesian.stop()
        else:
            self.joints.stop()

    def heading_for(self, goal: np.ndarray) -> bool:
        """Whether the motion is on its way to the joint configuration ``goal``."""
        final = (
            self._final_goal if self._final_goal is not None else (None if self.cartesian_active else self.joints.goal)
        )
        return final is not None and np.array_equal(final, np.clip(goal, self.limits.lower, self.limits.upper))

    def settled(self) -> bool:
        return (
            self._final_goal is None
            and self.joints.settled()
            and (not self.cartesian_active or self.cartesian.settled(1e-4, 1e-3))
        )

    # -- advancing ----------------------------------------------------------------------

    def step(self, dt: float) -> tuple[np.ndarray, np.ndarray]:
        if self._final_goal is not None:
            self._lookahead = []  # the phase may change before the step
            self._advance_move_home(dt)
        if self._lookahead and dt == self._lookahead_dt:
            state, braked = self._lookahead.pop(0)
        else:
            self._lookahead = []
            state, braked = self._advance(self._state(), dt)
        self.guard_brakes += braked
        self._risk = state.risk
        self.joints.q, self.joints.v = state.q, state.v
        self.cartesian.q, self.cartesian.v = state.x, state.xv
        self._ik = state.ik
        if self.cartesian_active:
            self.joints.goal = state.ik
        return state.q, state.v

    def preview(self, period: float, count: int) -> list[MotionState]:
        """The next ``count`` reference states, ``period`` apart, without advancing."""
        if period != self._lookahead_dt or not self.reuse_lookahead:
            self._lookahead, self._lookahead_dt = [], period
        state = self._lookahead[-1][0] if self._lookahead else self._state()
        while len(self._lookahead) < count:
            state, braked = self._advance(state, period)
            self._lookahead.append((state, braked))
        states = [state for state, _ in self._lookahead[:count]]
        if not self.reuse_lookahead:
            self._lookahead = []  # (for tests: every step then plans afresh)
        return states

    def _advance_move_home(self, dt: float) -> None:
        goal = self._final_goal
        assert goal is not None
        self._phase_ticks += 1
        phase = self.homing
        if phase is Homing.STOP and np.max(np.abs(self.joints.v)) < 1e-2:
            self._search = joint_route_search(self.joints.q, goal, self.limits, self._route_box, self.kinematics)
            self._enter(Homing.SEARCH)
            phase = Homing.SEARCH  # (it starts on this tick)
        if phase is Homing.SEARCH:
            self._search_on(goal, max(1, int(dt / ROUTE_CHECK_EVERY)))
        elif phase is Homing.HAND and self.cartesian.settled(1e-3, 1e-2) and self.joints.settled(1e-2, 5e-2):
            self._enter(Homing.POSTURE)
        elif phase is Homing.POSTURE:
            error = float(np.max(np.abs(self.joints.q - goal)))
            if error < self._phase_best - 1e-3:
                self._phase_best, self._phase_ticks = error, 0
            # Close enough, or as close as the null space gets (no progress for 100 ticks):
            # the joints, on a route if there is one (straight otherwise: the guard holds).
            if error < 0.05 or self._phase_ticks > 100:
                self._brake_then_search(then_hand_first=False)
        elif phase is Homing.ROUTE and self.joints.settled():
            self._route.pop(0)
            self._set_joint_goal(self._route[0])

    def _enter(self, phase: Homing) -> None:
        """Go to ``phase``, as the table allows; anything else is a defect, said as such."""
        HOMING.check(self.homing, phase)
        self.homing = phase
        self._phase_ticks = 0
        self._phase_best = np.inf

    def _brake_then_search(self, then_hand_first: bool) -> None:
        """Bring the joints to rest, then search for a route (see ``move_home``)."""
        self.cartesian_active = False
        self.joints.stop()
        self._enter(Homing.STOP)
        self._hand_first_if_no_route = then_hand_first

    def _search_on(self, goal: np.ndarray, checks: int) -> None:
        """Take the route search ``checks`` moves further (the arm holds meanwhile), and
        set off when it ends: on the route, or, without one, the hand first (or, after
        that, straight to the goal)."""
        search = self._search
        assert search is not None
        for _ in range(checks):
            try:
                next(search)
            except StopIteration as done:
                route = done.value
                if route is not None:
                    self._follow_route(route)
                elif self._hand_first_if_no_route:
                    self._follow_joints()
                    self.cartesian_active = True
                    self.cartesian.set_goal(self.goal_box.clip(self.kinematics.tcp(goal)))
                    self._enter(Homing.HAND)
                else:
                    self._follow_route([goal])
                return

    def _follow_route(self, route: list[np.ndarray]) -> None:
        self._route = route
        self._enter(Homing.ROUTE)
        self._set_joint_goal(route[0])

    def _set_joint_goal(self, goal: np.ndarray) -> None:
        if len(self._route) == 1:
            self.move_joints(goal)  # the last leg: move_home is done
        else:
            self.cartesian_active = False
            self.joints.set_goal(goal)

    def _state(self) -> MotionState:
        if self._risk is None:
            self._risk = self._box_risk(self.joints.q, self.joints.v)
        return MotionState(self.joints.q, self.joints.v, self.cartesian.q, self.cartesian.v, self._ik, self._risk)

    def _advance(self, state: MotionState, dt: float) -> tuple[MotionState, bool]:
        if dt <= 0.0:  # no time passes (two commands at one clock reading): no motion
            return state, False
        x, xv, ik = state.x, state.xv, state.ik
        goal = self.joints.goal
        if self.cartesian_active:
            x, xv = self.cartesian.advance(x, xv, dt)
            if self._final_goal is not None:  # move_home: the posture drawn towards its goal
                ik = solve_ik(self.kinematics, ik, x, self.limits, posture=self._final_goal, posture_gain=0.02)
            else:
                ik = solve_ik(self.kinematics, ik, x, self.limits)
            q, v = self._follow_ik(state.q, state.v, ik, state.ik, dt)
        else:
            q, v = self._joint_step(state.q, state.v, goal, dt)
        risk = self._box_risk(q, v)
        if risk <= max(state.risk, 0.0) + 1e-5:
            return MotionState(q, v, x, xv, ik, risk), False
        # Not viable: braking from there could take the TCP out of the box. Brake now.
        a = self.limits.acceleration
        q, v = self._joint_step(state.q, state.v, state.q + state.v * np.abs(state.v) / (2 * a), dt)
        return MotionState(q, v, self.kinematics.tcp(q), np.zeros(3), q, self._box_risk(q, v)), True

    def _follow_ik(
        self, q: np.ndarray, v: np.ndarray, ik: np.ndarray, ik_before: np.ndarray, dt: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Move the joints with the IK solution, so the hand follows the straight Cartesian
        reference: the solution's own velocity (feedforward) plus a gentle pull onto it,
        the whole velocity (and its change) scaled down together to the joint limits so
        its direction is kept; only next to a position limit is a joint capped on its own
        (the braking rule of ``ReferenceGenerator``)."""
        limits = self.limits
        a = limits.acceleration
        desired = (ik - ik_before) / dt + FOLLOW_GAIN * (ik - q)
        desired *= _uniform_scale(limits.velocity, desired)
        change = desired - v
        change *= _uniform_scale(a * dt, change)
        new_v = v + change
        upper = ReferenceGenerator._stoppable(limits.upper - q, v, a, dt)
        lower = ReferenceGenerator._stoppable(q - limits.lower, -v, a, dt)
        capped = np.clip(new_v, -lower, upper)
        new_v = v + np.clip(capped - v, -a * dt, a * dt)
        new_q = q + 0.5 * (v + new_v) * dt
        return np.clip(new_q, limits.lower, limits.upper), np.clip(new_v, -limits.velocity, limits.velocity)

    def _joint_step(self, q: np.ndarray, v: np.ndarray, goal: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        saved, self.joints.goal = self.joints.goal, np.clip(goal, self.limits.lower, self.limits.upper)
        try:
            return self.joints.advance(q, v, dt)
        finally:
            self.joints.goal = saved

    def _box_risk(self, q: np.ndarray, v: np.ndarray) -> float:
        """How far outside the box the TCP would get if the joints braked now (m; negative:
        how far inside it stays), checked where ``braking_tcps`` looks."""
        return self._signed_distance(braking_tcps(self.kinematics, q, v, self.limits))

    def _signed_distance(self, tcps: np.ndarray) -> float:
        """The largest signed distance of TCPs (one per row) outside the guard box (the
        workspace box less a millimetre, so the braking path between its checked points
        never costs the real box anything): how far outside the nearest face the worst
        is, or minus how far inside."""
        box = self._guard_box
        return -float(np.min(np.minimum(tcps - box.low, box.high - tcps)))

    def _follow_joints(self) -> None:
        """Put the Cartesian reference (and IK seed) where the joint reference is, at rest."""
        self._ik = self.joints.q.copy()
        self.cartesian.reset(self.kinematics.tcp(self.joints.q))

    def _pull_into_box(self, q_from: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Scale a joint move back towards ``q_from`` until the goal's TCP is in the goal
        box, or, if ``q_from`` itself is outside it, at least no further outside."""
        goal = np.clip(goal, self.limits.lower, self.limits.upper)
        allowed = self.goal_box.excess(self.kinematics.tcp(q_from))

        def acceptable(q: np.ndarray) -> bool:
            return self.goal_box.excess(self.kinematics.tcp(q)) <= allowed + 1e-9

        if acceptable(goal):
            return goal
        low, high = 0.0, 1.0
        for _ in range(12):
            middle = 0.5 * (low + high)
            if acceptable(q_from + middle * (goal - q_from)):
                low = middle
            else:
                high = middle
        return q_from + low * (goal - q_from)
