"""Which executor a node process spins (executors.py): the EventsExecutor only where every
node fits it, and an agent on it serves episodes and stops as on the other one."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import start_node
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import UInt64

from spin_decoupler_ros.agent import LatestMessage
from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.executors import EXECUTOR_VARIABLE, events_executor_available, executor_for, why_not_events
from spin_decoupler_ros.rl.client import init_private_context
from spin_decoupler_ros.tools.processes import ProcessGroup

LANDER = "spin_decoupler_ros.examples.lunar_lander.agent"
CHOSEN = "spinning on rclpy's EventsExecutor"
KEPT = "spinning on rclpy's SingleThreadedExecutor"
WAIT_S = 3.0
needs_events = pytest.mark.skipif(not events_executor_available(), reason="this rclpy has no EventsExecutor")


class FitNode(Node):
    events_executor_fit = True


@pytest.fixture
def context(ros_domain: dict[str, str]) -> Iterator[Context]:
    context = init_private_context([])
    yield context
    context.try_shutdown()


def test_a_node_fits_only_when_it_says_so_and_has_nothing_the_events_executor_breaks(context: Context) -> None:
    plain = Node("plain", context=context)
    assert "does not say it fits" in (why_not_events(plain) or "")
    fit = FitNode("fit", context=context)
    fit.create_subscription(UInt64, "/fit_topic", lambda msg: None, 10)
    fit.create_timer(1.0, lambda: None)
    assert why_not_events(fit) is None

    reader = FitNode("reader", context=context)
    LatestMessage(reader, UInt64, "/read_by_hand")
    assert "callback group of its own" in (why_not_events(reader) or "")

    guarded = FitNode("guarded", context=context)
    guarded.create_guard_condition(lambda: None)
    assert "guard conditions" in (why_not_events(guarded) or "")

    informed = FitNode("informed", context=context)
    informed.create_subscription(UInt64, "/informed", lambda msg, info: None, 10)
    import rclpy.subscription

    if hasattr(rclpy.subscription, "MessageInfo"):  # (rclpy since Iron passes it to such a callback)
        assert "MessageInfo" in (why_not_events(informed) or "")
    for node in (plain, fit, reader, guarded, informed):
        node.destroy_node()


def test_one_node_that_does_not_fit_keeps_the_process_on_the_single_threaded_executor(
    context: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(EXECUTOR_VARIABLE, raising=False)
    fit, plain = FitNode("fit", context=context), Node("plain", context=context)
    executor, why = executor_for([fit, plain], context=context)
    assert isinstance(executor, SingleThreadedExecutor)
    assert "node 'plain' does not fit" in why or not events_executor_available()
    executor, why = executor_for([fit], context=context)
    assert isinstance(executor, SingleThreadedExecutor) is not events_executor_available()
    monkeypatch.setenv(EXECUTOR_VARIABLE, "single")
    executor, why = executor_for([fit], context=context)
    assert isinstance(executor, SingleThreadedExecutor) and why == f"{EXECUTOR_VARIABLE}=single"
    monkeypatch.setenv(EXECUTOR_VARIABLE, "multi")
    with pytest.raises(ParameterError, match=f"{EXECUTOR_VARIABLE}='multi': expected one of auto, single"):
        executor_for([fit], context=context)
    fit.destroy_node()
    plain.destroy_node()


@needs_events
def test_a_self_clocked_agent_runs_on_the_events_executor_serves_episodes_and_stops_cleanly(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    from spin_decoupler_ros.examples.lunar_lander.task import LunarLanderEnv

    params = {"control_rate": 1000.0, "rl_timestep": 0.004, "timing_model": "none"}
    agent = start_node(processes, LANDER, tmp_path, namespace="/evx", params=params, label="evx")
    assert agent.wait_for_log(CHOSEN, 10), agent.log_text()
    env = LunarLanderEnv("/evx", client_options={"connect_timeout": 20})
    try:
        for episode in range(2):  # a second goal replaces the first: the reset path twice
            env.reset(seed=episode)
            for _ in range(10):
                _, _, terminated, truncated, info = env.step(2)
                assert info["frames"] == 4  # under none, each step is exactly its 4 frames
                assert not (terminated or truncated)
    finally:
        env.close()
    started = time.monotonic()
    assert agent.stop() == 0  # SIGINT: close() holds, and the process leaves
    assert time.monotonic() - started < 5.0, "the agent needed more than SIGINT to stop"
    assert "Traceback" not in agent.log_text()


@needs_events
def test_a_self_clocked_agent_configured_anew_serves_episodes_on_the_events_executor(
    processes: ProcessGroup, tmp_path: Path
) -> None:
    """Cleanup destroys the agent's timers, topics and Episode server, configure makes
    new ones: the executor the process chose at start must serve those too."""
    from lifecycle_msgs.msg import Transition
    from test_lifecycle import LifecycleClient

    from spin_decoupler_ros.examples.lunar_lander.task import LunarLanderEnv

    params = {"control_rate": 1000.0, "rl_timestep": 0.004, "timing_model": "none"}
    agent = start_node(processes, LANDER, tmp_path, namespace="/again", params=params, label="again")
    assert agent.wait_for_log(CHOSEN, 10), agent.log_text()
    operator = LifecycleClient("again/lunar_lander_agent")
    try:
        for transition in (
            Transition.TRANSITION_DEACTIVATE,
            Transition.TRANSITION_CLEANUP,
            Transition.TRANSITION_CONFIGURE,
            Transition.TRANSITION_ACTIVATE,
        ):
            assert operator.change(transition), transition
        env = LunarLanderEnv("/again", client_options={"connect_timeout": 20})
        try:
            env.reset(seed=0)
            assert all(env.step(0)[4]["frames"] == 4 for _ in range(5))
        finally:
            env.close()
    finally:
        operator.close()
    assert agent.stop() == 0


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("executor", ["auto", "single"])
def test_an_agent_waiting_for_its_learner_takes_no_cpu(
    processes: ProcessGroup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: str
) -> None:
    """While the learner thinks (a training update: seconds), a self-clocked agent's world
    waits, and the agent must leave the CPU to the learner: no coroutine waits out the
    episode (episode_server.execute_goal; rclpy's EventsExecutor resumes one back to back)."""
    from spin_decoupler_ros.examples.lunar_lander.task import LunarLanderEnv

    monkeypatch.setenv(EXECUTOR_VARIABLE, executor)
    params = {"control_rate": 1000.0, "rl_timestep": 0.004, "timing_model": "lognormal:0.002,0.008"}
    agent = start_node(processes, LANDER, tmp_path, namespace="/waits", params=params, label=f"waits_{executor}")
    env = LunarLanderEnv("/waits", client_options={"connect_timeout": 20})
    try:
        env.reset(seed=0)
        env.step(0)
        time.sleep(0.5)  # (the think time's frames, and the answer's last callbacks)
        before = cpu_seconds(agent.pid)
        time.sleep(WAIT_S)
        used = cpu_seconds(agent.pid) - before
    finally:
        env.close()
    # Spinning, it takes a core (WAIT_S of CPU, a third of it beside two busy processes).
    assert used < WAIT_S / 10, f"the agent used {used:.2f} s of CPU in {WAIT_S} s while its world waited"


@needs_events
def test_an_agent_on_wall_time_keeps_the_single_threaded_executor(processes: ProcessGroup, tmp_path: Path) -> None:
    params = {"control_rate": 100.0, "rl_timestep": 0.04, "timing_model": "wall"}
    agent = start_node(processes, LANDER, tmp_path, namespace="/wall", params=params, label="wall")
    assert agent.wait_for_log(KEPT, 10), agent.log_text()
    assert CHOSEN not in agent.log_text()
    assert agent.stop() == 0
