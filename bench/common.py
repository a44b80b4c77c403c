"""Shared helpers of the benchmarks: isolation, percentiles, writing results."""

from __future__ import annotations

import json
import os
import platform
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from spin_decoupler_ros.dds_profile import use_dds_profile
from spin_decoupler_ros.tools.distribution import ros_distribution

RESULTS = Path(__file__).resolve().parent / "results"
# SB3 makes a log folder for every learn() not given one, in the system's temporary folder
# unless SB3_LOGDIR names another: the benchmarks' (and their nodes') all go to log/bench/sb3.
os.environ.setdefault("SB3_LOGDIR", str(RESULTS.parents[1] / "log" / "bench" / "sb3"))


def isolate_dds() -> None:
    """A private DDS domain with localhost discovery, for this process and its children."""
    os.environ["ROS_DOMAIN_ID"] = str(random.Random(os.getpid()).randint(150, 232))
    if use_dds_profile(localhost=True) is not None:  # the decoupler's profile, this host only
        return
    if os.environ.get("ROS_DISTRO", "kilted") == "humble":
        os.environ["ROS_LOCALHOST_ONLY"] = "1"
    else:
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"


def reach_env(namespace: str, task: dict[str, Any]) -> Any:
    """The Panda reach task's env on the agent in ``namespace`` ("": the root), with the
    trainer's settings (``task``: its parameters in config/panda_reach.yaml)."""
    from franka_agent.reach_task import ReachEnv

    return ReachEnv(
        namespace,
        target_low=task["target_low"],
        target_high=task["target_high"],
        success_distance=task["success_distance"],
        max_episode_steps=task["episode_steps"],
        client_options={"connect_timeout": 60},
    )


def summary_ms(seconds: np.ndarray | list[float]) -> dict[str, float]:
    values = np.asarray(seconds, dtype=np.float64) * 1e3
    return {
        "median": round(float(np.median(values)), 4),
        "p90": round(float(np.percentile(values, 90)), 4),
        "p99": round(float(np.percentile(values, 99)), 4),
        "max": round(float(values.max()), 4),
        "samples": int(values.size),
    }


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "ros_distro": ros_distribution() + ("" if os.environ.get("ROS_DISTRO") else " (PyPI wheels)"),
        "date": time.strftime("%Y-%m-%d"),
    }


def write_result(name: str, result: dict[str, Any], quiet: bool = False) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    result = {**result, "machine": machine()}
    path.write_text(json.dumps(result, indent=2) + "\n")
    if not quiet:
        print(f"wrote {path}")
    return path
