"""DecoupledVecEnv: N agent nodes behind one Stable-Baselines3 VecEnv.

Each agent runs in its own namespace (``/panda0``, ``/panda1``, ...), each with its
own control loop. ``step_async`` sends every agent its action at once; ``step_wait``
spins one executor and collects the answers as they arrive, so N real-time agents
take about as long per step as one. An episode that ends is reset at once, while the
others are still being waited for, following SB3's conventions: the observation
returned is the new episode's, the finished one's is ``info["terminal_observation"]``,
and ``info["TimeLimit.truncated"]`` tells a time limit from a real end. Every info
carries that agent's LAT, ATO, clock offset, and ``agent`` (its namespace).

All N clients share one RLNode (one DDS participant, one executor, no threads); the
per-env task logic (reward, termination, reset options) is the ``DecoupledEnv``
subclass each agent gets, driven through its ``prepare_*`` / ``complete_*`` halves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn

from spin_decoupler_ros.core.errors import AgentNotFoundError
from spin_decoupler_ros.core.naming import agent_namespaces
from spin_decoupler_ros.rl.client import RLClient, RLNode
from spin_decoupler_ros.rl.env import DecoupledEnv, StepRequest
from spin_decoupler_ros.rl.step_answer import StepAnswer

__all__ = ["DecoupledVecEnv", "agent_namespaces"]


class DecoupledVecEnv(VecEnv):
    """One SB3 VecEnv over the agents in ``namespaces``.

    :param make_env: builds agent ``i``'s task env around the RLClient it is given, e.g.
        ``lambda client: ReachEnv(client=client, max_episode_steps=200)``.
    :param namespaces: the agents' namespaces, one env each.
    :param node_name: name of the RL side's node (one for all agents).
    :param ros_args: ``--ros-args`` for that node.
    :param connect_timeout: seconds to wait until every agent is discovered.
    :param client_options: more RLClient options (``reset_timeout``, ``step_timeout_margin``, ...).
    :param rl_node: an RLNode to use (e.g. one whose parameters a trainer declared); it
        stays open on ``close()``. None: the VecEnv makes and closes its own.

    ``while_acting`` (an attribute, None by default) runs in ``step_async`` once every
    agent has its command, as ``DecoupledEnv.while_acting`` does for one agent.
    """

    def __init__(
        self,
        make_env: Callable[[RLClient], DecoupledEnv],
        namespaces: Sequence[str],
        *,
        node_name: str = "rl_vec_env",
        ros_args: Sequence[str] | None = None,
        connect_timeout: float = 30.0,
        client_options: dict[str, Any] | None = None,
        rl_node: RLNode | None = None,
    ) -> None:
        if not namespaces:
            raise ValueError("DecoupledVecEnv needs at least one agent namespace")
        if len(set(namespaces)) != len(namespaces):
            raise ValueError(f"agent namespaces must differ, got {list(namespaces)}")
        self._owns_rl_node = rl_node is None
        self.rl_node = rl_node or RLNode(node_name, ros_args)
        self.clients = [
            RLClient(ns, rl_node=self.rl_node, connect=False, **(client_options or {})) for ns in namespaces
        ]
        try:
            self._connect_all(connect_timeout)
            self.envs = [make_env(client) for client in self.clients]
        except BaseException:
            self._close_clients()
            raise
        first = self.envs[0]
        super().__init__(len(self.envs), first.observation_space, first.action_space)
        self._actions: list[StepRequest] = []
        self._closed = False
        self.while_acting: Callable[[], None] | None = None

    # -- SB3 VecEnv API -----------------------------------------------------------------

    def reset(self) -> VecEnvObs:
        observations: list[np.ndarray | None] = [None] * self.num_envs
        for index in range(self.num_envs):
            self._send_reset(index, self._seeds[index], self._options[index])
        self._gather(dict.fromkeys(range(self.num_envs), "reset"), observations)
        self._reset_seeds()
        self._reset_options()
        return np.stack(observations)  # type: ignore[arg-type]

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = [env.prepare_step(action) for env, action in zip(self.envs, actions, strict=True)]
        for client, request in zip(self.clients, self._actions, strict=True):
            client.channel.send_step(request.action, request.duration, request.then_action)
        if self.while_acting is not None:
            try:
                self.while_acting()
            except BaseException:
                for client in self.clients:  # their answers would arrive into the next step
                    client.channel.cancel_wait()
                raise

    def step_wait(self) -> VecEnvStepReturn:
        n = self.num_envs
        observations: list[np.ndarray | None] = [None] * n
        rewards = np.zeros(n, dtype=np.float32)
        dones = np.zeros(n, dtype=bool)
        infos: list[dict[str, Any]] = [{} for _ in range(n)]

        def on_step(index: int, answer: StepAnswer) -> str | None:
            request = self._actions[index]
            obs, reward, terminated, truncated, info = self.envs[index].complete_step(
                request.action, request.duration, answer
            )
            info["TimeLimit.truncated"] = truncated and not terminated
            rewards[index], dones[index], infos[index] = reward, terminated or truncated, info
            if not dones[index]:
                observations[index] = obs
                return None
            info["terminal_observation"] = obs
            self._send_reset(index, None, None)  # while the others are still running
            return "reset"

        self._gather(dict.fromkeys(range(n), "step"), observations, on_step)
        return np.stack(observations), rewards, dones, infos  # type: ignore[arg-type]

    def close(self) -> None:
        """Finish every agent's episode (they hold) and release the node. Idempotent."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self._close_clients()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(self.envs[i], attr_name) for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for i in self._get_indices(indices):
            setattr(self.envs[i], attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **kwargs: Any
    ) -> list[Any]:
        return [getattr(self.envs[i], method_name)(*method_args, **kwargs) for i in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [isinstance(self.envs[i], wrapper_class) for i in self._get_indices(indices)]

    # -- internals ----------------------------------------------------------------------

    def _connect_all(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not all(client.channel.server_ready() for client in self.clients):
            if time.monotonic() >= deadline:
                missing = [c.channel.agent_name for c in self.clients if not c.channel.server_ready()]
                raise AgentNotFoundError(
                    f"no agent at {', '.join(missing)} after {timeout:g} s: are their nodes running, in this "
                    "ROS_DOMAIN_ID, with the same discovery range?"
                )
            self.rl_node.spin_once(0.05)

    def _send_reset(self, index: int, seed: int | None, options: dict[str, Any] | None) -> None:
        agent_seed, reset_options = self.envs[index].prepare_reset(seed, options or None)
        self.clients[index].channel.send_reset(agent_seed, reset_options)

    def _gather(
        self,
        waiting: dict[int, str],
        observations: list[np.ndarray | None],
        on_step: Callable[[int, StepAnswer], str | None] | None = None,
    ) -> None:
        """Spin until every agent in ``waiting`` (index -> "step" or "reset") has answered.
        A reset's observation goes into ``observations`` (its info into ``reset_infos``);
        a step's answer goes to ``on_step``, which may ask to wait on for that agent's reset."""
        deadlines = {index: self._deadline(index, kind) for index, kind in waiting.items()}  # (at, timeout)
        for index in waiting:
            self.clients[index].channel.listen()
        try:
            while waiting:
                for index in list(waiting):
                    answer = self.clients[index].channel.poll()  # raises the agent's error
                    if answer is None:
                        at, timeout = deadlines[index]
                        if time.monotonic() > at:
                            raise self.clients[index].timed_out(waiting[index], timeout)
                        continue
                    if waiting[index] == "reset":
                        observations[index], self.reset_infos[index] = self.envs[index].complete_reset(answer)
                        del waiting[index]
                    elif on_step is not None and on_step(index, answer) == "reset":
                        waiting[index] = "reset"
                        deadlines[index] = self._deadline(index, "reset")
                    else:
                        del waiting[index]
                if waiting:
                    self.rl_node.spin_once(0.01)
        except BaseException:
            for index in waiting:  # the others' answers would arrive into a failed step
                self.clients[index].channel.cancel_wait()
            raise

    def _deadline(self, index: int, kind: str) -> tuple[float, float]:
        client = self.clients[index]
        timeout = client.reset_timeout if kind == "reset" else client.step_timeout(self._actions[index].duration)
        return time.monotonic() + timeout, timeout

    def _close_clients(self) -> None:
        try:
            for client in self.clients:
                client.close()
        finally:
            if self._owns_rl_node:
                self.rl_node.close()
