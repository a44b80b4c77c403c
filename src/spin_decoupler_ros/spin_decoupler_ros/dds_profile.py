"""The DDS profile the decoupler's processes run with (Fast DDS, the ROS 2 default).

A reliable topic repairs a lost sample at the writer's next heartbeat: 3 s apart by
default in Fast DDS, far longer than an RL step may wait. ``fastdds_profile.xml`` makes
it 50 ms. It is applied where a process starts its ROS 2 context (``run_node`` for the
nodes, ``init_private_context`` for the RL side), before the process's first DDS
participant reads its profiles; a profile the user chose is left alone.
(test_decoupler.py::test_after_a_stall_between_two_steps_the_next_step_is_served)
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

PROFILE = Path(__file__).with_name("fastdds_profile.xml")
# Fast DDS 3 (Jazzy and later) reads the first; Fast DDS 2 (Humble) the second.
PROFILE_VARIABLES = ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE")


def use_dds_profile(environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """Point Fast DDS at the decoupler's profile, unless another middleware is chosen or
    the user has a profile of their own; the profile applied, or None."""
    rmw = environ.get("RMW_IMPLEMENTATION", "") or "rmw_fastrtps_cpp"
    if not rmw.startswith("rmw_fastrtps"):
        return None
    if any(environ.get(name) for name in PROFILE_VARIABLES):
        return None
    for name in PROFILE_VARIABLES:
        environ[name] = str(PROFILE)
    return PROFILE
