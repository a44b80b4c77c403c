"""The parameters every agent has, declared and checked in one place, and what an agent
takes and gives (its spaces). A bad value is refused by name before anything is made
(test_lifecycle.py, test_decoupler.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rclpy.node import Node

from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.core.think_time import TimingModel
from spin_decoupler_ros.core.timing import seconds_to_ns
from spin_decoupler_ros.params import declare_bool, declare_float, declare_int, declare_str

# Lifecycle states an agent can be brought to at start (parameter start_state).
START_STATES = ("active", "inactive", "unconfigured")


@dataclass(frozen=True)
class AgentSpaces:
    """What an agent takes and gives: its action box and its observation's size."""

    action_low: Sequence[float] | np.ndarray
    action_high: Sequence[float] | np.ndarray
    observation_size: int
    observation_names: Sequence[str] = ()


@dataclass(frozen=True)
class AgentParameters:
    """The base parameters, validated (see ``declare_agent_parameters``)."""

    rl_timestep_ns: int
    control_period_ns: int
    watchdog_ns: int
    max_step_duration_ns: int
    clip_actions: bool
    exit_on_finish: bool
    realtime_priority: int
    period_log: str
    timing_model: TimingModel


def declare_agent_parameters(node: Node) -> AgentParameters:
    """Declare and check the parameters every agent has; raise ParameterError naming a bad one."""
    rl_timestep = declare_float(
        node, "rl_timestep", 0.1, "default duration of one RL step's action", unit="s", low=1e-4, high=60.0
    )
    control_rate = declare_float(node, "control_rate", 100.0, "control loop frequency", unit="Hz", low=1.0, high=5000.0)
    period = 1.0 / control_rate
    if rl_timestep <= period:
        raise ParameterError(
            f"parameter 'rl_timestep' = {rl_timestep:g} s must exceed the control period "
            f"1/control_rate = {period:g} s; allowed: rl_timestep > {period:g} s (or raise control_rate)"
        )
    watchdog = declare_float(
        node,
        "watchdog_timeout",
        0.0,
        "hold position when the RL side is silent this long after an observation; 0 = 5 RL timesteps, at least 0.5 s",
        unit="s",
        low=0.0,
        high=3600.0,
    )
    if watchdog == 0.0:
        watchdog = max(0.5, 5.0 * rl_timestep)
    elif watchdog <= rl_timestep:
        raise ParameterError(
            f"parameter 'watchdog_timeout' = {watchdog:g} s must exceed rl_timestep ({rl_timestep:g} s)"
        )
    max_duration = declare_float(
        node, "max_step_duration", 10.0, "longest action duration a step may request", unit="s", low=1e-4, high=3600.0
    )
    if max_duration < rl_timestep:
        raise ParameterError(
            f"parameter 'max_step_duration' = {max_duration:g} s is below rl_timestep ({rl_timestep:g} s)"
        )
    model_text = declare_str(
        node,
        "timing_model",
        "wall",
        "how long the world runs on while the learner thinks: none, fixed:<s>, lognormal:<median>,<p99>, "
        "replay:<steps.csv> or wall (docs/time_models.md)",
    )
    try:
        timing_model = TimingModel.parse(model_text)
    except ParameterError as error:
        raise ParameterError(f"parameter 'timing_model': {error}") from None
    return AgentParameters(
        timing_model=timing_model,
        rl_timestep_ns=seconds_to_ns(rl_timestep),
        control_period_ns=seconds_to_ns(period),
        watchdog_ns=seconds_to_ns(watchdog),
        max_step_duration_ns=seconds_to_ns(max_duration),
        clip_actions=declare_bool(
            node, "clip_actions", True, "clip finite out-of-range actions (true) or reject them (false)"
        ),
        exit_on_finish=declare_bool(node, "exit_on_finish", False, "exit the node when the RL side finishes"),
        realtime_priority=declare_int(
            node,
            "realtime_priority",
            0,
            "SCHED_FIFO priority for the control loop thread; 0 keeps normal scheduling",
            low=0,
            high=99,
        ),
        period_log=declare_str(
            node,
            "period_log",
            "",
            "write every control period to this .npy file at exit, rows of (tick that ended it, length) in ns "
            "on the agent's clock; for benchmarks",
        ),
    )
