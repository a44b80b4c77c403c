"""Ctrl-C ends every entry point quietly: one line saying where the run is, exit code
130, no traceback, no process left; and a learner's Ctrl-C, wherever it lands in a
step, arrives as KeyboardInterrupt (rl/interrupts.py)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import sigint_as_from_a_terminal, start_node

from spin_decoupler_ros.core.errors import NotResetError
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.rl.checkpoint import read_latest
from spin_decoupler_ros.rl.training import logged_steps
from spin_decoupler_ros.tools.processes import ProcessGroup, find_process

PLANT = "spin_decoupler_ros.examples.first_order_plant.agent"
LEARNER = """
import faulthandler, signal, sys
faulthandler.register(signal.SIGUSR1, all_threads=True)  # (the test's view of a learner that does not end)
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.core.errors import NotResetError

client = RLClient("/plant", connect_timeout=20, reset_timeout=5.0)
client.reset()
client.step([0.1])
print("ready", flush=True)
try:
    while True:
        client.step([0.3])
except KeyboardInterrupt:
    print("interrupted: KeyboardInterrupt", flush=True)
except BaseException as error:
    print(f"interrupted: {type(error).__name__}: {error}", flush=True)
    sys.exit(1)
try:
    client.step([0.0])
    print("next step: served", flush=True)  # (interrupted between two steps)
except NotResetError as error:
    print(f"next step: NotResetError: {error}", flush=True)
print(f"reset: seq {client.reset().seq}", flush=True)
client.close()
sys.exit(130)
"""


def test_a_learners_ctrl_c_anywhere_in_a_step_is_a_keyboard_interrupt(processes: ProcessGroup, tmp_path: Path) -> None:
    start_node(processes, PLANT, tmp_path, namespace="/plant", params={"rl_timestep": 0.02, "control_rate": 500.0})
    (tmp_path / "learner.py").write_text(LEARNER)
    rng = random.Random()
    for trial in range(8):
        learner = subprocess.Popen(
            [sys.executable, str(tmp_path / "learner.py")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=sigint_as_from_a_terminal,
        )
        try:
            assert learner.stdout is not None
            assert learner.stdout.readline() == "ready\n"
            time.sleep(rng.uniform(0.0, 0.3))
            learner.send_signal(signal.SIGINT)
            output, _ = learner.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            learner.send_signal(signal.SIGUSR1)  # every thread's stack, then its end
            time.sleep(1.0)
            learner.kill()
            printed = learner.communicate()[0]
            pytest.fail(f"trial {trial}: the learner did not end within 30 s of its Ctrl-C:\n{printed}")
        finally:
            learner.kill()
        assert learner.returncode == 130, output
        lines = output.splitlines()
        assert lines[0] == "interrupted: KeyboardInterrupt", output
        assert lines[1] == "next step: served" or "was interrupted (Ctrl-C) while this client waited for" in lines[1]
        assert lines[2] == "reset: seq 0", (trial, output)


FINALIZED_LEARNER = """
import os, signal, sys, time
from spin_decoupler_ros.rl import RLClient

class Finalized:
    def __del__(self):  # where the Ctrl-C lands: Python drops an exception raised here
        os.kill(os.getpid(), signal.SIGINT)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            pass

client = RLClient("/plant", connect_timeout=20, reset_timeout=5.0)
client.reset()
client.step([0.1])
Finalized()
print("finalized", flush=True)
try:
    for _ in range(100):
        client.step([0.3])
    print("not interrupted", flush=True)
except KeyboardInterrupt:
    print("interrupted: KeyboardInterrupt", flush=True)
client.close()
"""


def test_a_ctrl_c_that_lands_in_a_finalizer_still_interrupts_the_step(processes: ProcessGroup, tmp_path: Path) -> None:
    """rclpy's executor drops a task (a Future, with a finalizer) per callback, and Python
    drops an exception raised in a finalizer: a Ctrl-C landing there used to go unheard,
    and the learner stepped on (rl/interrupts.py, raise_dropped_ctrl_c)."""
    start_node(processes, PLANT, tmp_path, namespace="/plant", params={"rl_timestep": 0.02, "control_rate": 500.0})
    (tmp_path / "learner.py").write_text(FINALIZED_LEARNER)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "learner.py")],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=sigint_as_from_a_terminal,
    )
    assert done.stdout.splitlines() == ["finalized", "interrupted: KeyboardInterrupt"], done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr


def test_a_ctrl_c_before_a_step_is_sent_leaves_the_episode_as_it_was_and_after_gives_it_up(
    processes: ProcessGroup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the random Ctrl-Cs above land by chance, here on purpose: while the command
    is signed (nothing sent yet) and as it is published (the step is out)."""
    start_node(processes, PLANT, tmp_path, namespace="/plant", params={"rl_timestep": 0.02, "control_rate": 500.0})
    with RLClient("/plant", connect_timeout=20, reset_timeout=5.0) as client:
        client.reset()
        assert client.step([0.1]).seq == 1
        channel = client.channel

        def interrupt(*args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt

        with monkeypatch.context() as patched:
            patched.setattr(channel, "_sign", interrupt)
            with pytest.raises(KeyboardInterrupt):
                client.step([0.2])
        assert client.step([0.2]).seq == 2  # (the agent still expects step 2, and gets it)
        publish = channel._command_pub.publish
        with monkeypatch.context() as patched:
            patched.setattr(channel._command_pub, "publish", interrupt)
            with pytest.raises(KeyboardInterrupt):
                client.step([0.3])
        with pytest.raises(NotResetError, match="was interrupted"):
            client.step([0.3])
        assert channel._command_pub.publish == publish
        assert client.reset().seq == 0 and client.step([0.3]).seq == 1


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ctrl_c_ends_the_main_job_with_one_line_where_the_run_is(ros_domain: dict[str, str], tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    job = subprocess.Popen(
        [sys.executable, "-m", "franka_agent.pipeline", "--total-timesteps", "5000", "--run-dir", str(run_dir)],
        env={**os.environ, "SPIN_DECOUPLER_COMMAND": "./ws main"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_from_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while len(logged_steps(run_dir / "steps.csv")) < 50:
            assert job.poll() is None and time.monotonic() < deadline, job.communicate()
            time.sleep(0.1)
        job.send_signal(signal.SIGINT)
        output, errors = job.communicate(timeout=60)
    finally:
        job.kill()
    assert job.returncode == 130, errors
    assert "Traceback" not in output + errors, errors
    (line,) = [line for line in errors.splitlines() if line.strip() and not line.startswith("[INFO]")]
    step = read_latest(run_dir).step
    assert f"interrupted (Ctrl-C) at step {step}, checkpointed there" in line, line
    assert line.endswith(f"./ws main --resume {run_dir} goes on from there"), line
    assert find_process("franka_agent", str(run_dir)) is None  # nothing left running
