"""What every trainer shares, the examples' and the Panda's: how it starts and ends (one
line on Ctrl-C, exit code 130; one line naming a bad parameter, exit code 2), the
callbacks its learn() runs, and a run folder whose recording and env are closed however
the run ends.

A trainer is then its own parameters, env and learner (examples/*/train.py,
franka_agent/train.py)::

    def main(argv=None) -> int:
        return trainer_main(NODE_NAME, train, argv, lambda: "interrupted: run it again")

    def train(argv) -> int:
        client = RLClient(node_name=NODE_NAME, ros_args=argv, connect=False)
        ...  # its parameters, then client.connect() and its env
        with training_session(run_dir, "A run", [client], env, record):
            seconds = learn(model, total_timesteps, [client])
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from spin_decoupler_ros.params import refuse_bad_parameters
from spin_decoupler_ros.rl.interrupts import quiet_on_ctrl_c
from spin_decoupler_ros.rl.recording import RunRecorder, record_clients
from spin_decoupler_ros.rl.run_folder import describe_run_folder
from spin_decoupler_ros.rl.training import FreezeGarbageCollector, TimingScalarsCallback


def trainer_main(
    node_name: str, train: Callable[[list[str]], int], argv: list[str] | None, interrupted: Callable[[], str]
) -> int:
    """Run ``train(argv)`` (sys.argv if None) as a trainer's entry point: Ctrl-C ends it with
    the line ``interrupted()`` says, exit code 130 (rl/interrupts.py); a bad parameter with
    one line naming it, exit code 2."""
    return quiet_on_ctrl_c(
        lambda: refuse_bad_parameters(node_name, lambda: train(sys.argv if argv is None else argv)), interrupted
    )


def timing_callbacks(clients: list[Any]) -> list[Any]:
    """The callbacks every learn() runs: the timing scalars of its clients' channels for
    TensorBoard, and full garbage collections kept short."""
    return [TimingScalarsCallback([client.channel for client in clients]), FreezeGarbageCollector()]


def learn(model: Any, total_timesteps: int, clients: list[Any], *callbacks: Any, **options: Any) -> float:
    """``model.learn`` with ``callbacks`` and the timing callbacks; the seconds it took."""
    started = time.monotonic()
    model.learn(total_timesteps=total_timesteps, callback=[*callbacks, *timing_callbacks(clients)], **options)
    return time.monotonic() - started


@contextmanager
def training_session(
    run_dir: Path, title: str, clients: list[Any], env: Any, record: bool
) -> Iterator[RunRecorder | None]:
    """A run folder with its README and, if ``record``, run.mcap of the clients' traffic;
    the env and the recording are closed however the run ends."""
    recorder = record_clients(run_dir, clients) if record else None
    describe_run_folder(run_dir, title)
    try:
        yield recorder
    finally:
        env.close()
        if recorder is not None:
            recorder.close()
