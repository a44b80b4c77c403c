"""The genuine joint_trajectory_controller in the loop: what would the arm really receive?

    vcs import SOURCES < bench/genuine_jtc/jazzy.repos && bench/genuine_jtc/build SOURCES
    ./ws --distro jazzy bench genuine_jtc [--robots panda fr3 ur5e] [--distros humble jazzy]
                                          [--minutes 10] [--overlay DIR]

For each robot profile and each distribution's defaults: ros2_control's controller_manager
(built from release sources by bench/genuine_jtc/build), at the arm's controller rate
(1 kHz on the Franka arms, 500 Hz on the UR5e), runs the profile's
trajectory controller, configured as the profile says
(``core/ros2_control_description.py``), in front of ``RecordedJoints``
(bench/genuine_jtc/check_hardware), which records every command of every update. A real
agent process drives it, set up as the launch files set up a real arm's (``jerk_capped``),
and an RL client takes it through the cases the stress tests
cover, in turn, until ``--minutes`` of commanded motion: steady steps, steps of every
duration (a new trajectory replaces the running one at every phase of its motion),
adversarial actions (extremes, flips), a learner that stalls (the agent brakes and holds),
an agent frozen mid-motion (SIGSTOP), and resets. Then, per joint, the largest velocity,
acceleration and jerk of what the hardware was commanded (``core/commanded_motion.py``):
the position commands on a position interface; on an effort interface, the motion the
efforts made of the joints' inertias (gravity compensated, as Franka's torque interface
is). Writes bench/results/genuine_jtc.json: ``{"<profile>": {"<distro>_defaults":
{"samples", "max_velocity", "max_acceleration", "max_jerk", "limit_breaks"}}}``, the samples
per profile over both, and ``mock_vs_genuine``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import isolate_dds, write_result
from franka_agent.core.commanded_motion import CommandedExtremes, commanded_extremes, trajectory_times
from franka_agent.core.jtc_update import ControllerUpdate, largest_errors, replay_recording
from franka_agent.core.profile import BUILT_IN_PROFILES, RobotProfile
from franka_agent.core.profile_file import load_profile
from franka_agent.core.ros2_control_description import (
    BROADCASTER,
    DISTRO_DEFAULTS,
    controller_parameters,
    robot_description,
)
from franka_agent.robots import jerk_capped_override
from franka_agent.stall_guard import STALLED_WHILE_SENDING, STOPPED_WHILE_SENDING
from spin_decoupler_ros.tools.processes import NodeProcess, ros_args

PLUGIN = "spin_decoupler_check_hardware/RecordedJoints"
# What the launch files give a real arm's agent: its accelerations capped so that their
# steps at the points stay within the jerk limits at the controller's update rate
# (core/limits.py); without, they do not.
AGENT_SETTINGS = jerk_capped_override("", mock=False)
SOURCED = "SPIN_DECOUPLER_GENUINE_JTC_SOURCED"
DISCOVERY_SETTLE_S = 3.0  # after the agent hears the joint states, before the first episode
DEFAULT_OVERLAY = (
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "spin_decoupler" / "genuine_jtc_jazzy"
)


def in_overlay(overlay: Path) -> None:
    """Run this script again with the overlay sourced, unless that is done; name what is
    missing if the overlay is not built."""
    if os.environ.get(SOURCED):
        return
    setup = overlay / "install" / "local_setup.bash"
    if not setup.exists():
        sys.exit(
            f"genuine_jtc: no overlay at {overlay}: build it first with\n"
            f"  vcs import SOURCES < bench/genuine_jtc/jazzy.repos && bench/genuine_jtc/build SOURCES {overlay}"
        )
    command = f'source "{setup}" && exec python "{Path(__file__).resolve()}" "$@"'
    os.execvpe("bash", ["bash", "-c", command, "genuine_jtc", *sys.argv[1:]], {**os.environ, SOURCED: "1"})


def joint_inertias(profile: RobotProfile) -> np.ndarray:
    """Each joint's inertia at home (the mass matrix's diagonal with the armature), from the
    MuJoCo model of the profile: what one effort moves, the coupling left out."""
    import mujoco

    from franka_agent.core.arm_mjcf import arm_mjcf

    model = mujoco.MjModel.from_xml_string(arm_mjcf(profile))
    data = mujoco.MjData(model)
    data.qpos[: len(profile.home)] = profile.home
    mujoco.mj_forward(model, data)
    full = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, full)
    return np.diag(full)[: len(profile.home)].copy()


def wheel_preload() -> dict[str, str]:
    """On the PyPI wheels (their bootstrapper marks the environment), the wheels'
    librcl_lifecycle names a Python extension library, which leaves the interpreter's
    symbols to the interpreter: a C++ process loads libpython first. None elsewhere."""
    import sysconfig

    library = Path(str(sysconfig.get_config_var("LIBDIR"))) / str(sysconfig.get_config_var("INSTSONAME"))
    if not os.environ.get("_ROS_WHEELS_BOOTSTRAP_COMPLETE") or not library.exists():
        return {}
    return {"LD_PRELOAD": " ".join(filter(None, (str(library), os.environ.get("LD_PRELOAD", ""))))}


class ControllerManager(NodeProcess):
    """ros2_control_node from the overlay: a process started and stopped as the nodes are
    (``NodeProcess``), only not a Python module."""

    def argv(self) -> list[str]:
        return [self.module, *self.args]


def start_controller_manager(parameters: Path, remaps: dict[str, str], log: Path) -> ControllerManager:
    prefix = next(
        (
            Path(p)
            for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)
            if (Path(p) / "lib" / "controller_manager").is_dir()
        ),
        None,
    )
    if prefix is None:
        raise SystemExit("genuine_jtc: controller_manager is not on AMENT_PREFIX_PATH (is the overlay sourced?)")
    executable = prefix / "lib" / "controller_manager" / "ros2_control_node"
    manager = ControllerManager(
        str(executable), ros_args(params_files=(parameters,), remaps=remaps), log_path=log, env=wheel_preload()
    )
    manager.start()
    return manager


class Controllers:
    """The controller manager's services, and the robot description it waits for."""

    def __init__(self, description: str) -> None:
        import rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_msgs.msg import String

        from spin_decoupler_ros.rl.client import init_private_context

        self._context = init_private_context()
        self.node = rclpy.create_node("genuine_jtc_check", context=self._context)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._description = self.node.create_publisher(String, "/robot_description", latched)
        self._description.publish(String(data=description))
        self._executor = rclpy.executors.SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self.node)

    def call(self, service: str, srv_type: Any, request: Any, timeout: float = 30.0) -> Any:
        client: Any = self.node.create_client(srv_type, service)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise RuntimeError(f"no service {service} within {timeout} s")
            future = client.call_async(request)
            self._executor.spin_until_future_complete(future, timeout_sec=timeout)
            if not future.done():
                raise RuntimeError(f"{service} did not answer within {timeout} s")
            return future.result()
        finally:
            self.node.destroy_client(client)

    def activate(self, names: list[str]) -> None:
        from controller_manager_msgs.srv import ConfigureController, LoadController, SwitchController

        for name in names:
            if not self.call(
                "/controller_manager/load_controller", LoadController, LoadController.Request(name=name)
            ).ok:
                raise RuntimeError(f"the controller manager did not load {name}")
            if not self.call(
                "/controller_manager/configure_controller", ConfigureController, ConfigureController.Request(name=name)
            ).ok:
                raise RuntimeError(f"the controller manager did not configure {name}")
        request = SwitchController.Request(activate_controllers=names, strictness=SwitchController.Request.STRICT)
        if not self.call("/controller_manager/switch_controller", SwitchController, request).ok:
            raise RuntimeError(f"the controller manager did not activate {names}")

    def close(self) -> None:
        self.node.destroy_node()
        self._context.try_shutdown()


class Tap:
    """What goes into the controller and what it makes of it, heard on a thread of its own:
    every trajectory the agent sends, with the time it arrived here (the controller's clock:
    both are this host's system time), and every ``~/controller_state`` the controller
    publishes (its reference, sampled at its trajectory time, ``time_from_start`` after the
    active trajectory's start). ``save`` writes them as flat arrays (``np.savez``: no
    pickles) beside the hardware's record."""

    def __init__(self, command_topic: str) -> None:
        import rclpy
        from control_msgs.msg import JointTrajectoryControllerState
        from rclpy.qos import QoSProfile
        from trajectory_msgs.msg import JointTrajectory

        from spin_decoupler_ros.rl.client import init_private_context

        self._context = init_private_context()
        self._node = rclpy.create_node("genuine_jtc_tap", context=self._context)
        self.clock = self._node.get_clock()
        self.arrivals: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]] = []
        self.states: list[tuple[int, int, tuple[float, ...], tuple[float, ...], tuple[float, ...]]] = []
        self._node.create_subscription(JointTrajectory, command_topic, self._keep, 100)
        state_topic = command_topic.rsplit("/", 1)[0] + "/controller_state"
        self._node.create_subscription(
            JointTrajectoryControllerState, state_topic, self._keep_state, QoSProfile(depth=1000)
        )
        self.publisher = self._node.create_publisher(JointTrajectory, command_topic, 10)  # (``bridges``)
        self._executor = rclpy.executors.SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self._node)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        from rclpy.executors import ExternalShutdownException

        try:
            while self._context.ok():
                self._executor.spin_once(timeout_sec=0.1)
        except ExternalShutdownException:
            pass  # (close(): the context shut down under the spin)

    def _keep(self, msg: Any) -> None:
        arrival = self.clock.now().nanoseconds
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        offsets = np.array([p.time_from_start.sec * 1_000_000_000 + p.time_from_start.nanosec for p in msg.points])
        self.arrivals.append(
            (
                arrival,
                stamp,
                offsets.astype(np.int64),
                np.array([p.positions for p in msg.points], dtype=np.float64),
                np.array([p.velocities if len(p.velocities) else [np.nan] * len(p.positions) for p in msg.points]),
            )
        )

    def _keep_state(self, msg: Any) -> None:
        reference = msg.reference
        self.states.append(
            (
                msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec,
                reference.time_from_start.sec * 1_000_000_000 + reference.time_from_start.nanosec,
                tuple(reference.positions),
                tuple(reference.velocities),
                tuple(msg.feedback.positions),
            )
        )

    def latest_reference(self, timeout: float = 10.0) -> np.ndarray:
        deadline = time.monotonic() + timeout
        while not self.states:
            if time.monotonic() > deadline:
                raise RuntimeError("the controller published no ~/controller_state")
            time.sleep(0.01)
        return np.array(self.states[-1][2])

    def save(self, path: Path) -> None:
        kept, states = list(self.arrivals), list(self.states)
        np.savez_compressed(
            path,
            arrival_ns=np.array([a for a, *_ in kept], dtype=np.int64),
            stamp_ns=np.array([s for _, s, *_ in kept], dtype=np.int64),
            point_counts=np.array([len(o) for _, _, o, *_ in kept], dtype=np.int64),
            time_from_start_ns=np.concatenate([o for _, _, o, *_ in kept]) if kept else np.zeros(0, np.int64),
            positions=np.concatenate([q for *_, q, _ in kept]) if kept else np.zeros((0, 0)),
            velocities=np.concatenate([v for *_, v in kept]) if kept else np.zeros((0, 0)),
            state_stamp_ns=np.array([s[0] for s in states], dtype=np.int64),
            state_time_from_start_ns=np.array([s[1] for s in states], dtype=np.int64),
            reference_positions=np.array([s[2] for s in states], dtype=np.float64),
            reference_velocities=np.array([s[3] for s in states], dtype=np.float64),
            feedback_positions=np.array([s[4] for s in states], dtype=np.float64),
        )

    def close(self) -> None:
        self._context.try_shutdown()
        self._thread.join(timeout=2.0)


# --- the cases: each drives the agent through one kind of trouble for a while -------------


def steady(client: Any, agent: Any, rng: np.random.Generator) -> None:
    client.reset(seed=int(rng.integers(1 << 30)))
    for _ in range(40):
        client.step(rng.uniform(-1.0, 1.0, size=3))


def every_duration(client: Any, agent: Any, rng: np.random.Generator) -> None:
    """Steps of 20-200 ms: each new trajectory replaces the last at another phase of it."""
    client.reset(seed=int(rng.integers(1 << 30)))
    for _ in range(60):
        client.step(rng.uniform(-1.0, 1.0, size=3), duration=float(rng.uniform(0.02, 0.2)))


def adversarial(client: Any, agent: Any, rng: np.random.Generator) -> None:
    client.reset(seed=int(rng.integers(1 << 30)))
    action = np.ones(3)
    for step in range(60):
        action = -action if step % 2 else rng.choice([-1.0, 1.0], size=3)
        client.step(action)


def stalled_learner(client: Any, agent: Any, rng: np.random.Generator) -> None:
    """The learner quiet for 0.1-1.5 s between steps: the agent brakes and holds."""
    client.reset(seed=int(rng.integers(1 << 30)))
    for _ in range(8):
        for _ in range(3):
            client.step(rng.choice([-1.0, 1.0], size=3))
        time.sleep(float(rng.uniform(0.1, 1.5)))


def frozen_agent(client: Any, agent: Any, rng: np.random.Generator) -> None:
    """SIGSTOP the agent for 0.05-1 s at a random moment after a step at speed, while the
    arm still moves on its last command."""
    client.reset(seed=int(rng.integers(1 << 30)))
    for _ in range(6):
        for _ in range(4):
            client.step(rng.choice([-1.0, 1.0], size=3))
        time.sleep(float(rng.uniform(0.0, 0.1)))
        freeze(agent, float(rng.uniform(0.05, 1.0)))


def bridges(tap: Tap, joint_names: list[str], seconds: float, rng: np.random.Generator) -> None:
    """Trajectories sent straight to the controller, as an agent that did not start them
    in the past would: each one's first point 5-40 ms ahead, so the controller bridges to
    it from its last command; three points 40 ms apart around where it was, with
    velocities (cubic) or, one in four, without (linear); one every 15-60 ms, replacing
    the last at every phase. What the emulation must do with a bridge (the golden traces)."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    centre = tap.latest_reference()
    clock = tap.clock
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        msg = JointTrajectory()
        msg.header.stamp = clock.now().to_msg()
        msg.joint_names = list(joint_names)
        first = float(rng.uniform(0.005, 0.04))
        cubic = rng.random() > 0.25
        for i in range(3):
            point = JointTrajectoryPoint()
            point.positions = [float(x) for x in centre + rng.uniform(-0.03, 0.03, size=centre.size)]
            if cubic:  # at rest at the end: Jazzy refuses a trajectory that ends moving
                velocities = rng.uniform(-0.3, 0.3, size=centre.size) if i < 2 else np.zeros(centre.size)
                point.velocities = [float(x) for x in velocities]
            at = int((first + 0.04 * i) * 1e9)
            point.time_from_start = Duration(sec=at // 1_000_000_000, nanosec=at % 1_000_000_000)
            msg.points.append(point)
        tap.publisher.publish(msg)
        time.sleep(float(rng.uniform(0.015, 0.06)))


def freeze(agent: Any, seconds: float) -> None:
    agent.kill(signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        agent.kill(signal.SIGCONT)


CASES: dict[str, Callable[[Any, Any, np.random.Generator], None]] = {
    "steady": steady,
    "every_duration": every_duration,
    "adversarial": adversarial,
    "stalled_learner": stalled_learner,
    "frozen_agent": frozen_agent,
}


@contextmanager
def genuine_stack(profile: RobotProfile, distro: str, folder: Path) -> Iterator[Path]:
    """The controller manager running the profile's controller on ``distro``'s defaults in
    front of RecordedJoints; yields the record's path."""
    record = folder / "record.bin"
    inertias = joint_inertias(profile)
    description = robot_description(
        profile,
        plugin=PLUGIN,
        hardware_parameters={"record": str(record)},
        joint_parameters=[
            {"inertia": float(i), "damping": float(d)} for i, d in zip(inertias, profile.dynamics.damping, strict=True)
        ],
    )
    parameters = folder / "controllers.yaml"
    # (Each profile's drivers publish the joint states every controller cycle: the
    # controller manager runs at that rate, 1 kHz on a Franka, 500 Hz on a UR.)
    rate = round(profile.joint_states.rate)
    parameters.write_text(yaml.safe_dump(controller_parameters(profile, distro, update_rate=rate)))
    remaps = {} if profile.joint_states.topic == "/joint_states" else {"/joint_states": profile.joint_states.topic}
    manager = start_controller_manager(parameters, remaps, folder / "controller_manager.log")
    controllers = Controllers(description)
    try:
        controllers.activate([BROADCASTER, profile.controller.name])
        yield record
    finally:
        controllers.close()
        manager.stop()


def measure(
    profile: RobotProfile,
    distro: str,
    minutes: float,
    seed: int,
    folder: Path,
    cases: dict[str, Callable[[Any, Any, np.random.Generator], None]] = CASES,
    bridging_seconds: float = 0.0,
) -> dict[str, Any]:
    from spin_decoupler_ros.rl import RLClient
    from spin_decoupler_ros.tools.paths import find_config

    rng = np.random.default_rng(seed)
    cases_run: dict[str, int] = dict.fromkeys(cases, 0)
    with genuine_stack(profile, distro, folder) as record:
        tap = Tap(profile.controller.command_topic)
        if bridging_seconds:
            bridges(tap, list(profile.joint_names), bridging_seconds, rng)
        agent = NodeProcess(
            "franka_agent.panda_agent_node",
            ros_args(
                params_files=(find_config("panda_reach.yaml", package="franka_agent"),),
                params={"robot": profile.name, **AGENT_SETTINGS},
            ),
            log_path=folder / "agent.log",
            label="agent",
        ).start()
        try:
            if not agent.wait_for_log("joint states arrive", 60.0):
                raise RuntimeError(f"the agent got no joint states:\n{agent.log_text()[-3000:]}")
            # The agent hears the controller manager's joint states, but when the controller
            # hears the agent is the other side's discovery: a first command sent before
            # then is lost, and the arm holds while the agent believes it moving (the first
            # reset ends ROBOT_STOPPED). Discovery settles first.
            time.sleep(DISCOVERY_SETTLE_S)
            with RLClient(connect_timeout=60, reset_timeout=60) as client:
                start = time.monotonic()
                while not cases_run or time.monotonic() - start < minutes * 60.0 or not all(cases_run.values()):
                    for name, case in cases.items():
                        case(client, agent, rng)
                        cases_run[name] += 1
                        print(f"{profile.name} {distro}: {name} ({time.monotonic() - start:.0f} s)", flush=True)
                    if time.monotonic() - start >= minutes * 60.0:
                        break
        finally:
            agent.stop()
            tap.close()
            tap.save(folder / "trajectories.npz")
        rows = np.fromfile(record, dtype=np.float64)
    joints = len(profile.joint_names)
    width = 2 + 3 * joints
    rows = rows[: rows.size // width * width].reshape(-1, width)
    # The loop's clock: the measured periods the controllers advance by
    # (check_hardware/src/recorded_joints.cpp).
    loop_times = rows[0, 0] + np.cumsum(rows[:, 1]) - rows[0, 1]
    positions, commands = rows[:, 2 : 2 + joints], rows[:, 2 + 2 * joints :]
    if profile.controller.interface == "position":
        at_the_hardware = commanded_extremes(loop_times, commands)
    else:  # the joints' motion, where an effort was commanded
        at_the_hardware = commanded_extremes(
            loop_times, np.where(np.all(np.isfinite(commands), axis=1)[:, None], positions, np.nan)
        )
    period = 1.0 / round(profile.joint_states.rate)
    late = late_arrivals(folder / "trajectories.npz")
    agent_log = folder / "agent.log"
    log = agent_log.read_text() if agent_log.exists() else ""
    announced = log.count(STOPPED_WHILE_SENDING) + log.count(STALLED_WHILE_SENDING)
    # A command frozen inside its send (SIGSTOP) reaches the controller past its first
    # point ahead, and the controller jumps onto its own segment: nothing on the agent's
    # side can take that back, and the agent says so each time. As the stress tests do
    # (test_panda.py::assert_no_violation_but_of_stopped_sends), the jump is left out
    # only where every late command was announced; otherwise it counts.
    excused = late if late.size <= announced else np.zeros(0, dtype=np.int64)
    reference = reference_extremes(folder / "trajectories.npz", period, excused)
    return {
        **summary(profile, reference, at_the_hardware, cases_run, loop_times),
        "late_commands": {"count": int(late.size), "announced_by_the_agent": announced, "excused": int(excused.size)},
        "mock_vs_genuine": mock_vs_genuine(folder / "trajectories.npz", period),
    }


def mock_vs_genuine(taps: Path, update_period: float) -> dict[str, Any]:
    """The emulation (core/jtc_update.py, Jazzy's update) fed what the genuine controller
    took, where it took it, against the genuine reference: as test_genuine_jtc_golden.py
    does with the golden traces, over the whole run."""
    with np.load(taps) as tapped:
        recording = {name: tapped[name] for name in tapped.files}
    replayed = replay_recording(recording, ControllerUpdate("jazzy", update_period))
    position, velocity = largest_errors(recording, replayed)
    return {
        "max_position_error_rad": position,
        "max_velocity_error_rad_s": velocity,
        "rows_checked": int(np.sum(replayed.checkable)),
    }


def late_arrivals(taps: Path) -> np.ndarray:
    """The stamps of the trajectories that reached the tap (the controller's host) past
    where they part from the one before: past the last point they share with it (the
    agent's commands carry the points still ahead of the one before, up to the horizon),
    or, sharing none (a new plan, bridged to), past their first point ahead."""
    with np.load(taps) as tapped:
        arrivals, stamps = tapped["arrival_ns"], tapped["stamp_ns"]
        splits = np.cumsum(tapped["point_counts"])[:-1]
        offsets = np.split(tapped["time_from_start_ns"], splits)
        positions = np.split(tapped["positions"], splits)
    late = []
    for i, (arrival, stamp) in enumerate(zip(arrivals, stamps, strict=True)):
        times = stamp + offsets[i]
        parts_at = next((t for t in offsets[i] if t > 0), offsets[i][-1]) + stamp
        if i > 0:
            before = dict(zip((stamps[i - 1] + offsets[i - 1]).tolist(), positions[i - 1], strict=True))
            shared = 0
            while shared < times.size and np.allclose(before.get(int(times[shared]), np.nan), positions[i][shared]):
                shared += 1
            if shared:
                parts_at = times[shared - 1]
        if arrival > parts_at:
            late.append(int(stamp))
    return np.array(late, dtype=np.int64)


def reference_extremes(taps: Path, update_period: float, excused: np.ndarray | None = None) -> CommandedExtremes:
    """The controller's reference, each sample at its time on the controller's trajectory
    clock (``trajectory_times``): what it makes of the agent's trajectories, free of the
    jitter of the update's clock reads. Differences are taken between consecutive
    updates only: where the real-time publisher dropped an update's state (it does when
    the last is still going out), the run ends, as a difference across the gap would be
    an average over it. So too at the first sample of each ``excused`` trajectory (by
    stamp; ``late_arrivals``)."""
    with np.load(taps) as tapped:
        times_ns = trajectory_times(tapped["state_stamp_ns"], tapped["state_time_from_start_ns"], tapped["stamp_ns"])
        starts_ns = times_ns - tapped["state_time_from_start_ns"]
        reference = tapped["reference_positions"]
    times = (times_ns - times_ns[0]) * 1e-9
    gaps = np.flatnonzero(np.diff(times) > 1.5 * update_period) + 1
    if excused is not None and excused.size:
        switched = np.flatnonzero((np.diff(starts_ns) != 0) & np.isin(starts_ns[1:], excused)) + 1
        gaps = np.union1d(gaps, switched)
    times = np.insert(times, gaps, np.nan)
    reference = np.insert(reference, gaps, np.nan, axis=0)
    return commanded_extremes(times, reference)


def rounded(values: np.ndarray, digits: int) -> list[float]:
    return [round(float(v), digits) for v in values]


def summary(
    profile: RobotProfile,
    reference: CommandedExtremes,
    at_the_hardware: CommandedExtremes,
    cases_run: dict[str, int],
    loop_times: np.ndarray,
) -> dict[str, Any]:
    breaks = reference.limit_breaks(profile.limits)
    periods = np.diff(loop_times)
    return {
        "samples": reference.samples,
        "updates": at_the_hardware.samples,
        "commanded_seconds": round(at_the_hardware.samples / profile.joint_states.rate, 1),
        "measured": "the controller's reference on its trajectory clock (~/controller_state)",
        "max_velocity": rounded(reference.max_velocity, 4),
        "max_acceleration": rounded(reference.max_acceleration, 3),
        "max_jerk": rounded(reference.max_jerk, 1),
        "limits": {
            "velocity": [float(v) for v in profile.limits.velocity],
            "acceleration": [float(v) for v in profile.limits.acceleration],
            "jerk": [float(v) for v in profile.limits.jerk],
        },
        "limit_breaks": sum(len(joints) for joints in breaks.values()),
        "joints_over": breaks,
        "on_the_loop_clock": {
            "measured": "position commands"
            if profile.controller.interface == "position"
            else "joint motion under the efforts",
            "max_acceleration": rounded(at_the_hardware.max_acceleration, 3),
            "max_jerk": rounded(at_the_hardware.max_jerk, 1),
        },
        "cases": cases_run,
        "update_period_ms": {
            "median": round(float(np.median(periods)) * 1e3, 3),
            "p99": round(float(np.percentile(periods, 99)) * 1e3, 3),
            "max": round(float(periods.max()) * 1e3, 3),
        },
    }


GOLDEN_CASES: dict[str, Callable[[Any, Any, np.random.Generator], None]] = {"every_duration": every_duration}
GOLDEN_BRIDGING_S = 2.0
GOLDEN_AGENT_S = 2.5


def write_golden(profile: RobotProfile, distro: str, taps: Path, golden: Path) -> None:
    """What test_genuine_jtc_golden.py replays: the trajectories the controller took and
    its reference at every update it published, with the controller's settings. Two
    windows, to keep the file small: the bridges, and the last ``GOLDEN_AGENT_S`` of the
    agent's trajectories."""
    with np.load(taps) as tapped:
        kept = {name: tapped[name] for name in tapped.files}
    stamps, states = kept["stamp_ns"], kept["state_stamp_ns"]
    bridges_end = int(stamps[0] + (GOLDEN_BRIDGING_S + 0.3) * 1e9)
    agent_start = int(states[-1] - GOLDEN_AGENT_S * 1e9)
    rows = (states <= bridges_end) | (states >= agent_start)
    # (and the trajectories that may be active in them: sent up to a second before)
    wanted = (stamps <= bridges_end) | (stamps >= agent_start - 1_000_000_000)
    points = np.repeat(wanted, kept["point_counts"])
    parameters = controller_parameters(profile, distro, update_rate=round(profile.joint_states.rate))
    settings = parameters[profile.controller.name]["ros__parameters"]
    np.savez_compressed(
        golden,
        profile=np.array(profile.name),
        distro_defaults=np.array(distro),
        controller=np.array("joint_trajectory_controller 4.42.1 (ros2_controllers, Jazzy), bench/genuine_jtc"),
        update_period=np.array(1.0 / round(profile.joint_states.rate)),
        from_desired_state=np.array(
            bool(settings.get("interpolate_from_desired_state") or settings.get("open_loop_control"))
        ),
        stamp_ns=stamps[wanted],
        point_counts=kept["point_counts"][wanted],
        **{name: kept[name][points] for name in ("time_from_start_ns", "positions", "velocities")},
        state_stamp_ns=states[rows],
        state_time_from_start_ns=kept["state_time_from_start_ns"][rows],
        reference_positions=kept["reference_positions"][rows],
        reference_velocities=kept["reference_velocities"][rows],
    )
    print(f"wrote {golden} ({golden.stat().st_size / 1e6:.2f} MB)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", nargs="+", default=list(BUILT_IN_PROFILES))
    parser.add_argument("--distros", nargs="+", default=sorted(DISTRO_DEFAULTS), choices=sorted(DISTRO_DEFAULTS))
    parser.add_argument("--minutes", type=float, default=10.0, help="commanded motion per profile and distro")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--overlay", type=Path, default=Path(os.environ.get("GENUINE_JTC_OVERLAY", DEFAULT_OVERLAY)))
    parser.add_argument("--keep", type=Path, help="keep each case's logs and record here")
    parser.add_argument(
        "--golden", type=Path, help="instead, record the golden traces of test_genuine_jtc_golden.py into this folder"
    )
    parser.add_argument("--result", type=Path, help="write the result here instead of bench/results/genuine_jtc.json")
    args = parser.parse_args()
    in_overlay(args.overlay)
    isolate_dds()
    result: dict[str, Any] = {"minutes_each": args.minutes, "seed": args.seed, "agent": AGENT_SETTINGS}
    with tempfile.TemporaryDirectory(prefix="genuine_jtc_") as scratch:
        for robot in args.robots:
            profile = load_profile(robot)
            for distro in args.distros:
                folder = (args.keep or Path(scratch)) / f"{robot}_{distro}"
                folder.mkdir(parents=True, exist_ok=True)
                if args.golden:
                    measure(profile, distro, 0.0, args.seed, folder, GOLDEN_CASES, GOLDEN_BRIDGING_S)
                    args.golden.mkdir(parents=True, exist_ok=True)
                    write_golden(profile, distro, folder / "trajectories.npz", args.golden / f"{robot}_{distro}.npz")
                    continue
                measured = measure(profile, distro, args.minutes, args.seed, folder)
                compared = measured.pop("mock_vs_genuine")
                result.setdefault(robot, {})[f"{distro}_defaults"] = measured
                overall = result.setdefault(
                    "mock_vs_genuine",
                    {"max_position_error_rad": 0.0, "max_velocity_error_rad_s": 0.0, "rows_checked": 0, "cases": []},
                )
                overall["max_position_error_rad"] = max(
                    overall["max_position_error_rad"], compared["max_position_error_rad"]
                )
                overall["max_velocity_error_rad_s"] = max(
                    overall["max_velocity_error_rad_s"], compared["max_velocity_error_rad_s"]
                )
                overall["rows_checked"] += compared["rows_checked"]
                overall["cases"].append(f"{robot} {distro}_defaults: " + ", ".join(measured["cases"]))
                per_profile = result.setdefault("samples_per_profile", {})
                per_profile[robot] = per_profile.get(robot, 0) + measured["samples"]
                if args.result:
                    args.result.write_text(json.dumps(result, indent=2) + "\n")
                else:
                    write_result("genuine_jtc", result)


if __name__ == "__main__":
    main()
