"""ViolationLog: the mock's record, one JSON line each, of every limit violation and
refused trajectory, with the command it happened on: its stamp and its arrival on both
clocks, and where its lateness came from. On close, how late the stamped commands
arrived. Off (a no-op) without a path.
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from typing import Any

import numpy as np


class ViolationLog:
    """Appends to ``path`` (None: records nothing)."""

    def __init__(self, path: str | None) -> None:
        self._file = open(path, "a", buffering=1) if path else None  # noqa: SIM115 - closed in close()
        self.active: dict[str, object] = {}  # the trajectory being followed, for violation records
        self.last_clock_ns = 0  # the last /clock published (sim ns since the epoch)
        # When each recent /clock went out (sim ns, system ns).
        self._clock_history: deque[tuple[int, int]] = deque(maxlen=1000)
        self._lateness_ns: list[int] = []  # each stamped command's arrival less its stamp (sim ns)
        self._delays: list[tuple[float, float, float]] = []  # see delay_parts
        self._stamps: list[int] = []

    @property
    def on(self) -> bool:
        return self._file is not None

    def clock_published(self, sim_ns: int) -> None:
        """A /clock at ``sim_ns`` went out now."""
        self.last_clock_ns = sim_ns
        if self._file is not None:
            self._clock_history.append((sim_ns, time.time_ns()))

    def stamp_published(self, start_ns: int) -> int | None:
        """When (system ns) the /clock at ``start_ns`` went out, if it is still known."""
        published = [wall for sim_ns, wall in self._clock_history if sim_ns == start_ns]
        return published[-1] if published else None

    def followed(self, arrival: dict[str, Any], start_ns: int | None, late_ns: int | None) -> None:
        """The controller now follows the trajectory that ``arrival`` describes."""
        self.active = arrival
        if self._file is not None and start_ns is not None and late_ns is not None:
            self._lateness_ns.append(late_ns)
            self._delays.append(self.delay_parts(arrival))
            self._stamps.append(start_ns)

    def record(self, sim_ns: int, entry: dict[str, object]) -> None:
        if self._file is not None:
            self._file.write(json.dumps({"sim_ns": sim_ns, **entry}) + "\n")

    @staticmethod
    def delay_parts(arrival: dict[str, Any]) -> tuple[float, float, float]:
        """Where a command's lateness came from, in wall ms: from the /clock it was stamped
        with going out to the agent sending the command, then to DDS here receiving it,
        then to this node taking it (NaN where the message info is not there)."""
        published, sent = arrival.get("stamp_published_wall_ns"), arrival.get("sent_wall_ns")
        received = arrival.get("received_wall_ns")
        taken = arrival["arrival_wall"] * 1e3

        def ms(later: float | None, earlier: float | None) -> float:
            return math.nan if later is None or earlier is None else (later - earlier) / 1e6

        return ms(sent, published), ms(received, sent), taken - (received / 1e6 if received else math.nan)

    def close(self, sim_ns: int) -> None:
        """Record how late the stamped commands arrived (their simulated arrival less their
        stamp), for the log's reader, and close it."""
        if self._file is None:
            return
        if self._lateness_ns:
            late = np.array(self._lateness_ns) / 1e6
            summary: dict[str, object] = {
                "kind": "lateness_ms",
                "commands": int(late.size),
                "median": float(np.median(late)),
                "p99": float(np.percentile(late, 99)),
                "p999": float(np.percentile(late, 99.9)),
                "max": float(late.max()),
            }
            parts = np.array(self._delays)
            for column, name in enumerate(("agent", "delivery", "mock")):
                values = parts[:, column][np.isfinite(parts[:, column])]
                if values.size:
                    summary[f"{name}_ms"] = {
                        "median": float(np.median(values)),
                        "p99": float(np.percentile(values, 99)),
                        "max": float(values.max()),
                    }
            worst = int(np.argmax(self._lateness_ns))
            summary["worst_parts_ms"] = list(self._delays[worst])
            delivered = zip(self._stamps, self._delays, strict=True)
            summary["slow_deliveries"] = [[stamp / 1e9, round(part[1], 1)] for stamp, part in delivered if part[1] > 20]
            self.record(sim_ns, summary)
        self._file.close()
        self._file = None
