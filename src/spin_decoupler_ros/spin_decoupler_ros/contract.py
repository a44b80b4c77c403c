"""What the agent and the RL side agree on beyond the message types: each topic's QoS,
how long an agent may be silent on the DDS level before it counts as gone, and the
names of the Episode outcomes. Both sides import it; neither imports the other.
"""

from __future__ import annotations

from rclpy.duration import Duration
from rclpy.qos import DurabilityPolicy, HistoryPolicy, LivelinessPolicy, QoSProfile, ReliabilityPolicy

from spin_decoupler_msgs.action import Episode

# Commands must not be lost: reliable, a few deep (the RL side sends one at a time).
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
# The description is state, not events: latched for late joiners.
LATCHED_QOS = QoSProfile(
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
    history=HistoryPolicy.KEEP_LAST,
)
# The agent asserts its status writer's liveliness every AGENT_ALIVE_EVERY_S of wall time
# (a steady timer: on a simulator's clock too, while the world waits); a writer silent
# for AGENT_LIVELINESS_S is dead, or frozen longer than any stall an agent must ride out
# (the stress tests stall one up to 1.5 s). A crashed agent's entities stay in the ROS
# graph until its participant's DDS lease ends (20 s with Fast DDS's defaults); its
# liveliness lapses within AGENT_LIVELINESS_S, which is how the RL side tells a restarted
# agent from the one that died, and gives up waiting on a dead one (test_faults.py::
# test_an_agent_restarted_after_a_kill_is_taken_as_soon_as_it_is_ready).
AGENT_LIVELINESS_S = 2.5
AGENT_ALIVE_EVERY_S = 0.1
# The status: latched state, whose writer's liveliness is the agent's (the subscriber asks
# for the same lease, so that it is told when the writer's lapses).
STATUS_QOS = QoSProfile(
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
    history=HistoryPolicy.KEEP_LAST,
    liveliness=LivelinessPolicy.MANUAL_BY_TOPIC,
    liveliness_lease_duration=Duration(seconds=AGENT_LIVELINESS_S),
)
# Timing records are for logs; a slow logger must not stall the agent.
TIMING_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)

_OUTCOME_NAMES = {
    Episode.Result.ENDED: "ENDED",
    Episode.Result.FINISHED: "FINISHED",
    Episode.Result.ABORTED: "ABORTED",
    Episode.Result.WATCHDOG: "WATCHDOG",
    Episode.Result.CANCELED: "CANCELED",
    Episode.Result.DEACTIVATED: "DEACTIVATED",
    Episode.Result.ROBOT_STOPPED: "ROBOT_STOPPED",
}


def outcome_name(outcome: int) -> str:
    """An Episode result's outcome, by name."""
    return _OUTCOME_NAMES.get(outcome, f"outcome {outcome}")
