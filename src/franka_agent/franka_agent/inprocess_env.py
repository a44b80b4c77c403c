"""The reach task as a plain in-process Gymnasium env: no ROS, no decoupling.

The same ``ArmController`` the agent node runs, the same ``ArmSim`` the mock wraps,
the same ``ReachTask``, stepped in lockstep in one process: one step is the action's
control periods, back to back. The throughput benchmark compares the decoupled
pipeline against it (the ratio is the cost of decoupling), and it makes tuning a
learner on the task quick.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from franka_agent.core.controller import DEFAULT_COMMAND_LEAD, ArmController, Command, lead_periods_for
from franka_agent.core.limits import MotionLimits, WorkspaceBox
from franka_agent.core.motion import CARTESIAN_ACCELERATION, CARTESIAN_ACCELERATION_JERK_CAPPED, MAX_EE_STEP
from franka_agent.core.profile_file import load_profile
from franka_agent.core.sim import ArmSim
from franka_agent.core.trajectory import TrajectoryPoint
from franka_agent.reach_task import ReachTask, observation_size

NS = 1_000_000_000


class InProcessReachEnv(gym.Env[np.ndarray, np.ndarray]):
    """The Panda reach task in one process (see ``ReachEnv`` for the task).

    :param agent: the agent's parameters, as in the ``panda_agent`` section of
        config/panda_reach.yaml (missing ones take the agent's defaults).
    :param task: the trainer's task parameters (``target_low``, ``target_high``,
        ``success_distance``, ``episode_steps``).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - Gymnasium's convention

    def __init__(self, agent: dict[str, Any] | None = None, task: dict[str, Any] | None = None) -> None:
        super().__init__()
        agent = agent or {}
        task = task or {}
        control_rate = float(agent.get("control_rate", 100.0))
        self.period_ns = round(NS / control_rate)
        self.rl_timestep = float(agent.get("rl_timestep", 0.1))
        profile = load_profile(str(agent.get("robot", "panda")))
        self.sim = ArmSim(profile)
        self._steps_per_tick = max(1, round(self.period_ns / NS / self.sim.timestep))
        limits = MotionLimits(
            profile,
            velocity_fraction=float(agent.get("velocity_fraction", 0.5)),
            acceleration_fraction=float(agent.get("acceleration_fraction", 0.5)),
            joint_margin=float(agent.get("joint_margin", 0.05)),
            jerk_capped=bool(agent.get("jerk_capped", False)),
        )
        box = WorkspaceBox(
            np.array(agent.get("workspace_low", profile.workspace_low), dtype=np.float64),
            np.array(agent.get("workspace_high", profile.workspace_high), dtype=np.float64),
        )
        self.controller = ArmController(
            str(agent.get("action_mode", "ee_delta")),
            limits,
            box,
            self.period_ns,
            lead_periods=lead_periods_for(float(agent.get("command_lead", DEFAULT_COMMAND_LEAD)), self.period_ns),
            trajectory_points=int(agent.get("trajectory_points", 3)),
            reset_noise=float(agent.get("reset_noise", 0.1)),
            box_margin=float(agent.get("workspace_margin", 0.02)),
            max_ee_step=float(agent.get("max_ee_step", MAX_EE_STEP)),
            max_joint_step=float(agent.get("max_joint_step", 0.15)),
            cartesian_speed=float(agent.get("cartesian_speed", 0.3)),
            cartesian_acceleration=float(
                agent.get(
                    "cartesian_acceleration",
                    CARTESIAN_ACCELERATION_JERK_CAPPED if limits.jerk_capped else CARTESIAN_ACCELERATION,
                )
            ),
        )
        self.task = ReachTask(
            task.get("target_low", profile.target_low),
            task.get("target_high", profile.target_high),
            float(task.get("success_distance", 0.02)),
            float(task.get("reward_per_metre", 10.0)),
        )
        self.max_episode_steps = int(task.get("episode_steps", 50))
        size = self.controller.action_size
        self.action_space = spaces.Box(-1.0, 1.0, (size,), dtype=np.float32)
        self.observation_space = spaces.Box(-np.inf, np.inf, (observation_size(profile.dof),), dtype=np.float32)
        self._now_ns = 0
        self._steps = 0
        self.controller.start(self.sim.q, 0)

    def _tick(self) -> None:
        """One control period: command, then simulate it."""
        command = self.controller.command(self._now_ns)
        if command is not None and not command.repeat:
            self.sim.command(_points(command), command.stamp_ns / NS)
        self.sim.step(self._steps_per_tick)
        self._now_ns += self.period_ns

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.task.draw_target(self.np_random)
        self.controller.begin_reset(int(self.np_random.integers(0, 2**31 - 1)), np.zeros(0), self.sim.q, self.sim.dq)
        for _ in range(int(15.0 * NS / self.period_ns)):
            if self.controller.reset_reached(self.sim.q, self.sim.dq):
                break
            self._tick()
        else:
            raise RuntimeError("the simulated arm did not reach its start pose within 15 s")
        self._steps = 0
        return self.task.observation(self.controller.observation(self.sim.q, self.sim.dq)), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.controller.act(np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0))
        for _ in range(max(1, round(self.rl_timestep * NS / self.period_ns))):
            self._tick()
        observation = self.task.observation(self.controller.observation(self.sim.q, self.sim.dq))
        self._steps += 1
        terminated = self.task.success(observation)
        truncated = self._steps >= self.max_episode_steps and not terminated
        return observation, self.task.reward(observation), terminated, truncated, self.task.info(observation)


def _points(command: Command) -> list[TrajectoryPoint]:
    return [TrajectoryPoint(t_ns / NS, q, v) for t_ns, (q, v) in zip(command.times_ns, command.points, strict=True)]
