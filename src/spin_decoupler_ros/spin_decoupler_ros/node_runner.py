"""The one ``main()`` shape every node of this project uses, and the executor choice.

Executors, measured here (see bench/results/step_overhead.json and shared notes): the
SingleThreadedExecutor and the EventsExecutor both serve a step in well under a
millisecond; rclpy's MultiThreadedExecutor takes ~100 ms per round trip in these
releases (ros2/rclpy#1452), so no node here uses it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import rclpy
from rclpy.context import Context
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from spin_decoupler_ros.core.errors import ParameterError

EXECUTORS = ("single_threaded", "events")


class ExitRequested(Exception):
    """Raised from a callback to leave spin() cleanly (e.g. after the RL side finished)."""


def make_executor(kind: str = "single_threaded", context: Context | None = None) -> Executor:
    """An executor by name; "events" falls back to single_threaded where rclpy lacks it (Humble, Jazzy)."""
    if kind == "events":
        try:
            from rclpy.experimental import EventsExecutor  # Kilted and newer

            return EventsExecutor(context=context)
        except ImportError:
            pass
    elif kind != "single_threaded":
        raise ParameterError(f"executor '{kind}' is not one of {', '.join(EXECUTORS)}")
    return SingleThreadedExecutor(context=context)


def run_node(node_factory: Callable[[], Node], args: list[str] | None = None) -> int:
    """Create a node, spin it until shutdown, and clean up; the exit code to return.

    A node may set ``executor_kind`` to pick its executor and define ``close()`` to
    release what it holds (end episodes, hold the robot) before it is destroyed.
    """
    rclpy.init(args=args)
    node: Node | None = None
    code = 0
    try:
        node = node_factory()
        executor = make_executor(getattr(node, "executor_kind", "single_threaded"))
        executor.add_node(node)
        executor.spin()
    except ParameterError as exc:
        name = node.get_name() if node is not None else "node"
        rclpy.logging.get_logger(name).fatal(str(exc))
        print(f"[{name}] fatal: {exc}", file=sys.stderr, flush=True)
        code = 2
    except (KeyboardInterrupt, ExternalShutdownException, ExitRequested):
        pass
    finally:
        if node is not None:
            close = getattr(node, "close", None)
            if callable(close):
                close()
            node.destroy_node()
        rclpy.try_shutdown()
    return code
