"""Between ROS messages and the integer nanoseconds and numpy arrays the core works in."""

from __future__ import annotations

import array
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Duration, Time

from spin_decoupler_ros.core.timing import NS_PER_S


def duration_to_ns(msg: Duration) -> int:
    return int(msg.sec) * NS_PER_S + int(msg.nanosec)


def ns_to_duration(ns: int) -> Duration:
    sec, nanosec = divmod(int(ns), NS_PER_S)  # floor division keeps nanosec in [0, 1e9)
    return Duration(sec=sec, nanosec=nanosec)


def time_to_ns(msg: Time) -> int:
    return int(msg.sec) * NS_PER_S + int(msg.nanosec)


def ns_to_time(ns: int) -> Time:
    sec, nanosec = divmod(int(ns), NS_PER_S)
    return Time(sec=sec, nanosec=nanosec)


def set_stamp(msg: Duration | Time, ns: int) -> None:
    """Write ``ns`` into an existing Duration or Time in place (no allocation on hot paths)."""
    msg.sec, msg.nanosec = divmod(int(ns), NS_PER_S)


def float64_field(values: np.ndarray | Sequence[float]) -> array.array:
    """A float64[] message field from a vector, without the per-element checks of the setter."""
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


def vector_from_field(values: Sequence[float]) -> np.ndarray:
    """A fresh float64 numpy vector from a float64[] message field."""
    if isinstance(values, array.array) and values.typecode == "d":
        return np.frombuffer(values, dtype=np.float64).copy()
    return np.asarray(values, dtype=np.float64).reshape(-1).copy()
