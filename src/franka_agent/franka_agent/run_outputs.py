"""What a reach run's folder holds beside the learner's outputs: its README, and its
recording (run.mcap) of every agent's traffic, joint states and controller commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rclpy.node import Node

from franka_agent.core.profile import RobotProfile
from franka_agent.robots import robot_remaps
from spin_decoupler_ros.rl import RLClient

if TYPE_CHECKING:
    from spin_decoupler_ros.rl.recording import RunRecorder


RUN_FOLDER_README = """\
# A Panda reach run

- steps.csv, episodes.csv: every step's timing (LAT, ATO, durations) and reward; each episode
- results.json: the evaluation; learning_curve.png, lat_histogram.png
- real_time_eval/: the main job's evaluation at real time (its figures are results.json's)
- model.zip: the trained policy (./ws main --evaluate model.zip evaluates it again)
- checkpoints/: resume with ./ws main --resume <this folder> (launch: resume:=<this folder>); a
  finished run is extended with --resume <this folder> --extend-to <steps>, its outputs kept in
  finished_at_<steps>/
- options.json: how the run was started. The same options and seed on this machine repeat
  steps.csv (all but wall_time, round_trip, clock_offset) under every timing model but wall;
  under wall, time is the machine's and nothing repeats exactly
- run.mcap (run.N.mcap after a resume): the run's messages, ros2 bag's MCAP layout:
  ros2 bag info run.mcap, ros2 bag play run.mcap, or open it in Foxglove or PlotJuggler
- tensorboard/: SB3's scalars and the timing ones (timing/*): tensorboard --logdir tensorboard
- *.log: each node's log
"""


def clients_of(closing: Any, client: RLClient) -> list[RLClient]:
    """Every agent's client: a VecEnv's, or the one env's."""
    return list(getattr(closing, "clients", [client]))


def start_recording(
    run_dir: Path,
    node: Node,
    clients: list[RLClient],
    namespaces: list[str],
    joint_states_every: int,
    profile: RobotProfile,
) -> RunRecorder:
    """run.mcap (run.N.mcap for a resumed run): each agent's traffic, and each robot's joint
    states (one in ``joint_states_every``) and the trajectories its agent sends."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from spin_decoupler_ros.rl.recording import record_clients

    recorder = record_clients(run_dir, clients)
    commands_qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
    for namespace in namespaces:
        remaps = robot_remaps(namespace, profile)
        if joint_states_every:
            states = profile.joint_states.merged_topic
            recorder.record_topic(
                node, remaps.get(states, states), "sensor_msgs/msg/JointState", every=joint_states_every
            )
        commands = profile.controller.command_topic
        recorder.record_topic(
            node, remaps.get(commands, commands), "trajectory_msgs/msg/JointTrajectory", qos=commands_qos
        )
    return recorder
