"""The one ``main()`` shape every node of this project uses.

A process spins its nodes on the SingleThreadedExecutor, or on rclpy's EventsExecutor
where every node fits it (self-clocked agents: ``executors.py`` says which and why).
Never a MultiThreadedExecutor: it takes ~100 ms per round trip in these releases
(ros2/rclpy#1452), and nothing here needs threads: callbacks never block.

SIGINT and SIGTERM are Python handlers here (rclpy's own would shut the context down
before ``close()`` can hold the robot). They only note the request, which the spin loop
checks: an exception raised from a handler can land inside rclpy's C code converting
a message (the interrupted conversion then surfaces as pybind11's "Unable to convert
call argument '0' to Python object", and the node dies with a traceback). A Python
handler only runs when the main thread is back in Python, so the executor never waits
longer than ``SIGNAL_CHECK_S``; otherwise a node on simulated time whose /clock has
stopped (the simulator ended first) would wait forever and ignore every signal.
"""

from __future__ import annotations

import gc
import signal
import sys
import time
from collections.abc import Callable, Sequence

import rclpy
from rclpy.executors import Executor, ExternalShutdownException
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.node import Node

from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.dds_profile import use_dds_profile
from spin_decoupler_ros.executors import executor_for
from spin_decoupler_ros.params import check_no_unknown_parameters, check_params_files
from spin_decoupler_ros.tools.processes import die_with_parent

SIGNAL_CHECK_S = 0.2
FLUSH_S = 0.2


class ExitRequested(Exception):
    """Raised from a callback to leave spin() cleanly (e.g. after the RL side finished)."""


def bring_up(node: Node) -> None:
    """Take a managed node to its ``start_state`` (configure, then activate, unless it
    says inactive or unconfigured: an operator or a lifecycle manager goes on); raise
    what a refused transition raised (a ParameterError names the parameter). Other
    nodes are left as they are."""
    if not isinstance(node, LifecycleNode):
        return
    target = getattr(node, "start_state", "active")
    steps = {"active": ("configure", "activate"), "inactive": ("configure",)}.get(target, ())
    for name in steps:
        if getattr(node, f"trigger_{name}")() != TransitionCallbackReturn.SUCCESS:
            error = getattr(node, "transition_error", None)
            raise error if error is not None else RuntimeError(f"{node.get_name()}: {name} failed")


class _StopRequest:
    """A signal handler that only remembers which signal asked the node to stop."""

    def __init__(self) -> None:
        self.signal: int | None = None

    def __call__(self, signum: int, frame: object) -> None:
        self.signal = signum


def run_node(node_factory: Callable[[], Node], args: list[str] | None = None) -> int:
    """Create a node, spin it until shutdown, and clean up; the exit code to return.

    A managed node is configured and activated first (``bring_up``). A node may define
    ``close()`` to release what it holds (end episodes, hold the robot) before it is
    destroyed. SIGINT and SIGTERM are handled here, not by rclpy,
    so that ``close()`` still has a live context to send its last commands with.
    """
    return run_nodes([node_factory], args)


def run_nodes(node_factories: Sequence[Callable[[], Node]], args: list[str] | None = None) -> int:
    """``run_node`` for several nodes in one process, on one executor: created and brought
    up in order, closed and destroyed in the reverse order (a node closed first can still
    reach the ones made before it: an agent holding its robot reaches the simulator).
    The ``--ros-args`` are the process's: node-keyed params files and node-prefixed
    remaps (``panda_agent:__ns:=/panda``) give each node its own."""
    die_with_parent()
    use_dds_profile()
    try:
        check_params_files(sys.argv if args is None else args)
    except ParameterError as exc:
        print(f"fatal: {exc}", file=sys.stderr, flush=True)
        return 2
    try:
        from rclpy.signals import SignalHandlerOptions

        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except ImportError:  # older rclpy: its handlers shut the context down first
        rclpy.init(args=args)
    stop = _StopRequest()
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    nodes: list[Node] = []
    executor: Executor | None = None
    code = 0
    name = "node"  # the node being started, for a fatal error's message
    try:
        for node_factory in node_factories:
            name = getattr(node_factory, "__name__", name)
            node = node_factory()
            name = node.get_name()
            nodes.append(node)
            bring_up(node)
            if not isinstance(node, LifecycleNode):  # (a managed node checks when it is configured)
                check_no_unknown_parameters(node)
        executor, why = executor_for(nodes)
        # One line either way, so a log shows which executor ran (test_executors.py).
        rclpy.logging.get_logger(name).info(f"spinning on rclpy's {type(executor).__name__}: {why}")
        for node in nodes:
            executor.add_node(node)
        # Everything made so far lives as long as the node: out of the collector's sight,
        # a full collection walks only what the loop makes (in the Panda agent: ~55k
        # set-up objects, 18-24 ms a full collection, i.e. a control period or two lost;
        # frozen, microseconds).
        gc.collect()
        gc.freeze()
        while rclpy.ok() and stop.signal is None:
            executor.spin_once(timeout_sec=SIGNAL_CHECK_S)
    except ParameterError as exc:
        rclpy.logging.get_logger(name).fatal(str(exc))
        print(f"[{name}] fatal: {exc}", file=sys.stderr, flush=True)
        code = 2
    except (KeyboardInterrupt, ExternalShutdownException, ExitRequested):
        pass
    finally:
        for node in reversed(nodes):
            close = getattr(node, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:
                    print(f"[{node.get_name()}] close failed: {exc}", file=sys.stderr, flush=True)
            if executor is not None and getattr(node, "flush_on_exit", False):
                _flush(executor)
        for node in reversed(nodes):
            node.destroy_node()
        rclpy.try_shutdown()
    return code


def _flush(executor: Executor) -> None:
    """For a node that sets ``flush_on_exit`` (an agent): run what ``close()`` left to do
    (the ended episode's result, its last status, saying it is going) for at most
    ``FLUSH_S``. A client that never hears them waits until the node's DDS lease runs
    out (20 s) (test_faults.py::test_a_reset_against_an_agent_that_left_fails_at_once)."""
    deadline = time.monotonic() + FLUSH_S
    while time.monotonic() < deadline and rclpy.ok():
        try:
            executor.spin_once(timeout_sec=0.01)
        except ExitRequested:
            continue  # (an exit timer again: the node is leaving anyway)
        except (ExternalShutdownException, KeyboardInterrupt):
            return
