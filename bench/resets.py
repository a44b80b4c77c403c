"""Resets from wherever adversarial actions leave the arm, through the agent's control
logic (ArmController) and the MuJoCo physics the mock runs (ArmSim), without ROS.

Each trial pushes the arm with full-scale random actions (a new sign pattern now and
then) for 2-15 s, which drives it into the box's faces and corners and, with
joint_delta, into postures far from home; then it resets to home plus the usual noise.
Reported per action mode: reset durations, resets that missed the agent's 15 s
reset_timeout, the commands the mock's check would count as violations, and the time
one command takes to compute (a reset's route search is spread over ticks).

    ./ws bench resets [--trials 500] [--seed 3]

Writes bench/results/resets.json. Target: no reset over 15 s, no violation.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import summary_ms, write_result
from franka_agent.core.command_check import command_violations
from franka_agent.core.controller import ArmController
from franka_agent.core.kinematics import ArmKinematics
from franka_agent.core.limits import MotionLimits, WorkspaceBox
from franka_agent.core.profile_file import load_profile
from franka_agent.core.sim import ArmSim
from franka_agent.inprocess_env import _points

PANDA = load_profile("panda")

BOX = WorkspaceBox(np.array([0.2, -0.45, 0.05]), np.array([0.75, 0.45, 0.8]))  # config/panda_reach.yaml
LIMITS = MotionLimits(PANDA, velocity_fraction=0.5, acceleration_fraction=0.8, joint_margin=0.05)
PERIOD_NS = 10_000_000  # 100 Hz
TICKS_PER_STEP = 10  # rl_timestep 0.1 s
RESET_TIMEOUT_TICKS = 1500  # reset_timeout 15 s


def run_mode(mode: str, trials: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    sim = ArmSim(PANDA)
    kinematics = ArmKinematics(PANDA)
    controller = ArmController(mode, LIMITS, BOX, PERIOD_NS)
    controller.start(sim.q, 0)
    now_ns = 0
    violations: list[str] = []
    command_seconds: list[float] = []

    def tick() -> None:
        nonlocal now_ns
        started = time.perf_counter()
        command = controller.command(now_ns)
        command_seconds.append(time.perf_counter() - started)
        assert command is not None
        points = _points(command)
        violations.extend(violation.text for violation in command_violations(points, BOX, kinematics))
        if not sim.command(points, now_ns / 1e9):
            violations.append("a command the joint controller refused")
        sim.step(PERIOD_NS // 1_000_000)
        violations.extend(violation.text for violation in sim.violations)
        sim.violations.clear()
        now_ns += PERIOD_NS

    reset_ticks = []
    for _ in range(trials):
        action = rng.choice([-1.0, 1.0], size=controller.action_size)
        for _ in range(int(rng.integers(20, 150))):
            if rng.random() < 0.1:
                action = rng.choice([-1.0, 1.0], size=controller.action_size)
            controller.act(action)
            for _ in range(TICKS_PER_STEP):
                tick()
        controller.begin_reset(int(rng.integers(1 << 30)), np.zeros(0), sim.q, sim.dq)
        ticks = 0
        while not controller.reset_reached(sim.q, sim.dq) and ticks < 2 * RESET_TIMEOUT_TICKS:
            tick()
            ticks += 1
        reset_ticks.append(ticks)
    durations = np.array(reset_ticks) * PERIOD_NS / 1e9
    result: dict[str, object] = {
        "trials": trials,
        "reset_s": {
            "median": round(float(np.median(durations)), 2),
            "p99": round(float(np.percentile(durations, 99)), 2),
            "max": round(float(durations.max()), 2),
        },
        "resets_over_timeout": int(np.sum(np.array(reset_ticks) >= RESET_TIMEOUT_TICKS)),
        "violations": len(violations),
        "command_compute_ms": summary_ms(command_seconds),
    }
    print(mode, result, flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=500, help="resets per action mode")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    results = {mode: run_mode(mode, args.trials, args.seed) for mode in ("joint_delta", "ee_delta")}
    write_result("resets", {"seed": args.seed, "control_rate_hz": 1e9 / PERIOD_NS, **results})
    failed = any(r["resets_over_timeout"] or r["violations"] for r in results.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
