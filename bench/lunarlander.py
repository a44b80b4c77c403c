"""PPO on LunarLander, in-process and through the decoupled nodes, in one run.

(a) in-process: Gymnasium's LunarLander repeating each action for ``--frames-per-step``
    frames (``FrameSkipLunarLander``): no clock, every frame computed on demand;
(b) decoupled: the LunarLander agent node as a process at ``--control-rate`` (one frame
    per tick: the agent's maximum speed) with ``rl_timestep`` = frames-per-step ticks,
    ``LunarLanderEnv`` here, over DDS. Frames keep firing the last action while the
    learner thinks (up to the agent's watchdog, then the lander pauses), so a decoupled
    step spans at least frames-per-step frames; the mean is reported.
Same PPO settings (``train.PPO_SETTINGS``), budget and seed; each evaluated over
``--eval-episodes`` deterministic episodes in its own env. ``wall_s`` is training time.
(c) in-process again, at the decoupled run's measured frames per step (rounded), to
    tell the cost of fewer decisions per frame from the cost of the transport.

    ./ws bench lunarlander [--timesteps 100000] [--control-rate 1000]
    ./ws bench lunarlander --only-inprocess-at 9   # (c) alone, added to the results file

Writes bench/results/lunarlander.json. Targets: mean returns within 10% of each other,
decoupled wall time at most 1.5x the in-process one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, write_result


def train_and_evaluate(env: Any, args: argparse.Namespace) -> dict[str, Any]:
    from spin_decoupler_ros.examples.lunar_lander.train import evaluate, make_ppo
    from spin_decoupler_ros.rl.training import FreezeGarbageCollector

    model = make_ppo(env, seed=args.seed)
    started = time.perf_counter()
    model.learn(total_timesteps=args.timesteps, callback=FreezeGarbageCollector())
    wall_s = time.perf_counter() - started
    mean_return, std_return = evaluate(model, env, args.eval_episodes, seed=10_000)
    print(f"  mean return {mean_return:.1f} +- {std_return:.1f}, {wall_s:.0f} s", flush=True)
    return {
        "mean_return": round(mean_return, 2),
        "std_return": round(std_return, 2),
        "wall_s": round(wall_s, 1),
        "steps_per_s": round(args.timesteps / wall_s, 1),
    }


def frame_counter(env: Any) -> Any:
    """The decoupled env, counting the frames its steps really spanned."""
    import gymnasium as gym

    class FrameCounter(gym.Wrapper):
        frames = 0
        steps = 0

        def step(self, action: Any) -> Any:
            result = self.env.step(action)
            self.frames += result[4].get("frames", 0)
            self.steps += 1
            return result

    return FrameCounter(env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--frames-per-step", type=int, default=4)
    parser.add_argument("--control-rate", type=float, default=1000.0, help="agent Hz (frames per second)")
    parser.add_argument("--watchdog", type=float, default=0.05, help="s the lander flies on for a silent learner")
    parser.add_argument("--only-inprocess-at", type=int, default=0, help="run only (c) at this many frames per step")
    args = parser.parse_args()
    if args.only_inprocess_at:
        return add_inprocess_at(args.only_inprocess_at, args)
    isolate_dds()
    import torch

    from spin_decoupler_ros.examples.lunar_lander.task import FrameSkipLunarLander, LunarLanderEnv
    from spin_decoupler_ros.tools.processes import NodeProcess, ros_args

    torch.set_num_threads(1)
    print(f"(a) in-process, {args.timesteps} PPO steps", flush=True)
    inprocess = train_and_evaluate(FrameSkipLunarLander(args.frames_per_step), args)

    print(f"(b) decoupled at {args.control_rate:g} Hz, {args.timesteps} PPO steps", flush=True)
    params = {
        "control_rate": args.control_rate,
        "rl_timestep": args.frames_per_step / args.control_rate,
        "watchdog_timeout": args.watchdog,
    }
    agent = NodeProcess(
        "spin_decoupler_ros.examples.lunar_lander.agent",
        ros_args(namespace="/lander", params=params),
        log_path=Path("log/bench/lunarlander_agent.log"),
    )
    with agent:
        if not agent.wait_for_log("agent ready", 30):
            raise SystemExit(f"agent did not start:\n{agent.log_text()}")
        env = LunarLanderEnv("/lander", client_options={"connect_timeout": 30})
        counter = frame_counter(env)
        try:
            decoupled = train_and_evaluate(counter, args)
        finally:
            env.close()
    decoupled["mean_frames_per_step"] = round(counter.frames / max(counter.steps, 1), 2)
    gap = abs(decoupled["mean_return"] - inprocess["mean_return"]) / max(abs(inprocess["mean_return"]), 1e-9)
    result = {
        "inprocess": inprocess,
        "decoupled": decoupled,
        "return_gap_fraction": round(float(gap), 3),
        "wall_ratio": round(decoupled["wall_s"] / inprocess["wall_s"], 2),
        "setup": {
            "timesteps": args.timesteps,
            "seed": args.seed,
            "eval_episodes": args.eval_episodes,
            "frames_per_step": args.frames_per_step,
            "control_rate_hz": args.control_rate,
            "watchdog_s": args.watchdog,
            "torch_threads": 1,
        },
        "targets": "return_gap_fraction <= 0.10, wall_ratio <= 1.5",
    }
    print({k: result[k] for k in ("inprocess", "decoupled", "return_gap_fraction", "wall_ratio")}, flush=True)
    write_result("lunarlander", result)
    return add_inprocess_at(round(decoupled["mean_frames_per_step"]), args)


def add_inprocess_at(frames: int, args: argparse.Namespace) -> int:
    """(c): the in-process twin at ``frames`` per step, added to the results file."""
    import json

    import torch

    from bench.common import RESULTS
    from spin_decoupler_ros.examples.lunar_lander.task import FrameSkipLunarLander

    torch.set_num_threads(1)
    print(f"(c) in-process at {frames} frames per step, {args.timesteps} PPO steps", flush=True)
    figures = train_and_evaluate(FrameSkipLunarLander(frames), args)
    result = json.loads((RESULTS / "lunarlander.json").read_text())
    result.pop("machine", None)
    result["inprocess_at_decoupled_frames"] = {"frames_per_step": frames, **figures}
    write_result("lunarlander", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
