"""rephase_timer: a real rclpy timer re-phased so that its next tick runs one period on."""

from __future__ import annotations

import time

import pytest
from rclpy.clock import Clock
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.timer import Timer

from spin_decoupler_ros.agent.control_loop import rephase_timer
from spin_decoupler_ros.rl.client import init_private_context

PERIOD_NS = 10_000_000


def due_window(clock: Clock, timer: Timer) -> tuple[int, int]:
    """When the timer's next call is due, as an exact window: rcl computes the time until
    it from a clock reading taken between these two, so the due time lies in between,
    however long the process was preempted (no tolerance to guess)."""
    before = clock.now().nanoseconds
    until_next = timer.time_until_next_call()
    after = clock.now().nanoseconds
    assert until_next is not None
    return before + until_next, after + until_next


def overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


@pytest.mark.parametrize("lead_ns", [0, 600_000])
def test_a_rephased_timer_is_due_a_period_less_the_lead_and_then_keeps_its_period(
    ros_domain: dict[str, str], lead_ns: int
) -> None:
    context = init_private_context([])
    try:
        node = Node("rephase_timer_test", context=context, start_parameter_services=False)
        clock = node.get_clock()
        dues: list[tuple[int, int]] = []  # the next due time, as seen from each tick

        def on_tick() -> None:
            dues.append(due_window(clock, timer))

        timer = node.create_timer(PERIOD_NS / 1e9, on_tick)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        time.sleep(0.0037)  # off the timer's first phase

        before = clock.now().nanoseconds
        rephase_timer(timer, PERIOD_NS, lead_ns)
        after = clock.now().nanoseconds
        first_due = due_window(clock, timer)
        # rcl's reset counted from a reading between `before` and `after`.
        assert overlap(first_due, (before + PERIOD_NS - lead_ns, after + PERIOD_NS - lead_ns)), (first_due, before)
        assert timer.timer_period_ns == PERIOD_NS

        deadline = time.monotonic() + 10.0
        while len(dues) < 3 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert len(dues) == 3, "the timer did not tick three times in 10 s"
        # After the first tick, the timer is back to whole periods from that due time (rcl
        # skips a whole period when a tick runs more than one late, as on a loaded host).
        for k, due in enumerate(dues):
            periods = round((due[0] - first_due[0]) / PERIOD_NS)
            expected = (first_due[0] + periods * PERIOD_NS, first_due[1] + periods * PERIOD_NS)
            assert periods >= k + 1 and overlap(due, expected), (k, due, expected)
        executor.shutdown()
        node.destroy_node()
    finally:
        context.try_shutdown()
