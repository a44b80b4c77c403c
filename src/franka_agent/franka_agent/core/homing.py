"""How a reset brings the arm home: the phases of ``ArmMotion.move_home`` as an enum and a
transition table, and the search for a joint route along which the hand stays in the box.

Pure numpy, no ROS.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Generator

import numpy as np

from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.limits import MotionLimits, WorkspaceBox
from franka_agent.core.reference import braking_tcps, rest_to_rest_path
from spin_decoupler_ros.core.transitions import TransitionTable

BRAKING_SAMPLES_PER_CHECK = 8  # points of a move whose braking one such check tests


class Homing(enum.Enum):
    """Where ``ArmMotion.move_home`` is: a state machine whose transitions are HOMING_NEXT
    (test_homing.py::test_homing_goes_only_where_its_table_says walks it)."""

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


HOMING = TransitionTable("HOMING_NEXT", "homing", HOMING_NEXT, frozenset({Homing.IDLE, Homing.STOP}))


def homing_may_go(phase: Homing, to: Homing) -> bool:
    """Whether HOMING_NEXT (and the two ways out of any phase) lets ``phase`` go to ``to``."""
    return HOMING.allows(phase, to)


def joint_route_search(
    q: np.ndarray,
    goal: np.ndarray,
    limits: MotionLimits,
    box: WorkspaceBox,
    kinematics: ArmKinematics,
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
        given (test_homing.py::test_a_reset_route_is_one_the_box_guard_lets_through).
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
    remaining = [joint for joint in range(limits.dof) if here[joint] != goal[joint]]
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
