"""Per-step overhead of the decoupler against a bare rclpy topic ping-pong, in one run.

(a) decoupler: time from ``RLClient.step()`` being called to its return, minus the
    action's duration. An echo agent (7-float64 action, 30-float64 observation) runs
    each action for 10 ms, five periods of its 500 Hz loop. ``overhead_ms`` subtracts
    the duration the agent measured and reports (from the action's start to its
    observation tick), so the figure is the decoupler's communication cost;
    ``overhead_vs_requested_ms`` subtracts the requested 10 ms instead, and so also
    holds the control timer's wake-up latency (see control_loop.json for that).
(b) ping-pong: the same payload out and back between two processes on
    SingleThreadedExecutors. Each ping-pong waits the same 10 ms first, as a step
    does while its action runs: on this VM a process that idled 10 ms wakes 3-5x
    slower than a hot one (0.09 vs 0.5 ms a hop), so only the idle-matched ping-pong
    compares like with like. The back-to-back figure is reported too.
(c) the same steps with the client recording everything it sends and receives to an
    MCAP file (rl/recording.py, as the Panda trainer's run.mcap), in blocks of their own:
    ``with_recording_ms``, and what recording adds, as a share of the step's wall time
    and of the decoupler's overhead.
Steps (plain, recorded) and ping-pongs alternate in blocks so machine noise hits all alike.

    ./ws bench step_overhead [--steps 2000]

Writes bench/results/step_overhead.json. Targets: median overhead <= 1.5x the
ping-pong median, overhead p99 <= 3 ms; recording adds < 5% to a step's median wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, summary_ms, write_result

DURATION = 0.01  # s, five control periods at 500 Hz
CONTROL_RATE = 500.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--block", type=int, default=100)
    args = parser.parse_args()
    isolate_dds()

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Float64MultiArray

    from spin_decoupler_ros.rl import RLClient
    from spin_decoupler_ros.rl.recording import RunRecorder
    from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup, ros_args

    logs = Path("log/bench")
    with ProcessGroup() as group:
        agent = group.start(
            NodeProcess(
                "bench.echo_agent",
                ros_args(params={"rl_timestep": DURATION, "control_rate": CONTROL_RATE}),
                log_path=logs / "step_overhead_agent.log",
            )
        )
        pong = group.start(NodeProcess("bench.pong_node", log_path=logs / "step_overhead_pong.log"))
        assert agent.wait_for_log("agent ready", 30) and pong.wait_for_log("pong ready", 30)

        client = RLClient(connect_timeout=20)
        recording = logs / "step_overhead.mcap"
        recording.unlink(missing_ok=True)
        recorder = RunRecorder(recording)
        rclpy.init()
        ping_node = Node("ping")
        answered: list[float] = []
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        ping_node.create_subscription(Float64MultiArray, "pong", lambda m: answered.append(time.perf_counter()), qos)
        ping_pub = ping_node.create_publisher(Float64MultiArray, "ping", qos)
        executor = SingleThreadedExecutor()
        executor.add_node(ping_node)
        while ping_pub.get_subscription_count() == 0 or ping_node.count_publishers("pong") == 0:
            executor.spin_once(timeout_sec=0.05)
        ping = Float64MultiArray(data=[0.1] * 7)
        action = np.full(7, 0.3)

        def ping_pong(idle: float) -> float:
            if idle:
                time.sleep(idle)
            answered.clear()
            start = time.perf_counter()
            ping_pub.publish(ping)
            while not answered:
                executor.spin_once(timeout_sec=1.0)
            return answered[0] - start

        def decoupled_step() -> tuple[float, float]:
            start = time.perf_counter()
            answer = client.step(action, DURATION)
            elapsed = time.perf_counter() - start
            return elapsed - answer.duration, elapsed - DURATION

        client.reset()
        for _ in range(args.warmup):
            decoupled_step()
            ping_pong(DURATION)
        overhead: list[float] = []
        overhead_requested: list[float] = []
        recorded: list[float] = []
        recorded_requested: list[float] = []
        pingpong: list[float] = []
        pingpong_hot: list[float] = []
        while len(overhead) < args.steps:
            for _ in range(args.block):
                executed, requested = decoupled_step()
                overhead.append(executed)
                overhead_requested.append(requested)
            client.channel.record_to(recorder)
            for _ in range(args.block):
                executed, requested = decoupled_step()
                recorded.append(executed)
                recorded_requested.append(requested)
            client.channel.stop_recording()
            pingpong += [ping_pong(DURATION) for _ in range(args.block)]
            pingpong_hot += [ping_pong(0.0) for _ in range(args.block // 4)]
        client.close()
        recorder.close()
        recorded_messages = recorder.messages
        ping_node.destroy_node()
        rclpy.try_shutdown()

    added = float(np.median(recorded_requested) - np.median(overhead_requested))
    result: dict[str, Any] = {
        "overhead_ms": summary_ms(overhead),
        "with_recording_ms": summary_ms(recorded),
        "recording": {
            "added_median_ms": round(added * 1e3, 4),
            "added_share_of_step_wall_time": round(added / float(np.median(overhead_requested) + DURATION), 4),
            "added_share_of_overhead": round(added / float(np.median(overhead)), 4),
            "messages_recorded": recorded_messages,
        },
        "pingpong_ms": summary_ms(pingpong),
        "ratio_median": round(float(np.median(overhead) / np.median(pingpong)), 3),
        "overhead_vs_requested_ms": summary_ms(overhead_requested),
        "pingpong_back_to_back_ms": summary_ms(pingpong_hot),
        "setup": {
            "steps": args.steps,
            "action_duration_s": DURATION,
            "agent_control_rate_hz": CONTROL_RATE,
            "payload": "7 float64 action, 30 float64 observation",
            "executor": "SingleThreadedExecutor on both sides",
            "pingpong_idle_before_each_s": DURATION,
        },
        "targets": {"ratio_median_max": 1.5, "overhead_p99_ms_max": 3.0, "recording_added_share_max": 0.05},
    }
    print(
        f"overhead median {result['overhead_ms']['median']} ms p99 {result['overhead_ms']['p99']} ms; "
        f"ping-pong median {result['pingpong_ms']['median']} ms; ratio {result['ratio_median']}; "
        f"recording adds {result['recording']['added_median_ms']} ms "
        f"({100 * result['recording']['added_share_of_step_wall_time']:.2f}% of a step)"
    )
    write_result("step_overhead", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
