"""No process outlives its run: whichever way the process that started the nodes ends
(SIGINT, SIGTERM, SIGKILL, an exception), every node it started ends too. Checked for
the process helpers, an example's run.py and the main job, counting what is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from helpers import sigint_as_from_a_terminal

from spin_decoupler_ros.tools.processes import ProcessGroup

PLANT = "spin_decoupler_ros.examples.first_order_plant.agent"
ENDINGS = ("SIGINT", "SIGTERM", "SIGKILL", "exception")
HELPER_SCRIPT = textwrap.dedent(
    f"""
    import sys, time
    from pathlib import Path
    from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup, ros_args
    with ProcessGroup() as group:
        agent = group.start(NodeProcess("{PLANT}", ros_args(), log_path=Path(sys.argv[1]) / "agent.log"))
        assert agent.wait_for_log("agent ready", 60), agent.log_text()
        print("ready", flush=True)
        if sys.argv[2] == "exception":
            raise RuntimeError("the parent failed")
        time.sleep(600)
    """
)


def start_parent(command: list[str], ready_when: str, tmp_path: Path, timeout: float = 120.0) -> subprocess.Popen[str]:
    """Start the process that starts nodes; wait until ``ready_when`` is in its output."""
    log = tmp_path / "parent.log"
    parent = subprocess.Popen(
        command, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True, preexec_fn=sigint_as_from_a_terminal
    )
    deadline = time.monotonic() + timeout
    while ready_when not in log.read_text():
        assert parent.poll() is None, f"the parent ended early:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"not ready in {timeout} s:\n{log.read_text()}"
        time.sleep(0.1)
    return parent


def end_and_count_what_is_left(parent: subprocess.Popen[str], ending: str, expected_children: int) -> list[str]:
    """End ``parent`` the way named; the command lines of its nodes still alive 15 s later."""
    deadline = time.monotonic() + 120
    while len(children := psutil.Process(parent.pid).children(recursive=True)) < expected_children:
        assert parent.poll() is None and time.monotonic() < deadline, [c.cmdline() for c in children]
        time.sleep(0.2)
    time.sleep(2.0)  # (under way)
    if ending != "exception":
        parent.send_signal(getattr(signal, ending))
    parent.wait(timeout=60)
    _, alive = psutil.wait_procs(children, timeout=15)
    left = [" ".join(p.cmdline()[:3]) for p in alive]
    for process in alive:  # (leave nothing behind for the next test either)
        process.kill()
    return left


@pytest.mark.parametrize("ending", ENDINGS)
def test_the_process_helpers_leave_no_node_behind(ending: str, tmp_path: Path) -> None:
    parent = start_parent([sys.executable, "-c", HELPER_SCRIPT, str(tmp_path), ending], "ready", tmp_path)
    assert end_and_count_what_is_left(parent, ending, 1) == []


@pytest.mark.parametrize("ending", ("SIGINT", "SIGTERM", "SIGKILL"))
def test_an_examples_run_leaves_no_node_behind(ending: str, tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "spin_decoupler_ros.examples.first_order_plant.run",
        "--timesteps",
        "100000",
        "--run-dir",
        str(tmp_path / "run"),
    ]
    parent = start_parent(command, "", tmp_path)
    assert end_and_count_what_is_left(parent, ending, 1) == []


@pytest.mark.parametrize("ending", ("SIGINT", "SIGTERM", "SIGKILL"))
@pytest.mark.parametrize(("one_process", "children"), [("yes", 2), ("no", 3)])
def test_the_main_job_leaves_no_process_behind(ending: str, one_process: str, children: int, tmp_path: Path) -> None:
    """Mock and agent in one process (the default under a simulated timing model) or
    two, and the trainer: none left, however the main job ends."""
    command = [sys.executable, "-m", "franka_agent.pipeline", "--total-timesteps", "100000"]
    command += ["--one-process", one_process, "--run-dir", str(tmp_path / "run")]
    parent = start_parent(command, "main job:", tmp_path)
    assert end_and_count_what_is_left(parent, ending, children) == []


def test_a_process_group_turns_sigterm_into_a_clean_exit_and_restores_the_handler() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as leaving, ProcessGroup():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1.0)  # (the handler runs at the next bytecode)
    assert leaving.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_rerun_beside_a_stray_agent_says_so_by_name(processes: ProcessGroup, tmp_path: Path) -> None:
    from helpers import start_node

    from spin_decoupler_ros.core import AgentConflictError
    from spin_decoupler_ros.rl import RLClient

    start_node(processes, PLANT, tmp_path, namespace="/plant", label="stray")
    start_node(processes, PLANT, tmp_path, namespace="/plant", label="this_run")
    with pytest.raises(AgentConflictError, match=r"2 agents answer at '/plant' \(/plant/first_order_plant_agent"):
        for _ in range(20):  # (until this client has discovered both)
            RLClient("/plant", connect_timeout=20).close()


@pytest.mark.parametrize("stray_starts", ["before_connect", "after_connect", "mid_episode"])
def test_a_second_agent_is_named_whenever_it_started(
    processes: ProcessGroup, tmp_path: Path, stray_starts: str
) -> None:
    """A stray agent in the namespace, started before the client connects, between its
    connect and its first reset, or while an episode runs: once DDS has shown it to the
    client, the next connect or reset refuses, naming both nodes and the namespace."""
    from helpers import start_node

    from spin_decoupler_ros.core import AgentConflictError
    from spin_decoupler_ros.rl import RLClient

    def stray() -> None:
        start_node(processes, PLANT, tmp_path, namespace="/plant", label="stray")

    named = r"2 agents answer at '/plant' \(/plant/first_order_plant_agent, /plant/first_order_plant_agent\)"
    if stray_starts == "before_connect":
        stray()
    start_node(processes, PLANT, tmp_path, namespace="/plant", label="this_run")
    client = RLClient("/plant", connect=False)
    try:
        if stray_starts == "before_connect":
            with pytest.raises(AgentConflictError, match=named):
                while client.node.count_publishers("/plant/status") < 2:  # (until DDS shows both)
                    client.rl_node.spin_once(0.05)
                client.connect(timeout=20)
            return
        client.connect(timeout=20)
        if stray_starts == "mid_episode":
            client.reset()
            client.step([0.1])
        stray()
        while client.node.count_publishers("/plant/status") < 2:
            client.rl_node.spin_once(0.05)
        with pytest.raises(AgentConflictError, match=named):
            client.reset()
    finally:
        client.close()


def test_a_main_job_whose_trainer_fails_leaves_no_process_behind(tmp_path: Path) -> None:
    """The trainer ends in an error (a bad parameter in the config, found by the trainer
    after the robots started): the main job says so, fails, and stops the mock and the
    agent it started."""
    from spin_decoupler_ros.tools.paths import find_config

    config = find_config("panda_reach.yaml", package="franka_agent").read_text()
    (tmp_path / "bad.yaml").write_text(config.replace("episode_steps: 50 ", "episode_steps: 0 "))
    command = [sys.executable, "-m", "franka_agent.pipeline", "--config", str(tmp_path / "bad.yaml")]
    command += ["--run-dir", str(tmp_path / "run")]
    log = tmp_path / "parent.log"
    parent = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True)
    seen: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + 120
    while parent.poll() is None and time.monotonic() < deadline:
        try:
            seen.update((child.pid, child) for child in psutil.Process(parent.pid).children(recursive=True))
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    assert parent.wait(timeout=60) != 0
    assert "parameter 'episode_steps'" in log.read_text(), log.read_text()
    _, alive = psutil.wait_procs(list(seen.values()), timeout=15)
    left = [" ".join(p.cmdline()[:3]) for p in alive]
    for process in alive:
        process.kill()
    assert len(seen) >= 2 and left == [], (len(seen), left)  # (the mock and the agent had started)
