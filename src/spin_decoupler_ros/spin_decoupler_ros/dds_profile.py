"""The DDS profile the decoupler's processes run with (Fast DDS, the ROS 2 default).

Two settings, in ``fastdds_profile.xml`` (docs/timing.md, "Lost samples"):
- UDP only: Fast DDS's shared-memory transport loses samples to and from a process that
  was stopped (SIGSTOP, a debugger, a paused VM) once it runs again, and a reliable
  topic holds every later sample until the lost one is repaired;
- reliable writers send a heartbeat every 50 ms (Fast DDS: 3 s), so that a lost sample
  is repaired within about that.
(test_decoupler.py::test_after_a_stall_between_two_steps_the_next_step_is_served,
test_panda.py::test_an_agent_frozen_mid_motion_leaves_the_arm_braked_and_resumes_within_the_limits)

``use_dds_profile`` applies it where a process starts its ROS 2 context (``run_node``
for the nodes, ``init_private_context`` for the RL side), before the process's first
DDS participant reads its profiles. A profile the user chose is left alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

PROFILE = Path(__file__).with_name("fastdds_profile.xml")
# The same, with discovery kept to this host: ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
# would make rmw_fastrtps choose the transports itself, shared memory among them.
LOCALHOST_PROFILE = Path(__file__).with_name("fastdds_localhost.xml")
# Fast DDS 3 (Jazzy and later) reads the first; Fast DDS 2 (Humble) the second. Only one
# is set: where both are, rmw_fastrtps loads the file twice, and says so with an error.
PROFILE_VARIABLES = ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE")
FAST_DDS_2_DISTROS = ("humble",)


def dds_environment(environ: Mapping[str, str], *, localhost: bool = False) -> dict[str, str]:
    """The environment variables that put a process started with ``environ`` on the
    decoupler's profile (``localhost``: discovering only this host's processes); none
    for another middleware, or where the user has a profile of their own."""
    rmw = environ.get("RMW_IMPLEMENTATION", "") or "rmw_fastrtps_cpp"
    if not rmw.startswith("rmw_fastrtps") or any(environ.get(name) for name in PROFILE_VARIABLES):
        return {}
    fast_dds_2 = environ.get("ROS_DISTRO", "") in FAST_DDS_2_DISTROS
    variable = PROFILE_VARIABLES[1] if fast_dds_2 else PROFILE_VARIABLES[0]
    variables = {variable: str(LOCALHOST_PROFILE if localhost else PROFILE)}
    if localhost:
        # Discovery as the profile says (rmw_fastrtps otherwise sets its own up).
        if fast_dds_2:
            variables["ROS_LOCALHOST_ONLY"] = "0"
        else:
            variables["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "SYSTEM_DEFAULT"
    return variables


def use_dds_profile(environ: MutableMapping[str, str] = os.environ, *, localhost: bool = False) -> Path | None:
    """Put this process (and the processes it starts) on the decoupler's profile, unless
    another middleware is chosen or the user has a profile; the profile applied, or None."""
    variables = dds_environment(environ, localhost=localhost)
    environ.update(variables)
    return Path(next(iter(variables.values()))) if variables else None
