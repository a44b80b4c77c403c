"""StepAnswer: the agent's answer to a reset or a step, as the RL side hands it on."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from spin_decoupler_msgs.msg import StepResult
from spin_decoupler_ros.conversions import duration_to_ns, time_to_ns, vector_from_field
from spin_decoupler_ros.core.timing import ns_to_seconds


@dataclass(frozen=True)
class StepAnswer:
    """The agent's answer to a reset (seq 0) or a step, with its timing, in seconds.

    ``lat``: measured duration of the previous action (LAT). ``ato``: agent clock at the
    observation (ATO). ``duration``: how long this step's action ran before the
    observation. ``hold``: part of LAT the agent held position because the RL side was
    silent past its watchdog. ``wall_time``: RL-side wall clock when the answer
    arrived. ``round_trip``: from sending the command to the answer. ``clock_offset``:
    current estimate of agent clock minus RL clock (None until the answer to a step was
    taken as it arrived, not after the learner's own work: ``heard_on_arrival``).
    """

    seq: int
    observation: np.ndarray
    lat: float
    ato: float
    duration: float
    hold: float
    agent_reward: float | None
    wall_time: float
    round_trip: float
    clock_offset: float | None

    @classmethod
    def from_result(cls, result: StepResult, round_trip: float, clock_offset: float | None) -> StepAnswer:
        """The answer a StepResult (the Episode goal's feedback) carries, taken now."""
        return cls(
            seq=result.seq,
            observation=vector_from_field(result.observation),
            lat=ns_to_seconds(duration_to_ns(result.lat)),
            ato=ns_to_seconds(time_to_ns(result.ato)),
            duration=ns_to_seconds(duration_to_ns(result.duration)),
            hold=ns_to_seconds(duration_to_ns(result.hold)),
            agent_reward=float(result.reward) if result.has_reward else None,
            wall_time=time.time(),
            round_trip=round_trip,
            clock_offset=clock_offset,
        )

    def info(self) -> dict[str, Any]:
        """The timing fields, for a Gymnasium ``info`` dict."""
        return {
            "seq": self.seq,
            "lat": self.lat,
            "ato": self.ato,
            "duration": self.duration,
            "hold": self.hold,
            "wall_time": self.wall_time,
            "round_trip": self.round_trip,
            "clock_offset": self.clock_offset,
            "agent_reward": self.agent_reward,
        }
