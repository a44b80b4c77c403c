"""The agent's control loop while Stable-Baselines3 trains in the RL process.

For each control rate (100 Hz, 500 Hz): the MuJoCo mock at real time, the Panda agent
on wall time (SCHED_FIFO when the machine allows it, as on a robot's PREEMPT_RT
computer), and in this process SAC training on the reach task through the decoupler,
for ``--seconds``. The agent records every control period; from those while the
learner runs (not while its process starts up): mean, p99, the largest deviation from
the nominal period, and the share of periods more than 10% late. From the training's
step answers: LAT minus the requested duration (LAT holds the learner's think time
between steps, as it should), and the executed duration minus the requested one (the
agent's own timing error). The floor, what the machine's timers give any process: a
bare Python loop sleeping to the same period at the same priority, no ROS, alone
before each rate and beside the agent for the whole run.

    ./ws bench control_loop [--seconds 180]

Writes bench/results/control_loop.json.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, reach_env, write_result

TIMER_FLOOR = """
import os, sys, time
import numpy as np
period, seconds, priority = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
if priority:
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except PermissionError:
        pass
ticks = np.empty(int(seconds / period))
due = time.monotonic() + period
for i in range(ticks.size):
    delay = due - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    ticks[i] = time.monotonic()
    due += period
np.save(sys.stdout.buffer, np.diff(ticks))
"""


def start_timer_floor(rate: float, seconds: float, priority: int) -> subprocess.Popen[bytes]:
    """A bare sleep loop at ``rate`` in its own process: the lateness no control loop
    here can beat (alone, or beside the same load as the agent)."""
    return subprocess.Popen(
        [sys.executable, "-c", TIMER_FLOOR, str(1.0 / rate), str(seconds), str(priority)],
        stdout=subprocess.PIPE,
    )


def timer_floor(rate: float, seconds: float, priority: int) -> dict[str, float]:
    """The bare sleep loop's periods, alone on the machine."""
    return floor_figures(start_timer_floor(rate, seconds, priority), rate, seconds)


def floor_figures(loop: subprocess.Popen[bytes], rate: float, seconds: float) -> dict[str, float]:
    out, _ = loop.communicate()
    if loop.returncode != 0:
        raise RuntimeError(f"the timer floor loop failed (exit {loop.returncode})")
    periods = np.load(io.BytesIO(out)) * 1e3
    nominal = 1e3 / rate
    return {
        "seconds": seconds,
        "late_fraction": round(float(np.mean(periods > 1.1 * nominal)), 6),
        "period_p99_ms": round(float(np.percentile(periods, 99)), 4),
        "period_max_ms": round(float(periods.max()), 4),
    }


def measure(
    rate: float, seconds: float, priority: int, mock_nice: int, state_rate: float, logs: Path
) -> dict[str, object]:
    import torch
    import yaml
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback

    from spin_decoupler_ros.rl.training import FreezeGarbageCollector
    from spin_decoupler_ros.tools.paths import find_config
    from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup, ros_args

    config = find_config("panda_reach.yaml", package="franka_agent")
    task = yaml.safe_load(config.read_text())["/**/panda_trainer"]["ros__parameters"]
    period_log = logs / f"control_loop_{rate:g}hz_periods.npy"
    period_log.unlink(missing_ok=True)
    agent_params: dict[str, object] = {
        "use_sim_time": False,
        "control_rate": rate,
        "realtime_priority": priority,
        "period_log": str(period_log.resolve()),
    }
    if rate > 250:
        agent_params["acceleration_fraction"] = 250.0 / rate  # jerk-safe at this rate
    # seq, lat, executed duration, requested, ato, RL wall time of the answer, round trip
    answers: list[tuple[float, ...]] = []

    class Record(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "lat" in info:
                    answers.append(
                        (
                            info["seq"],
                            info["lat"],
                            info["duration"],
                            info["requested_duration"],
                            info["ato"],
                            info["wall_time"],
                            info["round_trip"],
                        )
                    )
            return True

    with ProcessGroup() as group:
        mock = group.start(
            NodeProcess(
                "franka_agent.mock.mock_hardware_node",
                ros_args(
                    params_files=[config], params={"speed_factor": 1.0, "lockstep": False, "publish_rate": state_rate}
                ),
                log_path=logs / f"control_loop_{rate:g}hz_mock.log",
                prefix=["nice", "-n", str(mock_nice)] if mock_nice else [],
            )
        )
        agent = group.start(
            NodeProcess(
                "franka_agent.panda_agent_node",
                ros_args(params_files=[config], params=agent_params),
                log_path=logs / f"control_loop_{rate:g}hz_agent.log",
            )
        )
        assert mock.wait_for_log("mock arm ready", 60) and agent.wait_for_log("agent ready", 60)
        torch.set_num_threads(1)
        env = reach_env("", task)
        # Updates between episodes (train_freq per episode): within an episode the
        # learner only runs its policy, so LAT measures the pipeline, not backprop.
        model = SAC(
            "MlpPolicy",
            env,
            learning_starts=500,
            train_freq=(1, "episode"),
            gradient_steps=-1,
            policy_kwargs={"net_arch": [64, 64]},
            seed=0,
            verbose=0,
        )
        deadline = time.monotonic() + seconds
        # The same bare loop as the floor, beside the agent for the whole run: what the
        # machine's timers give a real-time process under this very load.
        floor_beside = start_timer_floor(rate, seconds, priority)

        class Stop(BaseCallback):
            def _on_step(self) -> bool:
                return time.monotonic() < deadline

        learning_start = time.time_ns()  # the agent's clock is the wall's here
        model.learn(total_timesteps=10**9, callback=[Record(), Stop(), FreezeGarbageCollector()])
        learning_end = time.time_ns()
        env.close()
        floor_beside_figures = floor_figures(floor_beside, rate, seconds)
        agent.stop()  # SIGINT: the agent writes its period log on the way out
    # Only the periods while the learner ran (the benchmark's subject), not those while
    # the RL process was still importing torch and building its model.
    ticks, lengths = np.load(period_log).T
    in_window = (ticks - lengths >= learning_start) & (ticks <= learning_end)
    periods = lengths[in_window].astype(np.float64) / 1e6  # ms
    nominal = 1e3 / rate
    data = np.array(answers)
    # LAT of step n is the duration of action n-1. Step 1's previous "action" is the
    # reset's hold, which has no requested duration (it lasts until the learner sends
    # step 1, here after training between episodes): it is reported on its own.
    after_action = data[data[:, 0] >= 2]
    first = data[data[:, 0] == 1]
    lat_error = (after_action[:, 1] - after_action[:, 3]) * 1e3
    executed_error = np.abs(data[:, 2] - data[:, 3]) * 1e3
    np.save(logs / f"control_loop_{rate:g}hz_steps.npy", data)
    log_text = agent.log_text()
    return {
        "periods": int(periods.size),
        "periods_before_learning": int(np.count_nonzero(ticks - lengths < learning_start)),
        "period_mean_ms": round(float(periods.mean()), 4),
        "period_p99_ms": round(float(np.percentile(periods, 99)), 4),
        "period_max_ms": round(float(periods.max()), 4),
        "max_deviation_ms": round(float(np.max(np.abs(periods - nominal))), 4),
        "late_fraction": round(float(np.mean(periods > 1.1 * nominal)), 6),
        "lat_error_p99_ms": round(float(np.percentile(np.abs(lat_error), 99)), 3),
        "lat_minus_requested_median_ms": round(float(np.median(lat_error)), 3),
        "executed_duration_error_p99_ms": round(float(np.percentile(executed_error, 99)), 3),
        "lat_gap_parts_ms": lat_gap_parts(data),
        "first_step_lat_median_ms": round(float(np.median(first[:, 1])) * 1e3, 3) if first.size else None,
        "steps": int(data.shape[0]),
        "realtime_priority": priority if "SCHED_FIFO" in log_text else 0,
        "timer_floor_beside_load": floor_beside_figures,
    }


def lat_gap_parts(data: np.ndarray) -> dict[str, dict[str, float]]:
    """Where the time between one observation and the next action's start goes.

    LAT of step n is the executed duration of action n-1 plus this gap: the answer's
    trip to the RL side, the learner's think time, the command's trip to the agent.
    All on one machine's wall clock (the agent runs on wall time here)."""
    seq, _, duration, _, ato, wall, round_trip = data.T
    follows = np.flatnonzero((seq[1:] == seq[:-1] + 1) & (seq[1:] >= 2)) + 1  # step n after n-1
    previous = follows - 1
    sent = wall[follows] - round_trip[follows]
    started = ato[follows] - duration[follows]
    parts = {
        "agent_to_rl": wall[previous] - ato[previous],
        "rl_think": sent - wall[previous],
        "rl_to_agent": started - sent,
        "gap": started - ato[previous],
    }
    return {
        name: {"median": round(float(np.median(v)) * 1e3, 3), "p99": round(float(np.percentile(v, 99)) * 1e3, 3)}
        for name, v in parts.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=180.0, help="measuring time per rate")
    parser.add_argument("--priority", type=int, default=80, help="agent SCHED_FIFO priority (0: normal)")
    parser.add_argument("--rates", type=float, nargs="+", default=[100.0, 500.0], help="control rates (Hz)")
    parser.add_argument("--floor-seconds", type=float, default=60.0, help="bare timer loop before each rate (0: skip)")
    parser.add_argument("--mock-nice", type=int, default=0, help="niceness of the mock (the robot's own computer)")
    parser.add_argument(
        "--state-rate", type=float, default=1000.0, help="/franka/joint_states rate (Hz; 1 kHz on the robot)"
    )
    args = parser.parse_args()
    isolate_dds()
    logs = Path("log/bench")
    logs.mkdir(parents=True, exist_ok=True)
    result: dict[str, object] = {}
    for rate in args.rates:
        floor = timer_floor(rate, args.floor_seconds, args.priority) if args.floor_seconds > 0 else None
        figures = measure(rate, args.seconds, args.priority, args.mock_nice, args.state_rate, logs)
        figures["timer_floor"] = floor
        print(f"{rate:g} Hz: {figures}", flush=True)
        result[f"{rate:g}hz"] = figures
    result["setup"] = {
        "seconds_per_rate": args.seconds,
        "learner": "SB3 SAC [64, 64], torch 1 thread, updates between episodes, reach task",
        "robot": "MuJoCo mock at real time (no lockstep), agent on wall time",
        "mock_nice": args.mock_nice,
        "joint_state_rate_hz": args.state_rate,
        "cpus": os.cpu_count(),
    }
    write_result("control_loop", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
