"""StallGuard: what the Panda agent knows of its own stalls, to keep late commands away
from the joint controller (docs/timing.md, "Stalls").

A stop of the process (SIGSTOP, a debugger, a paused VM) is announced by SIGCONT; a
starved process shows as a node clock that lags the newest /clock it has heard. After
either, what the agent reads may be old, so it sends nothing for a moment while the last
command's braking tail carries the arm.
"""

from __future__ import annotations

import enum
import signal
import time
from typing import TYPE_CHECKING

from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock

from spin_decoupler_ros.conversions import time_to_ns

if TYPE_CHECKING:
    from spin_decoupler_ros.agent import AgentNode, LatestMessage

# Wall seconds without commands after a stall, while what the agent hears catches up.
STALL_QUIET_S = 0.02
STALL_QUIET_MAX_S = 0.2
# After a stop, at least this long: the first command sent right after a 1 s stop once
# took 100 ms to reach the controller (DDS catching up), several times the lead.
STOPPED_QUIET_S = 0.15
# The warning when the process was stopped (SIGSTOP) between a command's last check and
# its leaving; the tests match it.
STOPPED_WHILE_SENDING = "the agent was stopped while sending a command"
STALLED_WHILE_SENDING = "the agent stalled while sending a command"


class Sent(enum.Enum):
    """How a command that has just been published left."""

    IN_TIME = "in time"
    STOPPED = "stopped while sending"  # a SIGCONT since the last check: it may have left late
    LATE = "late"  # a publish slow enough (no stop) that it may have left after its lead


class StallGuard:
    """Tells the agent's control tick when to send nothing, and how a send went.

    :param node: the agent (its clock, and whether its world waits for it).
    :param clock_reader: the newest /clock, on simulated time; None on wall time.
    :param lead_ns: how far ahead commands are planned (``command_lead``).
    :param period_ns: the control period.
    """

    def __init__(self, node: AgentNode, clock_reader: LatestMessage | None, lead_ns: int, period_ns: int) -> None:
        self._node = node
        self._clock_reader = clock_reader
        self.lead_ns = lead_ns
        self._period_ns = period_ns
        # A publish call that takes more than half the lead (wall) was interrupted by a stall.
        self.stall_wall_s = lead_ns / 2e9
        self._newest_clock_ns = 0
        self._quiet_until = 0.0  # monotonic time until which nothing is sent (after a stall)
        self.continued_at = 0.0  # monotonic time of the last SIGCONT
        self._settled_stop_at = 0.0  # the SIGCONT after which commanding was made safe again
        # The simulated clock's pace against the wall (s/s) and the last tick's (wall, newest
        # clock): after a stop, how far the clock should have got, to tell a stale reading.
        self._clock_pace = 0.0
        self._last_tick: tuple[float, int] | None = None
        self._stopped_at: tuple[float, int] | None = None
        signal.signal(signal.SIGCONT, self._on_continued)

    def command_time_ns(self) -> int:
        """Now, for stamping a command: the node's clock, or the newest /clock that has
        arrived if that is ahead (a backlog of /clock messages after a stall or on a
        starved core, each making a tick due, makes the node's clock lag it, and a command
        stamped with a stale time reaches the controller late for its own points)."""
        now = self._node.now_ns()
        if self._clock_reader is not None:
            raw = self._clock_reader.take_serialized()
            if raw is not None:
                self._newest_clock_ns = max(self._newest_clock_ns, time_to_ns(deserialize_message(raw, Clock).clock))
            now = max(now, self._newest_clock_ns)
        return now

    def keeps_quiet(self, started: float, now_ns: int) -> bool:
        """Whether the tick that started at ``started`` (monotonic), reading ``now_ns``,
        sends nothing: right after a stop, until the /clock has caught up, or while the
        node's clock lags the newest /clock. (A lockstep mock under a timing model waits
        for every command: nothing can be late, and a command not sent would leave it
        standing for good; test_timing_models.py::test_the_panda_mock_waits_for_the_learner...)"""
        if self._clock_reader is not None:
            self._note_tick(started, now_ns)
            if self._stale_after_stop(started, now_ns):
                return True
        return not self._node.waits_on_clock and (started < self._quiet_until or self._catching_up(started, now_ns))

    def stopped_since_settled(self) -> bool:
        """Whether a stop came since commanding was last made safe after one: the last
        command may have reached the controller after the stop, too late, and been refused,
        without the agent seeing anything of it. Counts it as settled."""
        if self.continued_at <= self._settled_stop_at:
            return False
        self._settled_stop_at = self.continued_at
        return True

    def late_ns(self, stamp_ns: int) -> int:
        """How old a command stamped ``stamp_ns`` is now."""
        return self.command_time_ns() - stamp_ns

    def too_late(self, started: float, late_ns: int) -> bool:
        """Whether a command ``late_ns`` old, planned in the tick that started at
        ``started`` (monotonic), is not to be sent: a stop since, or older than its lead
        allows."""
        return self.continued_at > started or late_ns > self.lead_ns - self._period_ns // 2

    def how_sent(self, sending: float, stamp_ns: int) -> Sent:
        """How a command stamped ``stamp_ns``, whose publish began at ``sending``
        (monotonic, before the last check), left. A stop in between cannot be helped from
        here: it may reach the controller after its lead, and joint_trajectory_controller
        jumps onto its own segment (test_panda.py::test_a_stop_inside_a_send_is_reported...)."""
        if self.continued_at > sending:
            self._settled_stop_at = self.continued_at
            return Sent.STOPPED
        return Sent.LATE if self.sent_late(sending, stamp_ns) else Sent.IN_TIME

    def sent_late(self, sending: float, stamp_ns: int) -> bool:
        """Whether a publish that returned just now may have left after its command's lead
        ran out. On wall time, a publish that took more than half the lead. On a simulated
        clock, only if the newest /clock says so: a clock that waits for the agent (the
        lockstep mock) has not moved while the agent was slow, and the command is as good
        as one sent on time (test_panda.py::test_a_slow_send_on_a_waiting_clock_is_not_uncertain)."""
        if time.monotonic() - sending <= self.stall_wall_s:
            return False
        if self._clock_reader is None:
            return True
        return self.late_ns(stamp_ns) > self.lead_ns - self._period_ns // 2

    def _on_continued(self, signum: int, frame: object) -> None:
        """SIGCONT: the process was stopped, and has just been continued."""
        self.continued_at = time.monotonic()
        self._quiet_until = self.continued_at + STOPPED_QUIET_S
        self._stopped_at = self._last_tick

    def _stale_after_stop(self, wall: float, clock_ns: int) -> bool:
        """After a stop (SIGCONT), whether the newest /clock is still short of where the
        clock, at its pace before the stop, should be by now: what the process hears is
        still the backlog from the stop (delivered oldest first). At most
        STALL_QUIET_MAX_S (a clock that waits for the agent, as the lockstep mock does,
        never gets there)."""
        if self._stopped_at is None:
            return False
        if wall - self.continued_at > STALL_QUIET_MAX_S:
            self._stopped_at = None
            return False
        stop_wall, stop_clock_ns = self._stopped_at
        expected_ns = stop_clock_ns + self._clock_pace * (wall - stop_wall) * 1e9
        if clock_ns < expected_ns - self.lead_ns / 2:
            return True
        self._stopped_at = None
        return False

    def _note_tick(self, wall: float, clock_ns: int) -> None:
        """Learn the clock's pace from ticks that no stop separates. (A stall of this
        process without a stop looks the same from inside, but so does a clock that waits
        for the agent, as the lockstep mock does: only a SIGCONT says which.)"""
        last, self._last_tick = self._last_tick, (wall, clock_ns)
        if last is None or self._stopped_at is not None or self.continued_at > last[0] or wall - last[0] < 1e-3:
            return
        pace = (clock_ns - last[1]) / 1e9 / (wall - last[0])
        self._clock_pace += 0.1 * (min(max(pace, 0.0), 100.0) - self._clock_pace)

    def _catching_up(self, wall: float, now_ns: int) -> bool:
        """Whether the node's clock lags the newest /clock heard by more than half the lead:
        the process fell behind (starved, or just continued) and what it hears is still
        arriving; if so, keep quiet a moment."""
        if self._clock_reader is None:
            return False
        if now_ns - self._node.now_ns() <= self.lead_ns // 2:
            return False
        self._quiet_until = wall + STALL_QUIET_S
        return True
