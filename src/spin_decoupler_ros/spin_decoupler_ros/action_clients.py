"""What every rclpy action client of this project needs, whichever package owns it.

``drop_orphaned_futures``: some rclpy releases (Kilted's 9.1.x among them) register a
goal's future twice in ``ActionClient`` and remove it once (ros2/rclpy#1532), and every
callback of the client walks that list. A client that sends goal after goal (the RL
side: one per episode; the Panda agent: one per error recovery) would make each
callback slower than the last and memory grow for as long as it runs. Held by
test_decoupler.py::test_many_episodes_leave_nothing_behind_in_the_client and
test_robot_stops.py::test_recoveries_by_action_leave_nothing_behind_in_the_agent.
"""

from __future__ import annotations

from rclpy.action import ActionClient

PENDING_REQUESTS = ("_pending_goal_requests", "_pending_cancel_requests", "_pending_result_requests")


def drop_orphaned_futures(action_client: ActionClient) -> None:
    """Forget the futures ``action_client`` keeps for requests no longer pending; call
    it after each ``send_goal_async``. Without the bug there is nothing to drop."""
    futures = getattr(action_client, "_futures", None)
    if not isinstance(futures, list):
        return
    pending = (getattr(action_client, name, {}) for name in PENDING_REQUESTS)
    live = {id(future) for requests in pending for future in requests.values()}
    futures[:] = [future for future in futures if id(future) in live]
