"""One command for the first-order plant example: start the agent node, train, report.

    ./ws exec python -m spin_decoupler_ros.examples.first_order_plant.run [--timesteps N]

The agent and the RL node run as two OS processes talking over DDS, exactly as
``launch/first_order_plant.launch.py`` starts them where ``ros2 launch`` exists.
"""

from __future__ import annotations

import sys

from spin_decoupler_ros.examples.first_order_plant import train
from spin_decoupler_ros.tools.example_runner import run_example


def main(argv: list[str] | None = None) -> int:
    return run_example(
        description=__doc__ or "",
        agent_module="spin_decoupler_ros.examples.first_order_plant.agent",
        agent_label="first_order_plant_agent",
        train_main=train.main,
        config_name="first_order_plant.yaml",
        namespace="/plant",
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
