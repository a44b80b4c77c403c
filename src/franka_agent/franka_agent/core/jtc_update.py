"""When joint_trajectory_controller's update samples a trajectory, and where it starts a
new one from, per release.

Read from ros2_controllers' ``src/joint_trajectory_controller.cpp`` ``update()``, with the
desired state as a new trajectory's start (``interpolate_from_desired_state``, or
``open_loop_control``, as the robot profiles configure it):

- **4.x (Jazzy 4.42.1; Kilted's update is the same in this)**: the update at time T
  writes the sample at ``T + update_period_`` (``command_next_``) and publishes the
  sample at T as its reference. A new trajectory starts from the last command written
  (``last_commanded_state_``: the previous update's sample one period ahead), stamped
  with the previous update's time (``last_commanded_time_``): one period off.
- **2.x (Humble 2.54.0)**: the update at T writes and publishes the sample at T; a new
  trajectory starts from the previous update's command, stamped T.

A trajectory whose first point is past on its first sample never samples that start: the
agent sends its commands so (``ArmController.command``), and the genuine controller's
reference was measured to follow them exactly (bench/genuine_jtc.py, the golden traces in
franka_agent/test/golden/genuine_jtc, test_genuine_jtc_golden.py). Pure numpy, no ROS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from franka_agent.core.commanded_motion import trajectory_times
from franka_agent.core.trajectory import TrajectoryFollower, TrajectoryPoint

RELEASES = ("humble", "jazzy")


def controller_release(distro: str) -> str:
    """The release of the update a ROS 2 distribution's joint_trajectory_controller runs:
    Humble's 2.x, or the 4.x one (Jazzy, and unchanged in this since)."""
    return "humble" if distro == "humble" else "jazzy"


@dataclass(frozen=True)
class ControllerUpdate:
    """One release's update at a fixed ``period`` (s), on the desired-state start."""

    release: str = "jazzy"
    period: float = 0.001

    def __post_init__(self) -> None:
        if self.release not in RELEASES:
            raise ValueError(f"release must be one of {RELEASES}, got {self.release!r}")
        if not self.period > 0.0:
            raise ValueError(f"the update period must be positive, got {self.period}")

    def commanded_time(self, t: float) -> float:
        """The trajectory time whose sample the update at ``t`` writes to the hardware."""
        return t + self.period if self.release == "jazzy" else t

    def take(
        self,
        follower: TrajectoryFollower,
        now: float,
        points: list[TrajectoryPoint],
        start: float | None,
        previous_update: tuple[float, float] | None = None,
    ) -> bool:
        """Replace ``follower``'s trajectory at the update at ``now``, as this release does,
        the previous update having been at ``previous_update``: its time and its
        trajectory time, which the controller advances by measured periods, so the two
        part by the jitter of its clock reads (None: one period ago, both). False,
        keeping the current trajectory, if the controller refuses it."""
        before, sampled = (now - self.period, now - self.period) if previous_update is None else previous_update
        last_command = follower.sample(self.commanded_time(sampled))
        if self.release == "jazzy":
            return follower.set_trajectory(now, points, start, last_command, before_time=before)
        return follower.set_trajectory(now, points, start, last_command)


@dataclass(frozen=True)
class Replay:
    """The emulation's reference at each recorded update (rows), and whether each row is
    checkable: its trajectory's take was seen, and what it started from is known."""

    positions: np.ndarray
    velocities: np.ndarray
    checkable: np.ndarray


def replay(
    update: ControllerUpdate,
    trajectories: dict[int, list[TrajectoryPoint]],
    stamps_ns: np.ndarray,
    starts_ns: np.ndarray,
    times_ns: np.ndarray,
    references: np.ndarray,
) -> Replay:
    """Feed recorded trajectories to the emulation at the updates the genuine controller
    took them, and sample its reference where the genuine one was sampled.

    ``trajectories`` maps each trajectory's stamp (ns) to its points. The rows are the
    genuine controller's published updates: the update's time ``stamps_ns``, the start of
    its active trajectory ``starts_ns`` and its trajectory time ``times_ns``
    (``commanded_motion.trajectory_times``); ``references`` is the genuine reference at
    each row, used only for what the controller holds of itself (a trajectory not in
    ``trajectories``: its hold on activation), whose rows are not compared.

    A row whose trajectory time equals its update's time is the update that took the
    trajectory (``traj_time_ = time``). Where that row was not published (the controller's
    real-time publisher drops a message while the last is still going out), the
    trajectory is taken at the first row that shows it: its rows on its own points are
    still checkable, those on its bridge from the last command are not, nor the next
    trajectory's bridge if that starts from one of them.

    An update whose previous one sampled its command past the trajectory's last point
    (its trajectory time plus the nominal period, while the time advances by the measured
    one) samples the last point, even a little before it: that command sample left the
    trajectory's segment index at its end (4.42.1 ``Trajectory::sample``, "whole
    animation has played out"). Where that previous update was not published, such a row
    is not checkable.
    """
    # (Seconds counted from the first row: the follower's times are whole nanoseconds
    # exactly only below 1e15 ns, and stamps of the system clock are above 1e18.)
    base = int(times_ns[0])

    def seconds(t_ns: int | np.integer) -> float:
        return float(int(t_ns) - base) * 1e-9

    follower = TrajectoryFollower(references[0])
    rows, joints = references.shape
    positions = np.zeros((rows, joints))
    velocities = np.zeros((rows, joints))
    checkable = np.zeros(rows, dtype=bool)
    active: int | None = None
    replayed = False  # the active trajectory is one of ``trajectories``
    bridge_known = True  # the active trajectory's rows before its first point are checkable
    first_point = -np.inf  # when its first point is reached (s): from there, its own segments
    last_point = np.inf  # when its last point is reached (s)
    for row in range(rows):
        now = seconds(times_ns[row])
        start = int(starts_ns[row])
        consecutive = row > 0 and stamps_ns[row] - stamps_ns[row - 1] < 1.5e9 * update.period
        played_out = start == active and consecutive and update.commanded_time(seconds(times_ns[row - 1])) >= last_point
        unknown_end = start == active and not consecutive and now < last_point <= now + update.period
        if start != active:
            previous = (seconds(stamps_ns[row - 1]), seconds(times_ns[row - 1])) if consecutive else None
            last_command_at = update.commanded_time(now - update.period if previous is None else previous[1])
            from_known = bridge_known or last_command_at >= first_point
            replayed = start in trajectories
            if replayed:
                points = trajectories[start]
                update.take(follower, now, points, seconds(start), previous)
                took_here = times_ns[row] == stamps_ns[row]
                bridge_known = from_known and took_here and previous is not None
                first_point = seconds(start) + points[0].time
                last_point = seconds(start) + points[-1].time
            else:  # the controller's own hold, at rest
                follower.hold(references[row])
                bridge_known, first_point, last_point = True, -np.inf, np.inf
            active = start
        positions[row], velocities[row] = follower.sample(max(now, last_point) if played_out else now)
        checkable[row] = replayed and (bridge_known or now >= first_point) and not unknown_end
    return Replay(positions, velocities, checkable)


def replay_recording(recording: Mapping[str, np.ndarray], update: ControllerUpdate) -> Replay:
    """``replay`` of what bench/genuine_jtc.py records (its tap's arrays, as in the golden
    traces): the trajectories sent, with their stamps, and the controller's published
    states. A trajectory's point without velocities (NaN) makes a linear segment."""
    starts = np.concatenate(([0], np.cumsum(recording["point_counts"])))
    trajectories = {}
    for k, stamp in enumerate(recording["stamp_ns"]):
        rows = slice(starts[k], starts[k + 1])
        trajectories[int(stamp)] = [
            TrajectoryPoint(float(t) * 1e-9, q, None if np.any(np.isnan(v)) else v)
            for t, q, v in zip(
                recording["time_from_start_ns"][rows],
                recording["positions"][rows],
                recording["velocities"][rows],
                strict=True,
            )
        ]
    offsets = recording["state_time_from_start_ns"]
    times = trajectory_times(recording["state_stamp_ns"], offsets, recording["stamp_ns"])
    return replay(
        update, trajectories, recording["state_stamp_ns"], times - offsets, times, recording["reference_positions"]
    )


def largest_errors(recording: Mapping[str, np.ndarray], replayed: Replay) -> tuple[float, float]:
    """The largest position (rad) and velocity (rad/s) error of the replay against the
    recorded reference, over the rows that can be checked."""
    rows = replayed.checkable
    if not np.any(rows):
        return 0.0, 0.0
    return (
        float(np.max(np.abs(replayed.positions[rows] - recording["reference_positions"][rows]))),
        float(np.max(np.abs(replayed.velocities[rows] - recording["reference_velocities"][rows]))),
    )
