"""A simulated Panda in one process: the MuJoCo mock and the Panda agent on one executor.

    python -m franka_agent.sim_robot --ros-args --params-file config/panda_reach.yaml \\
        --params-file <node-keyed values> -r panda_agent:__ns:=/panda

The same two nodes as ``mock_hardware`` and ``panda_agent``, talking over the same
topics, but without a process switch between them: in simulation each control tick is
a chain (the mock's state, the agent's command, the mock's physics) that runs on one
core instead of waiting for two processes to be scheduled beside the learner. Under a
timing model other than ``wall`` the world waits for the agent, so the layout does not
change the run
(test_timing_models.py::test_a_seeded_panda_training_run_repeats_its_steps_csv_in_one_process_or_two);
under ``wall``, a simulated arm shares its process's time with its agent, which a real
one does not: keep them apart there (``robots.start_mock_robots``).

Each node takes its own values from a params file keyed by its full name, and its
namespace from a node-prefixed remap (``robots.sim_robot_args`` writes both). The agent
is closed before the mock, so its last commands still reach the simulated arm.
"""

from __future__ import annotations

import sys

from franka_agent.mock.mock_hardware_node import MockArmHardware
from franka_agent.panda_agent_node import PandaAgent
from spin_decoupler_ros.node_runner import run_nodes


def main(args: list[str] | None = None) -> int:
    return run_nodes([MockArmHardware, PandaAgent], args)


if __name__ == "__main__":
    sys.exit(main())
