"""One command for the first-order plant example: start the agent node, train, report.

    ./ws exec python -m spin_decoupler_ros.examples.first_order_plant.run [--timesteps N]

The agent and the RL node run as two OS processes talking over DDS, exactly as
``launch/first_order_plant.launch.py`` starts them where ``ros2 launch`` exists.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spin_decoupler_ros.examples.first_order_plant import train
from spin_decoupler_ros.tools.paths import find_config
from spin_decoupler_ros.tools.processes import NodeProcess, ros_args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=None, help="training steps (default: the config's)")
    parser.add_argument("--namespace", default="/plant", help="namespace of both nodes")
    parser.add_argument("--run-dir", default="runs/first_order_plant")
    parser.add_argument("--config", default=None, help="parameters YAML (default: config/first_order_plant.yaml)")
    args = parser.parse_args(argv)
    config = Path(args.config) if args.config else find_config("first_order_plant.yaml")
    run_dir = Path(args.run_dir)

    agent = NodeProcess(
        "spin_decoupler_ros.examples.first_order_plant.agent",
        ros_args(namespace=args.namespace, params_files=[config]),
        log_path=run_dir / "agent.log",
        label="first_order_plant_agent",
    )
    overrides: dict[str, object] = {"run_dir": str(run_dir)}
    if args.timesteps is not None:
        overrides["total_timesteps"] = args.timesteps
    with agent:
        if not agent.wait_for_log("agent ready", timeout=30):
            print(f"the agent did not start; its log:\n{agent.log_text()}", file=sys.stderr)
            return 1
        return train.main(["train", *ros_args(namespace=args.namespace, params_files=[config], params=overrides)])


if __name__ == "__main__":
    sys.exit(main())
