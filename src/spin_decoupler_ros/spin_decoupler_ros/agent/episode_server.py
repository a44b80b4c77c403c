"""The Episode action server: one goal per episode. A goal is accepted or refused by
name, begins its episode (the reset hook) at once or where the learner's think time
ends, and is EXECUTING until its episode ends; its result goes out then.

Nothing here waits: ``execute_goal`` marks a goal EXECUTING without starting a coroutine,
and ``report_goal`` runs its execute callback once, when the episode ends. The two use
rclpy's goal handle below its public API (``_update_state``; rclpy offers no way to keep
a goal executing without a coroutine), and test_decoupler.py and test_executors.py hold
what they do on every rclpy the project runs on.
"""

from __future__ import annotations

import numpy as np
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

from spin_decoupler_msgs.action import Episode
from spin_decoupler_msgs.msg import AgentStatus
from spin_decoupler_ros.agent.agent_base import AgentBase, EpisodeHandle
from spin_decoupler_ros.core.auth import KEY_BYTES, tags_match, takeover_proof
from spin_decoupler_ros.core.protocol import AgentState, CommandRejected

# How long a finished episode's goal is kept for its result (rclpy drops it within twice
# this). Each status message of the action lists every kept goal and each client converts
# the whole list on every goal change, so the list must stay short however short the
# episodes. The client asks for the result as soon as its goal is accepted, long before
# the episode ends. (test_decoupler.py::test_finished_episodes_leave_the_action_status_soon)
RESULT_KEPT_S = 1  # (an int: rclpy types it so)


def execute_goal(goal_handle: ServerGoalHandle) -> None:
    """Mark an accepted goal EXECUTING without starting its execute callback.

    ``ServerGoalHandle.execute`` would start it as a coroutine that waits out the whole
    episode, and executors resume a waiting coroutine on every wake-up: rclpy's
    EventsExecutor back to back, a core's worth for as long as the episode runs (its
    ``IterateTask``). The episode's end calls the callback instead (``report_goal``),
    which returns at once (test_executors.py::test_an_agent_waiting_for_its_learner_takes_no_cpu).
    """
    if not goal_handle.is_cancel_requested:  # (as ServerGoalHandle.execute does)
        goal_handle._update_state(_rclpy.GoalEvent.EXECUTE)


def report_goal(action_server: ActionServer, goal_handle: ServerGoalHandle, result: Episode.Result) -> None:
    """End a goal that ``execute_goal`` marked EXECUTING with ``result``: its execute
    callback runs once, from the executor, and returns it."""

    def finish(handle: ServerGoalHandle) -> Episode.Result:
        if result.outcome == Episode.Result.CANCELED and handle.is_cancel_requested:
            handle.canceled()
        elif result.outcome in (Episode.Result.ENDED, Episode.Result.FINISHED):
            handle.succeed()
        else:
            handle.abort()
        return result

    action_server.notify_execute(goal_handle, finish)


def unexpected_execute(goal_handle: ServerGoalHandle) -> Episode.Result:
    """The action server's default execute callback: never called (``report_goal`` gives
    each goal its own), so a goal that gets here is aborted rather than left running."""
    goal_handle.abort()
    return Episode.Result(outcome=Episode.Result.ABORTED, error="the agent executed a goal it did not run")


class EpisodeServer(AgentBase):
    """Serves the Episode action: accepts, begins and ends episodes."""

    def _make_episode_server(self) -> None:
        """The ``episode`` action server (at configure)."""
        self._episodes = {}
        self._action_server = ActionServer(
            self,
            Episode,
            "episode",
            execute_callback=unexpected_execute,
            goal_callback=self._on_goal,
            handle_accepted_callback=self._on_goal_accepted,
            cancel_callback=self._on_cancel,
            result_timeout=RESULT_KEPT_S,
        )

    def _on_goal(self, goal: Episode.Goal) -> GoalResponse:
        if not self._active:
            reason: str | None = self._inactive_reason()
        elif self._stopped_reason is not None:
            reason = self._stopped_reason
        elif len(goal.key) != KEY_BYTES:
            reason = (
                f"the goal carries a key of {len(goal.key)} bytes: an episode needs a fresh {KEY_BYTES}-byte key, "
                "with which its step commands are signed (spin_decoupler_ros/core/auth.py)"
            )
        else:
            reason = self._protocol.goal_rejection(goal.client_id, self._owns_running(goal))
        if reason is None:
            return GoalResponse.ACCEPT
        self._rejected += 1
        self._say_refusal(f"rejected an episode from '{goal.client_id}': {reason}")
        self._publish_status(f"rejected an episode from '{goal.client_id}': {reason}")
        return GoalResponse.REJECT

    def _owns_running(self, goal: Episode.Goal) -> bool:
        """Whether ``goal`` proves it comes from the client of the running episode."""
        episode = self._protocol.episode
        if episode is None:
            return False
        return tags_match(takeover_proof(episode.key, bytes(goal.key)), bytes(goal.takeover_proof))

    def _inactive_reason(self) -> str:
        # (the agent's own record of its lifecycle state: rclpy's is private)
        state = "inactive" if self._configured else "unconfigured"
        return f"the agent is not active (lifecycle state '{state}'): activate it to serve episodes"

    def _on_goal_accepted(self, goal_handle: ServerGoalHandle) -> None:
        now = self.now_ns()
        if not self._world.may_start(now):
            # The previous action runs on for the learner's think time, then the reset
            # begins (at a tick: _control_step), wherever the wall clock stood when it came.
            if self._waiting_goal is not None:
                self._abort_waiting_goal("a newer episode came before it began")
            self._waiting_goal = goal_handle
            return
        self._begin_episode(goal_handle, now)
        if self._waits_on_clock and self._protocol.state is AgentState.AFTER_RESET:
            # The world may be waiting for a command: the reset's first one lets it go on
            # (the reset observation is a tick's, as always).
            self._call_hook("reset_done", self.reset_done)
            self._commanded(now)
        if self._self_clocked:
            # The reset observation at once, in this callback, as a short step's is
            # (_on_step_command): the learner waits for it.
            self._simulate()

    def _abort_waiting_goal(self, reason: str) -> None:
        """End the goal that waits for the think time to run out, unbegun."""
        handle, self._waiting_goal = self._waiting_goal, None
        if handle is None:
            return
        execute_goal(handle)
        report_goal(self._action_server, handle, Episode.Result(outcome=Episode.Result.ABORTED, steps=0, error=reason))

    def _begin_episode(self, goal_handle: ServerGoalHandle, now: int) -> None:
        """Begin the accepted goal's episode at ``now``: the reset hook starts."""
        goal: Episode.Goal = goal_handle.request
        episode_id = bytes(goal_handle.goal_id.uuid)
        previous = self._protocol.episode
        owner = self._owns_running(goal)
        try:
            self._protocol.begin_episode(episode_id, goal.client_id, now, bytes(goal.key), owner)
        except CommandRejected as exc:  # another client got in between accept and here
            self._episodes[episode_id] = EpisodeHandle(goal_handle, now)
            execute_goal(goal_handle)
            self._complete(episode_id, Episode.Result.ABORTED, 0, str(exc))
            return
        self._current_step = None
        self._waiting_command = None
        self._episodes[episode_id] = EpisodeHandle(goal_handle, now)
        execute_goal(goal_handle)
        self._set_status(AgentStatus.RUNNING, "episode running", goal.client_id)
        seed = int(goal.seed) if goal.has_seed else None
        self._world.new_episode(seed)
        self._resume_world()
        options = np.asarray(goal.reset_options, dtype=np.float64)
        self._call_hook("reset_workspace", self.reset_workspace, seed, options)
        if previous is not None:
            # The replaced episode's result after that: only its client's logs wait for it
            # (test_faults.py::test_a_new_reset_ends_the_clients_running_episode).
            same_client = owner and previous.client_id == goal.client_id
            self._complete(
                previous.episode_id,
                Episode.Result.ENDED if same_client else Episode.Result.WATCHDOG,
                previous.steps,
                "" if same_client else f"client went silent; '{goal.client_id}' took over",
            )

    def _on_cancel(self, goal_handle: ServerGoalHandle) -> CancelResponse:
        """A cancel request carries no proof of who sent it (any process can name the
        running goal, which the action's status topic shows): the running episode is
        not canceled; its client ends it with FINISH or a new reset, both signed. A goal
        that is over anyway may be canceled."""
        episode = self._protocol.episode
        if episode is not None and episode.episode_id == bytes(goal_handle.goal_id.uuid):
            self._drop_command("a cancel of the running episode (a cancel carries no proof of its sender)")
            return CancelResponse.REJECT
        return CancelResponse.ACCEPT

    def _finish(self, episode_id: bytes) -> None:
        try:
            ended = self._protocol.finish(episode_id)
        except CommandRejected as exc:
            self._reject_step(episode_id, 0, str(exc))
            return
        self._current_step = None
        self._complete(ended.episode_id, Episode.Result.FINISHED, ended.steps, "")
        self._set_status(AgentStatus.IDLE, f"client '{ended.client_id}' finished; holding, waiting for a client", "")
        self._hold_safely()
        if self.params.exit_on_finish:
            self.get_logger().info("the RL side finished and exit_on_finish is set: exiting")
            self._exit_timer = self.create_timer(0.2, self._exit)

    def _complete(self, episode_id: bytes, outcome: int, steps: int, error: str, *, needs_person: bool = False) -> None:
        handle = self._episodes.pop(episode_id, None)
        if handle is None:  # (over already)
            return
        result = Episode.Result(outcome=outcome, steps=steps, error=error, needs_person=needs_person)
        report_goal(self._action_server, handle.goal_handle, result)

    def _end_episode(self, outcome: int, reason: str, *, needs_person: bool = False) -> None:
        self._abort_waiting_goal(reason)
        ended = self._protocol.end_episode()
        self._current_step = None
        self._waiting_command = None
        if ended is not None:
            self._complete(ended.episode_id, outcome, ended.steps, reason, needs_person=needs_person)
