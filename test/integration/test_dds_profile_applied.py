"""The decoupler's DDS profile really applies, on every distribution: its processes run
on UDP alone, so none maps Fast DDS's shared-memory segments (dds_profile.py says why)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import start_node

from spin_decoupler_ros.dds_profile import PROFILE_VARIABLES
from spin_decoupler_ros.tools.processes import ProcessGroup

PLANT = "spin_decoupler_ros.examples.first_order_plant.agent"
# A participant with a publisher that prints how many Fast DDS shared-memory segments it
# has mapped; on the decoupler's profile when its argument is "profile".
PROBE = """
import sys, time
if sys.argv[1] == "profile":
    from spin_decoupler_ros.dds_profile import use_dds_profile
    use_dds_profile(localhost=True)
import rclpy
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node("probe")
node.create_publisher(String, "probe", 10)
time.sleep(0.5)
with open("/proc/self/maps") as maps:
    print(len({line.split()[-1] for line in maps if "/dev/shm/fast" in line}))
node.destroy_node()
rclpy.shutdown()
"""


def shared_memory_maps(pid: int | str) -> list[str]:
    """The Fast DDS shared-memory segments process ``pid`` has mapped (Fast DDS 3 names
    them fastdds_*, 2 fastrtps_*)."""
    with open(f"/proc/{pid}/maps") as maps:
        return sorted({line.split()[-1] for line in maps if "/dev/shm/fast" in line})


def probe_segments(with_profile: bool) -> int:
    """Shared-memory segments of a fresh participant in this test's domain, started from a
    shell without the decoupler's settings."""
    environ = {**os.environ}
    for variable in (*PROFILE_VARIABLES, "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOCALHOST_ONLY"):
        environ.pop(variable, None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "profile" if with_profile else "default"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(done.stdout.split()[-1])


def test_an_agent_and_the_rl_side_map_no_shared_memory(processes: ProcessGroup, tmp_path: Path) -> None:
    from spin_decoupler_ros.rl import RLClient

    agent = start_node(processes, PLANT, tmp_path)
    with RLClient(connect_timeout=20) as client:
        client.reset()
        assert shared_memory_maps(agent.pid) == []
        assert shared_memory_maps("self") == []
    # The probe tells the two apart: with Fast DDS's defaults, a participant maps them.
    assert probe_segments(with_profile=False) > 0
    assert probe_segments(with_profile=True) == 0
