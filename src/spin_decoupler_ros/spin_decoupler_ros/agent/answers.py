"""The answers an agent sends: each observation checked (its size, every element
finite) and published as the episode's feedback with its timing (LAT, ATO, the step's
duration and control ticks); a reset's answer times no step."""

from __future__ import annotations

import numpy as np

from spin_decoupler_msgs.msg import StepTiming
from spin_decoupler_ros.agent.agent_base import AgentBase, EpisodeHandle
from spin_decoupler_ros.conversions import float64_field, set_stamp
from spin_decoupler_ros.core.protocol import StepStart


class Answers(AgentBase):
    """Builds and publishes the answers to resets and steps."""

    def _checked_observation(self) -> np.ndarray | None:
        raw = self._call_hook("build_observation", self.build_observation)
        if raw is None:
            return None
        obs = np.asarray(raw, dtype=np.float64).reshape(-1)
        if obs.size != self.observation_size:
            self._fault(
                "build_observation",
                ValueError(f"returned {obs.size} values, the agent declared observation_size {self.observation_size}"),
            )
            return None
        if not np.all(np.isfinite(obs)):
            bad = int(np.argmax(~np.isfinite(obs)))
            self._fault("build_observation", ValueError(f"observation[{bad}] is {obs[bad]}"))
            return None
        return obs

    def _send_reset_observation(self, now: int) -> None:
        episode = self._protocol.episode
        assert episode is not None
        handle = self._episodes.get(episode.episode_id)
        obs = self._checked_observation()
        if obs is None or handle is None:
            return
        self._protocol.reset_observed(now)
        self._world.observed(now)
        self._last_duration_ns = 0
        self._tick_monitor.start_step()
        self._feedback_msg.timing = StepTiming()  # a reset's answer times no step
        self._publish_answer(
            handle, 0, obs, None, now, lat_ns=0, hold_ns=0, duration_ns=0, received_ns=handle.received_ns
        )

    def _send_step_observation(self, now: int) -> bool:
        step = self._current_step
        episode = self._protocol.episode
        assert step is not None and episode is not None
        handle = self._episodes.get(episode.episode_id)
        obs = self._checked_observation()
        if obs is None or handle is None:
            return False
        reward = self._call_hook("agent_reward", self.agent_reward)
        self._last_duration_ns = now - step.start_ns
        self._fill_timing(self._feedback_msg.timing, episode.episode_id, step, now)
        self._publish_answer(
            handle,
            step.seq,
            obs,
            reward,
            now,
            lat_ns=step.lat_ns,
            hold_ns=step.hold_ns,
            duration_ns=now - step.start_ns,
            received_ns=step.start_ns,
        )
        return True

    def _publish_answer(
        self,
        handle: EpisodeHandle,
        seq: int,
        obs: np.ndarray,
        reward: float | None,
        now: int,
        *,
        lat_ns: int,
        hold_ns: int,
        duration_ns: int,
        received_ns: int,
    ) -> None:
        """Publish a StepResult as the episode's feedback; the RL side is waiting for it."""
        result = self._feedback_msg.step  # reused: filled in place, serialised by publish
        result.seq = seq
        result.observation = float64_field(obs)
        result.has_reward = reward is not None
        result.reward = float(reward) if reward is not None else 0.0
        set_stamp(result.lat, lat_ns)
        set_stamp(result.hold, hold_ns)
        set_stamp(result.ato, now)
        set_stamp(result.duration, duration_ns)
        set_stamp(result.command_received_at, received_ns)
        result.error = ""
        handle.goal_handle.publish_feedback(self._feedback_msg)

    def _fill_timing(self, timing: StepTiming, episode_id: bytes, step: StepStart, now: int) -> None:
        """The StepTiming of ``step``, observed at ``now``: sent with its answer, and on
        ``step_timing`` for logs."""
        stats = self._tick_monitor.start_step()
        timing.episode_id.uuid = np.frombuffer(episode_id, dtype=np.uint8)
        timing.seq = step.seq
        set_stamp(timing.action_start, step.start_ns)
        set_stamp(timing.lat, step.lat_ns)
        set_stamp(timing.duration, step.duration_ns)
        set_stamp(timing.ato, now)
        timing.control_ticks = stats.ticks
        timing.late_ticks = stats.late_ticks
        set_stamp(timing.max_period, stats.max_period_ns)
