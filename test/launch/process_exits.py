"""How each process a launch test started exited, through public launch APIs."""

from __future__ import annotations

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


def all_exited_cleanly(exits: Exits, processes: int) -> bool:
    return len(exits) == processes and all(code == 0 for _, code in exits)
