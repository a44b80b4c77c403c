"""What a Franka arm does after an error (core/franka_hardware.py): the three recovery
steps in order, and no other way back to following. No ROS."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from franka_agent.core.franka_hardware import (
    HARDWARE,
    HARDWARE_NEXT,
    ROBOT_MODE_IDLE,
    ROBOT_MODE_MOVE,
    ROBOT_MODE_REFLEX,
    FrankaHardware,
    Hardware,
)

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core


def test_the_hardware_goes_only_where_its_table_says() -> None:
    for a, b in itertools.product(Hardware, Hardware):
        assert HARDWARE.allows(a, b) == (b in HARDWARE_NEXT[a] or b is Hardware.REFLEX)
        if not HARDWARE.allows(a, b):
            with pytest.raises(RuntimeError, match=f"the Franka hardware cannot go from {a.name} to {b.name}"):
                HARDWARE.check(a, b)


def test_the_three_steps_in_order_bring_the_arm_back() -> None:
    arm = FrankaHardware()
    assert arm.following and arm.robot_mode == ROBOT_MODE_MOVE
    arm.reflex("joint_motion_generator_acceleration_discontinuity")
    assert not arm.following and arm.robot_mode == ROBOT_MODE_REFLEX
    assert arm.error_recovery().ok and arm.robot_mode == ROBOT_MODE_IDLE and not arm.following
    assert arm.activate_hardware().ok and not arm.following
    assert arm.activate_controllers().ok and arm.following and arm.robot_mode == ROBOT_MODE_MOVE


STEPS = ("error_recovery", "activate_hardware", "activate_controllers")


@given(st.lists(st.sampled_from(STEPS), max_size=8))
def test_no_other_order_of_steps_brings_it_back(calls: list[str]) -> None:
    """Any sequence of steps after a reflex: the arm follows again exactly when the three
    steps appear in it in order; a step out of order is refused while the error stands
    or the hardware is inactive."""
    arm = FrankaHardware()
    arm.reflex("joint_reflex")
    done = 0
    for call in calls:
        answer = getattr(arm, call)()
        expected_ok = STEPS.index(call) <= done
        if STEPS.index(call) == done:
            done = min(done + 1, 3)
        assert answer.ok == expected_ok, (call, answer)
    assert arm.following == (done == 3)
