"""One command for an example: start its agent node as a process, then train beside it.

The agent and the RL node run as two OS processes talking over DDS, exactly as the
example's launch file starts them where ``ros2 launch`` exists.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.tools.paths import claim_run_dir, find_config
from spin_decoupler_ros.tools.processes import NodeProcess, ros_args


def run_example(
    *,
    description: str,
    agent_module: str,
    agent_label: str,
    train_main: Callable[[list[str]], int],
    config_name: str,
    namespace: str,
    argv: list[str] | None = None,
) -> int:
    """Parse the example's options, start its agent, wait until it runs, then train."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=None, help="training steps (default: the config's)")
    parser.add_argument("--namespace", default=namespace, help="namespace of both nodes")
    task = config_name.removesuffix(".yaml")
    parser.add_argument(
        "--run-dir",
        default="",
        help=f"run folder (default: a fresh runs/{task}/<date-time>; one holding a run is refused)",
    )
    parser.add_argument("--config", default=None, help=f"parameters YAML (default: config/{config_name})")
    parser.add_argument(
        "--timing-model",
        default=None,
        help="the agent's timing_model: none, fixed:<s>, lognormal:<median>,<p99>, replay:<steps.csv> or wall "
        "(default: the config's; docs/time_models.md)",
    )
    args = parser.parse_args(argv)
    config = Path(args.config) if args.config else find_config(config_name)
    try:
        run_dir = claim_run_dir(args.run_dir, task)
    except ParameterError as exc:
        print(f"--run-dir: {exc}", file=sys.stderr)
        return 2

    agent = NodeProcess(
        agent_module,
        ros_args(
            namespace=args.namespace,
            params_files=[config],
            params={} if args.timing_model is None else {"timing_model": args.timing_model},
        ),
        log_path=run_dir / "agent.log",
        label=agent_label,
    )
    overrides: dict[str, object] = {"run_dir": str(run_dir)}
    if args.timesteps is not None:
        overrides["total_timesteps"] = args.timesteps
    with agent:
        if not agent.wait_for_log("agent ready", timeout=30):
            print(f"the agent did not start; its log:\n{agent.log_text()}", file=sys.stderr)
            return 1
        return train_main(["train", *ros_args(namespace=args.namespace, params_files=[config], params=overrides)])
