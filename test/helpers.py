"""Helpers for tests that run ROS 2 nodes: DDS isolation and node processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup, ros_args


def sigint_as_from_a_terminal() -> None:
    """SIGINT at its default in a child (``preexec_fn``), as a terminal's Ctrl-C finds it: a
    shell that starts a command in the background (pytest under a CI script, or a stress
    gate run with nohup) makes SIGINT ignored, an ignored signal is inherited, and a test
    of what Ctrl-C does would then send one that nothing hears."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_node(
    group: ProcessGroup,
    module: str,
    log_dir: Path,
    *,
    name: str | None = None,
    namespace: str | None = None,
    params: Mapping[str, object] | None = None,
    params_files: tuple[Path, ...] = (),
    ready_text: str | None = "agent ready",
    timeout: float = 30.0,
    label: str | None = None,
) -> NodeProcess:
    """Start ``python -m module`` as a node and wait until it says ``ready_text``."""
    label = label or name or module.rsplit(".", 1)[-1]
    process = group.start(
        NodeProcess(
            module,
            ros_args(name=name, namespace=namespace, params=params, params_files=params_files),
            log_path=log_dir / f"{label}.log",
            label=label,
        )
    )
    if ready_text is not None and not process.wait_for_log(ready_text, timeout):
        raise AssertionError(f"{label} did not get ready in {timeout} s; its log:\n{process.log_text()}")
    return process


def run_module(module: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` to its end, in this test's environment (its ROS domain),
    output captured as text; never raises on a non-zero exit (tests assert on it)."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def panda_config() -> Path:
    from spin_decoupler_ros.tools.paths import find_config

    return find_config("panda_reach.yaml", package="franka_agent")


def start_panda_mock(processes: ProcessGroup, log_dir: Path, speed: float = 4.0, **mock: object) -> NodeProcess:
    """The MuJoCo mock with the reach config, ``speed`` x real time (0: flat out, lockstep)."""
    return start_node(
        processes,
        "franka_agent.mock.mock_hardware_node",
        log_dir,
        params_files=(panda_config(),),
        params={"speed_factor": speed, **mock},
        ready_text="mock arm ready",
        label="mock_hardware",
    )


def start_panda_agent(processes: ProcessGroup, log_dir: Path, **agent: object) -> NodeProcess:
    """The Panda agent with the reach config, on the mock's simulated time."""
    return start_node(
        processes,
        "franka_agent.panda_agent_node",
        log_dir,
        params_files=(panda_config(),),
        params={"use_sim_time": True, **agent},
        label="panda_agent",
    )
