"""The DDS profile the decoupler's processes run with (Fast DDS, the ROS 2 default).

Three settings, in ``fastdds_profile.xml`` (``fastrtps_profile.xml`` for Fast DDS 2)
(docs/timing.md, "Lost samples"):
- UDP only: Fast DDS's shared-memory transport loses samples to and from a process that
  was stopped (SIGSTOP, a debugger, a paused VM) once it runs again, and a reliable
  topic holds every later sample until the lost one is repaired;
- reliable writers send a heartbeat every 50 ms (Fast DDS: 3 s), so that a lost sample
  is repaired within about that.
- each participant announces itself every 0.5 s (Fast DDS: 3 s), so that a process
  missed at its first announcements (a restarted agent, beside its killed predecessor's
  participant) is discovered within about that.
(test_decoupler.py::test_after_a_stall_between_two_steps_the_next_step_is_served,
test_panda.py::test_an_agent_frozen_mid_motion_leaves_the_arm_braked_and_resumes_within_the_limits)

``use_dds_profile`` applies it where a process starts its ROS 2 context (``run_node``
for the nodes, ``init_private_context`` for the RL side), before the process's first
DDS participant reads its profiles. A profile the user chose is left alone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path

PROFILE = Path(__file__).with_name("fastdds_profile.xml")
# The same, with discovery kept to this host: ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
# would make rmw_fastrtps choose the transports itself, shared memory among them.
LOCALHOST_PROFILE = Path(__file__).with_name("fastdds_localhost.xml")
# Both again in Fast DDS 2's element names (heartbeatPeriod for 3's heartbeat_period):
# each release refuses a file in the other's (test_dds_profile.py holds them equal).
FAST_DDS_2_PROFILES = {
    PROFILE: PROFILE.with_name("fastrtps_profile.xml"),
    LOCALHOST_PROFILE: LOCALHOST_PROFILE.with_name("fastrtps_localhost.xml"),
}
# Fast DDS 3 (Kilted and later) reads the first; Fast DDS 2 (Humble 2.6, Jazzy 2.14) only
# the second. Only one is set: where both are, Fast DDS 3 loads the file twice, and says
# so with an error. (test_dds_profile_applied.py: no shared memory on the profile.)
PROFILE_VARIABLES = ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE")
FAST_DDS_2_DISTROS = ("humble", "iron", "jazzy")
# Before Iron, discovery is kept to the host by ROS_LOCALHOST_ONLY; since, by
# ROS_AUTOMATIC_DISCOVERY_RANGE.
LOCALHOST_ONLY_DISTROS = ("humble",)


def fast_dds_2(environ: Mapping[str, str]) -> bool:
    """Whether the Fast DDS that processes started with ``environ`` load is a 2.x: by
    ROS_DISTRO, or where it is unset (ROS 2 from PyPI wheels) by the library installed
    under the environment's prefixes (Fast DDS 2 is libfastrtps, 3 is libfastdds)."""
    distro = environ.get("ROS_DISTRO", "")
    if distro:
        return distro in FAST_DDS_2_DISTROS
    prefixes = [prefix for prefix in environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if prefix]
    for prefix in prefixes or [sys.prefix]:
        library = Path(prefix) / "lib"
        if any(library.glob("libfastrtps.so.2*")):
            return True
        if any(library.glob("libfastdds.so.3*")):
            return False
    return False


def dds_environment(environ: Mapping[str, str], *, localhost: bool = False) -> dict[str, str]:
    """The environment variables that put a process started with ``environ`` on the
    decoupler's profile (``localhost``: discovering only this host's processes); none
    for another middleware, or where the user has a profile of their own."""
    rmw = environ.get("RMW_IMPLEMENTATION", "") or "rmw_fastrtps_cpp"
    if not rmw.startswith("rmw_fastrtps") or any(environ.get(name) for name in PROFILE_VARIABLES):
        return {}
    profile = LOCALHOST_PROFILE if localhost else PROFILE
    if fast_dds_2(environ):
        variables = {PROFILE_VARIABLES[1]: str(FAST_DDS_2_PROFILES[profile])}
    else:
        variables = {PROFILE_VARIABLES[0]: str(profile)}
    if localhost:
        # Discovery as the profile says (rmw_fastrtps otherwise sets its own up).
        if environ.get("ROS_DISTRO", "") in LOCALHOST_ONLY_DISTROS:
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
