"""The decoupler's names cannot collide with other software's: one Panda's agent lives
in /panda (its robot keeps franka_ros2's names), the examples' in /plant and /lander, and
generic names at the root (/status, /step_command, /episode) are left to others."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from helpers import panda_config, start_node
from rclpy.node import Node
from std_msgs.msg import String

from franka_agent.robots import start_mock_robots
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.rl.client import init_private_context
from spin_decoupler_ros.tools.processes import ProcessGroup

DECOUPLER_NAMES = ("status", "description", "step_command", "step_timing")


def topic_names(node: Node) -> set[str]:
    return {name for name, _ in node.get_topic_names_and_types()}


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Whether ``condition`` holds within ``timeout`` s (the graph caches fill from DDS
    discovery's own threads: no spinning needed)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_two_pipelines_and_a_foreign_status_topic_do_not_talk_to_each_other(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    # Other software on the same graph, using the generic names at the root.
    context = init_private_context()
    foreign = Node("foreign_software", context=context)
    foreign_status = foreign.create_publisher(String, "/status", 10)
    foreign_commands = foreign.create_publisher(String, "/step_command", 10)
    try:
        (panda,) = start_mock_robots(processes, panda_config(), 1, sim_speed=4.0, log_dir=tmp_path)
        start_node(processes, "spin_decoupler_ros.examples.first_order_plant.agent", tmp_path, namespace="/plant")
        assert panda == "/panda"
        for _ in range(5):
            foreign_status.publish(String(data="other software's status"))
            foreign_commands.publish(String(data="other software's command"))
        with RLClient("/panda", connect_timeout=30) as arm, RLClient("/plant", connect_timeout=30) as plant:
            assert arm.reset(seed=1).observation.shape == (17,)
            assert plant.reset(seed=1).observation.shape == (2,)
            for _ in range(3):
                assert arm.step(np.zeros(3)).observation.shape == (17,)
                assert plant.step(np.array([0.5])).observation.shape == (2,)
            # Each participant learns the graph by discovery, in its own time: each view is
            # read once it holds what the check is about.
            wanted = {f"{namespace}/{name}" for namespace in ("/panda", "/plant") for name in DECOUPLER_NAMES}
            wanted |= {"/status", "/step_command"}
            assert wait_until(lambda: wanted <= topic_names(arm.node)), f"missing: {wanted - topic_names(arm.node)}"
            topics = dict(arm.node.get_topic_names_and_types())
            # The foreign node sees the clients' status subscriptions, so it would see any on
            # its own /status.
            assert wait_until(lambda: all(foreign.count_subscribers(f"{ns}/status") for ns in ("/panda", "/plant")))
            assert foreign.count_subscribers("/status") == 0  # no agent or client listens to it
        # Each pipeline's names under its own namespace; the root's generic names are the
        # foreign software's alone, with its own type.
        assert topics["/status"] == ["std_msgs/msg/String"]
        assert topics["/step_command"] == ["std_msgs/msg/String"]
        assert not [name for name in topics if name.startswith("/episode/")]
    finally:
        foreign.destroy_node()
        context.try_shutdown()
