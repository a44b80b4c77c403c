"""An RL side that resets and then steps one fixed action forever: a learner to kill or
freeze in tests. Prints "stepping" once the first step is answered.

    python stepping_client.py [namespace] [action ...]
"""

from __future__ import annotations

import sys

from spin_decoupler_ros.rl import RLClient


def main() -> int:
    namespace = sys.argv[1] if len(sys.argv) > 1 else ""
    action = [float(x) for x in sys.argv[2:]] or [1.0]
    client = RLClient(namespace, connect_timeout=30)
    client.reset(seed=0)
    client.step(action)
    print("stepping", flush=True)
    while True:
        client.step(action)


if __name__ == "__main__":
    sys.exit(main())
