"""rephase_timer: a real rclpy timer re-phased so that its next tick runs one period on."""

from __future__ import annotations

import time

import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from spin_decoupler_ros.agent.agent_node import rephase_timer
from spin_decoupler_ros.rl.client import init_private_context

PERIOD_NS = 10_000_000
CLOCK_READS_NS = 200_000  # between two reads of the clock in this test (a loaded machine)


@pytest.mark.parametrize("lead_ns", [0, 600_000])
def test_a_rephased_timer_is_due_a_period_less_the_lead_and_then_keeps_its_period(
    ros_domain: dict[str, str], lead_ns: int
) -> None:
    context = init_private_context([])
    try:
        node = Node("rephase_timer_test", context=context, start_parameter_services=False)
        clock = node.get_clock()
        dues: list[int] = []  # the next due time, as seen from each tick

        def on_tick() -> None:
            until_next = timer.time_until_next_call()
            assert until_next is not None
            dues.append(clock.now().nanoseconds + until_next)

        timer = node.create_timer(PERIOD_NS / 1e9, on_tick)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        time.sleep(0.0037)  # off the timer's first phase

        rephased_at = clock.now().nanoseconds
        rephase_timer(timer, PERIOD_NS, lead_ns)
        until_next = timer.time_until_next_call()
        assert until_next is not None
        first_due = clock.now().nanoseconds + until_next
        assert 0 <= first_due - (rephased_at + PERIOD_NS - lead_ns) <= CLOCK_READS_NS
        assert timer.timer_period_ns == PERIOD_NS

        while len(dues) < 3:
            executor.spin_once(timeout_sec=0.1)
        # After the first tick, the timer is back to whole periods from that due time.
        assert dues[0] - first_due == pytest.approx(PERIOD_NS, abs=CLOCK_READS_NS)
        assert dues[2] - dues[1] == pytest.approx(PERIOD_NS, abs=CLOCK_READS_NS)
        executor.shutdown()
        node.destroy_node()
    finally:
        context.try_shutdown()
