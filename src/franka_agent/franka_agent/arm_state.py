"""ArmState: the arm's joint state as the Panda agent's control tick reads it.

High-rate state (1 kHz on the robot), best effort, is never spun: the newest of the
arm's messages is taken and decoded when a tick needs it (a callback per message cost
the loop more than its ticks did); a few are kept, should other joints share the topic.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState

from spin_decoupler_ros.agent import LatestMessage, sensor_qos
from spin_decoupler_ros.conversions import time_to_ns
from spin_decoupler_ros.core.timing import ns_to_seconds

if TYPE_CHECKING:
    from spin_decoupler_ros.agent import AgentNode

STATE_QOS = sensor_qos(depth=8)  # a few kept, should other joints share the topic
# Where the world waits for the agent: how long a tick waits for the joint state stamped
# at its time (published before the /clock that made the tick, on another topic).
STATE_AT_TICK_WAIT_S = 0.5

ArmReading = tuple[int, np.ndarray, np.ndarray]  # (stamp ns, positions, velocities)


class ArmState:
    """The newest joint state of the arm's joints on ``topic``, and how old it is."""

    def __init__(self, node: AgentNode, joint_names: Sequence[str], topic: str, state_timeout: float) -> None:
        self._node = node
        self.joint_names = tuple(joint_names)
        self.topic = topic
        self.state_timeout = state_timeout
        self.q: np.ndarray | None = None  # None until the first state
        self.dq = np.zeros(len(self.joint_names))
        self.stamp_ns = 0  # the time the latest joint state refers to (its stamp)
        self._taken_ns = 0  # the node's clock when it was taken in
        self.taken_wall: float | None = None  # monotonic time the newest state was taken in
        self._order: list[int] = []  # where the arm's joints are in messages named like
        self._order_names: list[str] | None = None  # this (the arm's last message)
        # Where the world waits for the agent: arm states stamped after the tick that took
        # them (for later ticks), and the step between the topic's stamps (see decode).
        self._ahead: list[ArmReading] = []
        self._grid_ns = 0
        self._reader = LatestMessage(node, JointState, topic, STATE_QOS)

    def decode(self, wait: bool = True) -> None:
        """Take in the newest of the arm's joint states that came since the last look.

        Where the world waits for the agent (``waits_on_clock``), the state a tick reads is
        the one stamped at the tick's time, so that a seeded run repeats: the newest
        stamped at or before now (later ones are kept for later ticks), and, where the
        topic has a state at this time (its stamps' grid), the tick waits for it should the
        /clock that made the tick have overtaken it (up to STATE_AT_TICK_WAIT_S, wall; a
        wait on the subscription, woken by each arrival: the world waits for this tick's
        command meanwhile)
        (test_panda.py::test_on_a_waiting_clock_a_tick_reads_the_state_stamped_at_its_time).
        """
        if not self._node.waits_on_clock:
            for raw in reversed(self._reader.take_all_serialized()):
                state = self._reading(deserialize_message(raw, JointState))
                if state is not None:
                    self.keep(*state)
                    return
            return
        now_ns = self._node.now_ns()
        self._take_until(now_ns)
        if not wait or self.stamp_ns >= now_ns or not self._due(now_ns):
            return
        deadline = time.monotonic() + STATE_AT_TICK_WAIT_S
        while self._reader.wait(deadline - time.monotonic()):  # (woken by each arrival)
            self._take_until(now_ns)
            if self.stamp_ns >= now_ns:
                return
        self._grid_ns = 0  # learnt again from the next states
        self._node.get_logger().warning(
            f"no joint state stamped at the tick's time ({now_ns / 1e9:.3f} s) within {STATE_AT_TICK_WAIT_S:g} s: "
            "the tick reads an older one (this run may not repeat exactly)",
            throttle_duration_sec=5.0,
        )

    def measured(self) -> tuple[np.ndarray, np.ndarray]:
        """The newest (q, dq); RuntimeError if there is none or it is older than
        ``state_timeout``."""
        self.decode()
        if self.q is None:
            raise RuntimeError(f"no joint state received on {self.topic} yet")
        # (A state heard before a simulated clock started, at time 0, is as fresh as the clock.)
        age = ns_to_seconds(self._node.now_ns() - self._taken_ns) if self._taken_ns else 0.0
        if age > self.state_timeout:
            raise RuntimeError(f"joint state on {self.topic} is {age:.3f} s old (state_timeout {self.state_timeout} s)")
        return self.q, self.dq

    def keep(self, stamp_ns: int, q: np.ndarray, dq: np.ndarray) -> None:
        """Make ``q``, ``dq`` (stamped ``stamp_ns``) the arm's state the loop reads."""
        if self.q is None:
            self._node.get_logger().info(f"joint states arrive on {self.topic}: commanding the arm")
        self.stamp_ns = stamp_ns
        self.q, self.dq = q, dq
        self._taken_ns = self._node.now_ns()  # within a tick of its arrival
        self.taken_wall = time.monotonic()

    def _take_until(self, now_ns: int) -> None:
        """Take in the newest arm state stamped at or before ``now_ns``; keep later ones."""
        taken = self._reader.take_all_serialized()
        newer: list[ArmReading] = []
        candidates = [*self._ahead, *(self._reading(deserialize_message(raw, JointState)) for raw in taken)]
        chosen = None
        for state in reversed(candidates):
            if state is None:
                continue
            if state[0] > now_ns:
                newer.append(state)
                continue
            chosen = state
            break
        self._ahead = newer[::-1]
        if chosen is not None and chosen[0] > self.stamp_ns:
            if self.stamp_ns:
                step = chosen[0] - self.stamp_ns
                self._grid_ns = step if not self._grid_ns else min(self._grid_ns, step)
            self.keep(*chosen)

    def _due(self, now_ns: int) -> bool:
        """Whether the state topic has a state stamped ``now_ns``: its stamps so far lie on
        a grid (the smallest step between the states taken in) that ``now_ns`` is on."""
        grid = self._grid_ns
        return grid > 0 and self.stamp_ns > 0 and (now_ns - self.stamp_ns) % grid == 0

    def _reading(self, msg: JointState) -> ArmReading | None:
        """The arm's (stamp, positions, velocities) in ``msg``, or None if it does not hold them."""
        if msg.name != self._order_names:
            try:
                order = [msg.name.index(name) for name in self.joint_names]
            except ValueError:
                return None  # the gripper's, or another robot's, on a shared topic
            self._order, self._order_names = order, list(msg.name)
        position = np.asarray(msg.position)
        if position.size < len(msg.name):
            return None
        velocity = np.asarray(msg.velocity)
        dq = velocity[self._order] if velocity.size >= len(msg.name) else np.zeros(len(self.joint_names))
        return time_to_ns(msg.header.stamp), position[self._order], dq
