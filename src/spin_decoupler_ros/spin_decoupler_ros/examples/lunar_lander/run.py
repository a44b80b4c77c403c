"""One command for the LunarLander example: start the agent node, train, report.

    ./ws exec python -m spin_decoupler_ros.examples.lunar_lander.run [--timesteps N]

The agent and the RL node run as two OS processes talking over DDS, exactly as
``launch/lunar_lander.launch.py`` starts them where ``ros2 launch`` exists.
"""

from __future__ import annotations

import sys

from spin_decoupler_ros.examples.lunar_lander import train
from spin_decoupler_ros.tools.example_runner import run_example


def main(argv: list[str] | None = None) -> int:
    return run_example(
        description=__doc__ or "",
        agent_module="spin_decoupler_ros.examples.lunar_lander.agent",
        agent_label="lunar_lander_agent",
        train_main=train.main,
        config_name="lunar_lander.yaml",
        namespace="/lander",
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
