"""A private ROS world for a test, or for anything that must not hear its neighbours: its
own ROS_DOMAIN_ID, discovery on this host only, and the decoupler's DDS profile, whatever
profile the shell has (dds_profile.py)."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from spin_decoupler_ros.dds_profile import PROFILE_VARIABLES, dds_environment

_used_domains: set[int] = set()

# The decoupler's DDS profile discovering this host only, whatever profile the shell has:
# every test runs on the settings the decoupler ships with.
LOCAL_DDS = dds_environment({**os.environ, **dict.fromkeys(PROFILE_VARIABLES, "")}, localhost=True)


def _free_domain() -> int:
    # Fast DDS supports domain ids up to 232; skip 0 (the default every other ROS user is on).
    rng = random.Random(os.getpid() ^ int.from_bytes(os.urandom(4), "little"))
    while True:
        domain = rng.randint(1, 232)
        if domain not in _used_domains:
            _used_domains.add(domain)
            return domain


def isolated_ros_environment(domain: int | None = None) -> dict[str, str]:
    """The environment variables of a private DDS domain (a free one unless given)."""
    env = {"ROS_DOMAIN_ID": str(domain if domain is not None else _free_domain())}
    if LOCAL_DDS:
        env.update(LOCAL_DDS)
    elif os.environ.get("ROS_DISTRO", "kilted") == "humble":  # another middleware: the ROS way
        env["ROS_LOCALHOST_ONLY"] = "1"
    else:
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return env


@contextmanager
def sb3_logs_in(folder: Path) -> Iterator[Path]:
    """SB3 makes a log folder for every learn() not given one: under ``folder`` meanwhile
    (the processes started meanwhile inherit it), not the system's temporary folder."""
    previous = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(folder)
    try:
        yield folder
    finally:
        if previous is None:
            os.environ.pop("SB3_LOGDIR", None)
        else:
            os.environ["SB3_LOGDIR"] = previous
