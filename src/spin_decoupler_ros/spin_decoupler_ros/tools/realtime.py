"""Real-time scheduling for the threads a node receives on (Linux).

A message is late if the thread that receives it does not run: on a loaded machine a
DDS receive thread at normal priority can wait tens of milliseconds for a core. Fast
DDS names its receive threads ``dds.shm.<port>`` (shared memory) and ``dds.udp.<port>``;
they only move data, so SCHED_FIFO for them costs the machine nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

RECEIVE_THREAD_PREFIXES = ("dds.shm.", "dds.udp.")


def receive_threads() -> list[int]:
    """Thread ids of this process's DDS receive threads (none where /proc is absent)."""
    tasks = Path("/proc/self/task")
    found = []
    for task in tasks.iterdir() if tasks.is_dir() else ():
        try:
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        if name.startswith(RECEIVE_THREAD_PREFIXES) and name != "dds.shm.wdog":
            found.append(int(task.name))
    return found


def raise_receive_threads(priority: int) -> tuple[int, str]:
    """SCHED_FIFO ``priority`` for this process's DDS receive threads (call it once the
    node exists: the threads come with it). Returns how many were raised, and why none
    or not all could be ('' when all were)."""
    if priority <= 0:
        return 0, "priority 0: left at normal scheduling"
    threads = receive_threads()
    if not threads:
        return 0, "no DDS receive thread found (not Fast DDS, or no /proc)"
    raised = 0
    reason = ""
    for tid in threads:
        try:
            os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))
            raised += 1
        except (PermissionError, OSError, AttributeError) as exc:
            reason = f"refused ({exc}): grant rtprio (limits.conf) or CAP_SYS_NICE"
    return raised, reason


def request_realtime(priority: int) -> tuple[bool, str]:
    """SCHED_FIFO ``priority`` for the calling thread (a node's executor) and the
    process's DDS receive threads. Returns whether it was granted, and what to log."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (PermissionError, OSError, AttributeError) as exc:
        return False, (
            f"realtime_priority {priority} refused ({exc}); running at normal priority. "
            "Grant rtprio (limits.conf) or CAP_SYS_NICE, ideally on a PREEMPT_RT kernel."
        )
    raised, reason = raise_receive_threads(priority)
    text = f"executor thread and {raised} DDS receive thread(s) run SCHED_FIFO priority {priority}"
    return True, text + (f"; the other receive threads: {reason}" if reason else "")
