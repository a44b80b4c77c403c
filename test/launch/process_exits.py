"""How each process a launch test started exited, through public launch APIs."""

from __future__ import annotations

import time

from launch import LaunchContext
from launch.actions import RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events.process import ProcessExited

Exits = list[tuple[str, int]]


def noting_exits(exits: Exits) -> RegisterEventHandler:
    """An event handler appending (process name, exit code) to ``exits`` as each process ends."""

    def note(event: ProcessExited, _: LaunchContext) -> None:
        exits.append((event.action.name, event.returncode))

    return RegisterEventHandler(OnProcessExit(on_exit=note))


def wait_for_exit(exits: Exits, name_prefix: str, timeout: float) -> bool:
    """Whether a process whose name starts with ``name_prefix`` exited within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(name.startswith(name_prefix) for name, _ in exits):
            return True
        time.sleep(0.2)
    return False


def all_exited_cleanly(exits: Exits, processes: int) -> bool:
    return len(exits) == processes and all(code == 0 for _, code in exits)
