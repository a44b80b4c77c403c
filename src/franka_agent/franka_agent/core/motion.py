"""From a normalised RL action to a joint reference the Panda can follow, within hard limits.

Pure numpy. The pieces:

- ``WorkspaceBox``: the Cartesian box the hand's TCP must stay in.
- ``Bounds`` and ``ReferenceGenerator``: a reference (position, velocity) in any number
  of dimensions that chases a goal within position, velocity and acceleration bounds,
  never overshooting the goal per axis (so it never leaves the span between its start
  and its goal, which is what keeps commands inside the limits).
- ``ArmMotion``: what the agent commands. An ``ee_delta`` action moves a Cartesian
  reference for the TCP (bounded by the shrunk workspace box, so straight, target-
  based and drift-free), differential IK turns it into joint goals, and a joint
  reference tracks those within the joint limits. A ``joint_delta`` action (and a
  reset) sets the joint goal directly. Whatever the goal, a step is taken only if the
  arm could still brake from it, within the acceleration limits, without the TCP
  leaving the workspace box; otherwise the reference brakes instead.
- ``braking_knots``: the tail every command ends with, each joint braking to rest
  within its acceleration limit, so that a joint controller which hears nothing more
  brings the arm to rest smoothly (and newer joint_trajectory_controllers, which refuse
  trajectories that end moving, accept it).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Generator
from dataclasses import dataclass, field

import numpy as np

from franka_agent.core import panda
from franka_agent.core.kinematics import PandaKinematics

ACTION_MODES = ("ee_delta", "joint_delta")
FOLLOW_GAIN = 20.0  # 1/s: how fast the joints close a gap to the IK solution (50 ms)
BRAKING_CHECKS = np.array([0.25, 0.5, 0.75])  # shares of the longest stop the box guard checks too
ROUTE_CHECK_EVERY = 0.002  # s of control period per check a reset's route search makes (0.2-0.3 ms each)
BRAKING_SAMPLES_PER_CHECK = 8  # points of a move whose braking one such check tests


@dataclass(frozen=True)
class WorkspaceBox:
    """An axis-aligned box (m, base frame) for the TCP."""

    low: np.ndarray
    high: np.ndarray

    def __post_init__(self) -> None:
        low = np.asarray(self.low, dtype=np.float64)
        high = np.asarray(self.high, dtype=np.float64)
        if low.shape != (3,) or high.shape != (3,) or np.any(low >= high):
            raise ValueError(f"workspace box needs low < high in x, y, z; got {low} and {high}")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    def contains(self, point: np.ndarray, tolerance: float = 0.0) -> bool:
        return bool(np.all(point >= self.low - tolerance) and np.all(point <= self.high + tolerance))

    def clip(self, point: np.ndarray) -> np.ndarray:
        return np.clip(point, self.low, self.high)

    def shrunk(self, margin: float) -> WorkspaceBox:
        if np.any(self.high - self.low <= 2 * margin):
            raise ValueError(f"workspace box is too small for a {margin} m margin")
        return WorkspaceBox(self.low + margin, self.high - margin)

    def excess(self, point: np.ndarray) -> float:
        """How far (m) outside the box a point is (or the farthest of several, one per
        row); 0 inside."""
        return float(np.max(np.maximum(self.low - point, point - self.high).clip(min=0.0)))


@dataclass(frozen=True)
class Bounds:
    """Per-axis position bounds and speed and acceleration limits of a reference."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray


@dataclass(frozen=True)
class MotionLimits:
    """The joint limits the agent's commands keep: a share of the Panda's, plus a margin.

    :param velocity_fraction: share of the Panda's joint velocity limits used.
    :param acceleration_fraction: share of its acceleration limits. A full reversal of
        acceleration in one control period is a jerk of 2 a / T: at 1.0 that stays within
        the Panda's jerk limits up to 250 Hz, at 0.5 up to 500 Hz.
    :param joint_margin: distance (rad) kept from every joint's position limits.
    """

    velocity_fraction: float = 0.5
    acceleration_fraction: float = 0.5
    joint_margin: float = 0.05
    joints: Bounds = field(init=False)

    def __post_init__(self) -> None:
        for name in ("velocity_fraction", "acceleration_fraction"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {value}")
        if not 0.0 <= self.joint_margin < 0.5:
            raise ValueError(f"joint_margin must be in [0, 0.5) rad, got {self.joint_margin}")
        joints = Bounds(
            panda.LOWER + self.joint_margin,
            panda.UPPER - self.joint_margin,
            panda.MAX_VELOCITY * self.velocity_fraction,
            panda.MAX_ACCELERATION * self.acceleration_fraction,
        )
        object.__setattr__(self, "joints", joints)

    @property
    def lower(self) -> np.ndarray:
        return self.joints.lower

    @property
    def upper(self) -> np.ndarray:
        return self.joints.upper

    @property
    def velocity(self) -> np.ndarray:
        return self.joints.velocity

    @property
    def acceleration(self) -> np.ndarray:
        return self.joints.acceleration

    def max_control_rate(self) -> float:
        """Highest control rate (Hz) at which a full acceleration reversal per period
        stays within the Panda's jerk limits."""
        return float(np.min(panda.MAX_JERK / (2.0 * self.acceleration)))


class ReferenceGenerator:
    """A reference (x, v) that chases a goal within ``Bounds``.

    Each ``step(dt)`` picks, per axis, the fastest next velocity from which it can still
    stop on the goal and short of the position bounds, and moves towards it by at most
    ``a dt``. So an axis never passes its goal while heading for it, and a new goal is
    taken up from wherever the reference is, without a jump.
    """

    def __init__(self, bounds: Bounds, start: np.ndarray) -> None:
        self.bounds = bounds
        self.q = np.clip(np.asarray(start, dtype=np.float64), bounds.lower, bounds.upper)
        self.v = np.zeros_like(self.q)
        self.goal = self.q.copy()

    def reset(self, start: np.ndarray) -> None:
        """Restart at rest from ``start``."""
        self.q = np.clip(np.asarray(start, dtype=np.float64), self.bounds.lower, self.bounds.upper)
        self.v = np.zeros_like(self.q)
        self.goal = self.q.copy()

    def set_goal(self, goal: np.ndarray) -> None:
        self.goal = np.clip(goal, self.bounds.lower, self.bounds.upper)

    def stop(self) -> None:
        """Brake as hard as allowed and hold where it comes to rest."""
        self.set_goal(self.q + self.v * np.abs(self.v) / (2 * self.bounds.acceleration))

    def step(self, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Advance by ``dt`` seconds; return the new (x, v)."""
        self.q, self.v = self.advance(self.q, self.v, dt)
        return self.q, self.v

    def settled(self, position_tolerance: float = 1e-3, velocity_tolerance: float = 1e-2) -> bool:
        return bool(
            np.all(np.abs(self.goal - self.q) < position_tolerance) and np.all(np.abs(self.v) < velocity_tolerance)
        )

    def advance(self, q: np.ndarray, v: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """One step from (q, v) towards the goal, as a pure function."""
        if dt <= 0.0:
            return q, v
        bounds = self.bounds
        a = bounds.acceleration
        distance = self.goal - q
        direction = np.sign(distance)
        desired = direction * np.minimum(self._stoppable(np.abs(distance), v * direction, a, dt), bounds.velocity)
        # Never head for a position bound faster than it can be stopped short of.
        desired = np.minimum(desired, self._stoppable(bounds.upper - q, v, a, dt))
        desired = np.maximum(desired, -self._stoppable(q - bounds.lower, -v, a, dt))
        new_v = v + np.clip(desired - v, -a * dt, a * dt)
        new_q = q + 0.5 * (v + new_v) * dt
        # An axis that would pass its goal while slow enough to stop within this step
        # stops: at rest where braking at a constant rate takes it, so that every step is
        # one of constant acceleration, which is what the joint controller's cubic
        # interpolation between the points sent reproduces (a step that stopped dead on
        # the goal instead, moving nowhere while its velocity fell, made that spline
        # overshoot and come back: up to 4x the acceleration limit;
        # test_motion.py::test_every_reference_step_is_one_of_constant_acceleration).
        passed = np.sign(self.goal - new_q) != direction
        arrived = passed & (np.abs(v) <= a * dt)
        new_q = np.where(arrived, q + 0.5 * v * dt, new_q)
        new_v = np.where(arrived, 0.0, new_v)
        return np.clip(new_q, bounds.lower, bounds.upper), np.clip(new_v, -bounds.velocity, bounds.velocity)

    @staticmethod
    def _stoppable(room: np.ndarray, speed_towards: np.ndarray, a: np.ndarray, dt: float) -> np.ndarray:
        """Largest next velocity towards an obstacle ``room`` away, given the velocity now,
        from which braking at ``a`` stops within the room (trapezoidal steps of ``dt``):
        v' <= sqrt(2 a room - a dt v + (a dt)^2) - a dt."""
        radicand = 2.0 * a * np.maximum(room, 0.0) - a * dt * speed_towards + (a * dt) ** 2
        return np.sqrt(np.maximum(radicand, 0.0)) - a * dt


def braking_path(q: np.ndarray, v: np.ndarray, limits: MotionLimits, times: np.ndarray) -> np.ndarray:
    """Where the joints are ``times`` (s, one row each) into braking from (q, v): every
    joint slows at its acceleration limit and rests where it stops."""
    speed = np.abs(v)
    stop = speed / limits.acceleration
    elapsed = np.minimum(np.asarray(times)[:, None], stop[None, :])
    travel = speed * elapsed - 0.5 * limits.acceleration * elapsed**2
    return np.clip(q + np.sign(v) * travel, limits.lower, limits.upper)


def braking_knots(q: np.ndarray, v: np.ndarray, limits: MotionLimits) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """How the reference (q, v) brakes to rest: every joint slows at its acceleration
    limit until it stops. Returned as knots (ns after (q, v), q, v), one at each joint's
    stopping time, so that between knots every joint either brakes at a constant rate or
    rests: cubic interpolation through them, which is what a joint trajectory controller
    does, is then the braking exactly. At most one knot per joint; none at rest.

    Joint-wise braking is what ``ArmMotion`` keeps viable at every step (it never plans a
    state from which it would leave the workspace box or the joint limits)."""
    speed = np.abs(v)
    moving = speed > 0.0
    if not np.any(moving):
        return []
    # Whole nanoseconds, rounded up (and at least a microsecond, so no segment is too short
    # to interpolate): each joint decelerates a hair under its limit.
    stop_ns = np.where(moving, np.maximum(np.ceil(speed / limits.acceleration * 1e9), 1000.0), 0.0)
    deceleration = np.where(moving, speed / np.maximum(stop_ns, 1.0) * 1e9, 0.0)
    direction = np.where(moving, np.sign(v), 0.0)
    # (Sorted and deduplicated by hand: np.unique imports numpy.ma on its first call,
    # 24 ms that once made an agent's first command arrive after its own planned points.)
    times_ns = np.sort(stop_ns[moving])
    times_ns = times_ns[np.concatenate(([True], np.diff(times_ns) > 0.0))]
    elapsed = np.minimum(times_ns[:, None], stop_ns[None, :]) * 1e-9  # each joint brakes until it stops
    still_braking = stop_ns[None, :] > times_ns[:, None]
    velocities = np.where(still_braking, direction * (speed - deceleration * elapsed), 0.0)
    positions = np.clip(q + direction * (speed * elapsed - 0.5 * deceleration * elapsed**2), limits.lower, limits.upper)
    return [(int(t_ns), positions[i], velocities[i]) for i, t_ns in enumerate(times_ns)]


def rest_to_rest_path(
    q: np.ndarray, goal: np.ndarray, limits: MotionLimits, samples: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the joints pass on a joint move from rest at ``q`` to rest at ``goal``, each
    joint on its own time-optimal profile within its limits, as ``ReferenceGenerator``
    moves them (so not along a straight joint-space line): times (s), configurations and
    velocities (one per row), ``samples`` evenly in time, then one where each joint arrives."""
    distance = np.abs(goal - q)
    a, top = limits.acceleration, limits.velocity
    peak = np.minimum(np.sqrt(distance * a), top)  # a joint too close to reach top speed
    ramp = peak / a
    arrival = np.where(peak > 0.0, distance / np.maximum(peak, 1e-12) + ramp, 0.0)
    t = np.concatenate((np.linspace(0.0, arrival.max(), samples), arrival))[:, None]
    braking = np.clip(t - (arrival - ramp), 0.0, ramp)
    covered = 0.5 * a * np.minimum(t, ramp) ** 2 + peak * np.clip(t - ramp, 0.0, arrival - 2 * ramp)
    covered += peak * braking - 0.5 * a * braking**2
    speed = np.clip(np.minimum(a * np.minimum(t, ramp), peak - a * braking), 0.0, None)
    direction = np.sign(goal - q)
    return t[:, 0], q + direction * np.minimum(covered, distance), direction * speed


def braking_tcps(kinematics: PandaKinematics, q: np.ndarray, v: np.ndarray, limits: MotionLimits) -> np.ndarray:
    """Where the TCP passes if the joints brake now from (q, v), as ``braking_knots``
    commands it (each joint at its own limit, stopping at its own time, so not along a
    straight line): now, where each joint stops, and at quarters of the longest stop (one
    row each; between them the path strays under 0.3 mm, where five points of the
    straight line missed it by up to 3.4 mm)."""
    speed = np.abs(v)
    if not np.any(speed):
        return kinematics.tcp(q)[None, :]
    stop = speed / limits.acceleration
    times = np.concatenate((stop[speed > 0.0], stop.max() * BRAKING_CHECKS))
    return np.array([kinematics.tcp(q), *(kinematics.tcp(p) for p in braking_path(q, v, limits, times))])


def joint_route_search(
    q: np.ndarray,
    goal: np.ndarray,
    limits: MotionLimits,
    box: WorkspaceBox,
    kinematics: PandaKinematics,
    samples: int = 40,
) -> Generator[None, None, list[np.ndarray] | None]:
    """Waypoints for a joint move from ``q`` (at rest) to ``goal`` along which the TCP
    stays in ``box`` (or, if an end is outside it, no further out): ``[goal]`` if the
    direct move does; otherwise, in turn, the most joints that can go to their goal while
    the others hold. A direct move between two postures can swing the hand far out (from
    an arm pushed into a corner, the guard held it at the floor 1.8 rad short of home).

    A search a step at a time: it yields after each check (a move's path, or braking from
    a few of its points: 0.2-0.3 ms; a search can take a few hundred), so a control loop
    can spread it over its ticks, and returns the route, or None if there is no such route."""

    def worst_excess(configurations: np.ndarray | list[np.ndarray]) -> float:
        return box.excess(np.array([kinematics.tcp(configuration) for configuration in configurations]))

    def move_fits(start: np.ndarray, end: np.ndarray) -> Generator[None, None, bool]:
        """The hand stays in along the move, and so it would if the joints braked at any
        point of it: the box guard's own test, so the guard never holds a route it was
        given (test_panda_core.py::test_a_reset_route_is_one_the_box_guard_lets_through).
        The path first, the cheaper test, which most rejected moves fail; braking from
        ``BRAKING_SAMPLES_PER_CHECK`` of its points at a time after it."""
        _, path, velocities = rest_to_rest_path(start, end, limits, samples)
        if worst_excess(path) > allowed:
            return False
        for first in range(0, len(path), BRAKING_SAMPLES_PER_CHECK):
            yield
            points = range(first, min(first + BRAKING_SAMPLES_PER_CHECK, len(path)))
            if any(box.excess(braking_tcps(kinematics, path[i], velocities[i], limits)) > allowed for i in points):
                return False
        return True

    allowed = worst_excess([q, goal]) + 1e-9
    route: list[np.ndarray] = []
    here = q.copy()
    remaining = [joint for joint in range(panda.DOF) if here[joint] != goal[joint]]
    while remaining:
        waypoint = None
        for size in range(len(remaining), 0, -1):
            for joints in itertools.combinations(remaining, size):
                candidate = here.copy()
                candidate[list(joints)] = goal[list(joints)]
                fits = yield from move_fits(here, candidate)
                yield
                if fits:
                    waypoint = candidate
                    break
            if waypoint is not None:
                break
        if waypoint is None:
            return None
        route.append(waypoint)
        here = waypoint
        remaining = [joint for joint in remaining if here[joint] != goal[joint]]
    return route or [goal.copy()]  # (already there: a move of nothing)


def _uniform_scale(limit: np.ndarray, vector: np.ndarray) -> float:
    """The largest factor <= 1 that brings every element of ``vector`` within ``limit``
    (elements that are zero constrain nothing)."""
    magnitude = np.abs(vector)
    moving = magnitude > 1e-12
    if not np.any(moving):
        return 1.0
    return min(1.0, float(np.min(limit[moving] / magnitude[moving])))


def solve_ik(
    kinematics: PandaKinematics,
    q_from: np.ndarray,
    target: np.ndarray,
    limits: MotionLimits,
    damping: float = 0.05,
    iterations: int = 1,
    posture: np.ndarray = panda.HOME,
    posture_gain: float = 0.05,
) -> np.ndarray:
    """Joints near ``q_from`` that move the TCP towards ``target``: damped least squares,
    with a null-space pull towards ``posture``, clipped to the joint limits."""
    q = q_from.copy()
    for _ in range(iterations):
        position, jacobian = kinematics.tcp_and_jacobian(q)
        jjt = jacobian @ jacobian.T + (damping**2) * np.eye(3)
        pseudo_inverse = jacobian.T @ np.linalg.inv(jjt)
        null_space = np.eye(panda.DOF) - pseudo_inverse @ jacobian
        q = q + pseudo_inverse @ (target - position) + posture_gain * null_space @ (posture - q)
        q = np.clip(q, limits.lower, limits.upper)
    return q


@dataclass
class MotionState:
    """Everything ``ArmMotion`` advances from: replaying one restores its plan exactly."""

    q: np.ndarray  # joint reference
    v: np.ndarray
    x: np.ndarray  # Cartesian reference of the TCP
    xv: np.ndarray
    ik: np.ndarray  # joints that put the TCP at x (the joint goal while Cartesian)
    risk: float  # _box_risk(q, v)


class Homing(enum.Enum):
    """Where ``ArmMotion.move_home`` is: a state machine whose transitions are HOMING_NEXT
    (test_panda_core.py::test_homing_goes_only_where_its_table_says walks it)."""

    IDLE = "idle"  # not homing
    STOP = "stop"  # braking to rest, then a route search
    SEARCH = "search"  # searching a route that keeps the hand in the box; the arm holds
    HAND = "hand"  # no route: the hand first, straight to where the goal puts it
    POSTURE = "posture"  # then the posture turns towards the goal through the IK's null space
    ROUTE = "route"  # the joints go the rest of the way, leg by leg; the last leg ends it


# What may follow each phase. Besides these, any phase may go to IDLE (an action, a reset,
# a stop, or the route's last leg ends homing) and to STOP (a new ``move_home``).
HOMING_NEXT: dict[Homing, frozenset[Homing]] = {
    Homing.IDLE: frozenset(),
    Homing.STOP: frozenset({Homing.SEARCH}),  # at rest
    Homing.SEARCH: frozenset({Homing.ROUTE, Homing.HAND}),  # a route, or none: the hand first, or straight
    Homing.HAND: frozenset({Homing.POSTURE}),  # the hand has arrived
    Homing.POSTURE: frozenset(),  # close enough, or stuck: STOP, then a search without the hand first
    Homing.ROUTE: frozenset(),  # leg after leg within the phase; the last one ends it (IDLE)
}


def homing_may_go(phase: Homing, to: Homing) -> bool:
    """Whether HOMING_NEXT (and the two ways out of any phase) lets ``phase`` go to ``to``."""
    return to in (Homing.IDLE, Homing.STOP) or to in HOMING_NEXT[phase]


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
        max_ee_step: float = 0.03,
        max_joint_step: float = 0.15,
        box_margin: float = 0.02,
        cartesian_speed: float = 0.3,
        cartesian_acceleration: float = 2.0,
        kinematics: PandaKinematics | None = None,
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
        self.kinematics = kinematics or PandaKinematics()
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
        return 3 if self.mode == "ee_delta" else panda.DOF

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
        test_panda_controller.py::test_a_replanned_hold_stays_where_the_arm_is)."""
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
        if not homing_may_go(self.homing, phase):
            raise RuntimeError(f"homing cannot go from {self.homing.name} to {phase.name} (HOMING_NEXT)")
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
