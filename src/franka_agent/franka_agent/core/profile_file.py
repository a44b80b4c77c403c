"""Reading a robot profile's file: ``load_profile`` finds it by name (config/robots/) or
path, and ``profile_from_mapping`` checks every field, raising ``ProfileError`` naming the
one that is wrong (``test_profiles.py::test_a_malformed_profile_is_refused_naming_the_field``).

Pure Python and numpy, no ROS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from franka_agent.core.profile import (
    BUILT_IN_PROFILES,
    PROFILE_FOLDER,
    STOP_SURFACES,
    Controller,
    DriverRelease,
    Dynamics,
    Inertial,
    JointLimits,
    JointStates,
    Origin,
    ProfileError,
    Recovery,
    RobotProfile,
    StopSurface,
)


class _Reader:
    """Reads one profile's mapping, naming the field in every error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, what: str) -> ProfileError:
        return ProfileError(f"robot profile {self.source}: '{where}' {what}")

    def mapping(self, data: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            raise self.fail(where, f"must be a mapping, got {type(data).__name__}")
        return data

    def get(self, data: Mapping[str, Any], key: str, where: str) -> Any:
        if key not in data:
            raise self.fail(f"{where}.{key}".lstrip("."), "is missing")
        return data[key]

    def text(self, data: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
        if default is not None and key not in data:
            return default
        value = self.get(data, key, where)
        if not isinstance(value, str) or not value:
            raise self.fail(f"{where}.{key}".lstrip("."), f"must be a non-empty string, got {value!r}")
        return value

    def number(self, data: Mapping[str, Any], key: str, where: str, positive: bool = False) -> float:
        value = self.get(data, key, where)
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
            raise self.fail(f"{where}.{key}".lstrip("."), f"must be a finite number, got {value!r}")
        if positive and value <= 0:
            raise self.fail(f"{where}.{key}".lstrip("."), f"must be positive, got {value}")
        return float(value)

    def vector(
        self, data: Mapping[str, Any], key: str, where: str, size: int, positive: bool = False, default: Any = None
    ) -> np.ndarray:
        value = data.get(key, default) if default is not None else self.get(data, key, where)
        name = f"{where}.{key}".lstrip(".")
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise self.fail(name, f"must be a list of {size} numbers, got {value!r}")
        if len(value) != size:
            raise self.fail(name, f"must have {size} entries, got {len(value)}")
        if any(isinstance(v, bool) or not isinstance(v, int | float) for v in value):
            raise self.fail(name, f"must hold numbers only, got {list(value)}")
        array = np.asarray(value, dtype=np.float64)
        if not np.all(np.isfinite(array)):
            raise self.fail(name, f"must hold finite numbers, got {list(value)}")
        if positive and np.any(array <= 0):
            raise self.fail(name, f"must be positive, got {list(value)}")
        array.setflags(write=False)
        return array

    def origin(self, data: Any, where: str) -> Origin:
        data = self.mapping(data, where)
        return Origin(
            self.vector(data, "xyz", where, 3, default=[0.0, 0.0, 0.0]),
            self.vector(data, "rpy", where, 3, default=[0.0, 0.0, 0.0]),
        )

    def inertial(self, data: Any, where: str) -> Inertial:
        data = self.mapping(data, where)
        inertial = Inertial(
            self.number(data, "mass", where, positive=True),
            self.vector(data, "com", where, 3),
            self.vector(data, "inertia", where, 6),
            self.vector(data, "rpy", where, 3, default=[0.0, 0.0, 0.0]),
        )
        if np.any(inertial.rpy) and np.any(inertial.inertia[3:]):
            raise self.fail(where, "turns its frame (rpy) and has products of inertia: give one or the other")
        if np.any(inertial.inertia[:3] <= 0):
            raise self.fail(f"{where}.inertia", f"needs positive principal moments, got {list(inertial.inertia)}")
        return inertial

    def box(self, data: Mapping[str, Any], key: str) -> tuple[np.ndarray, np.ndarray]:
        box = self.mapping(self.get(data, key, ""), key)
        low, high = self.vector(box, "low", key, 3), self.vector(box, "high", key, 3)
        if np.any(low >= high):
            raise self.fail(key, f"needs low < high in x, y, z; got {list(low)} and {list(high)}")
        return low, high


def profile_from_mapping(data: Any, source: str = "<mapping>", path: Path | None = None) -> RobotProfile:
    """Build and check a profile from its parsed YAML. Raises ProfileError naming the field."""
    read = _Reader(source)
    data = read.mapping(data, "the profile")
    name = read.text(data, "name", "")
    names = read.get(data, "joint_names", "")
    if (
        not isinstance(names, Sequence)
        or isinstance(names, str)
        or not names
        or not all(isinstance(n, str) and n for n in names)
    ):
        raise read.fail("joint_names", f"must be a list of joint names, got {names!r}")
    if len(set(names)) != len(names):
        raise read.fail("joint_names", f"names a joint twice: {list(names)}")
    dof = len(names)

    limits_data = read.mapping(read.get(data, "limits", ""), "limits")
    lower = read.vector(limits_data, "lower", "limits", dof)
    upper = read.vector(limits_data, "upper", "limits", dof)
    if np.any(lower >= upper):
        raise read.fail("limits", f"needs lower < upper on every joint; got {list(lower)} and {list(upper)}")
    limits = JointLimits(
        lower,
        upper,
        *(
            read.vector(limits_data, key, "limits", dof, positive=True)
            for key in ("velocity", "acceleration", "jerk", "effort")
        ),
    )
    sources = read.mapping(read.get(limits_data, "sources", "limits"), "limits.sources")
    for key in ("position", "velocity", "acceleration", "jerk", "effort"):
        read.text(sources, key, "limits.sources")

    home = read.vector(data, "home", "", dof)
    if np.any(home <= lower) or np.any(home >= upper):
        raise read.fail("home", f"must lie inside the joint limits, got {list(home)}")

    kinematics = read.mapping(read.get(data, "kinematics", ""), "kinematics")
    joint_origins = read.get(kinematics, "joints", "kinematics")
    if not isinstance(joint_origins, Sequence) or len(joint_origins) != dof:
        raise read.fail("kinematics.joints", f"must give one origin per joint ({dof})")
    tool = read.mapping(read.get(kinematics, "tool", "kinematics"), "kinematics.tool")

    dynamics_data = read.mapping(read.get(data, "dynamics", ""), "dynamics")
    links = read.get(dynamics_data, "links", "dynamics")
    if not isinstance(links, Sequence) or len(links) != dof:
        raise read.fail("dynamics.links", f"must give one inertial per joint ({dof})")
    dynamics = Dynamics(
        read.inertial(read.get(dynamics_data, "base", "dynamics"), "dynamics.base"),
        tuple(read.inertial(link, f"dynamics.links[{i}]") for i, link in enumerate(links)),
        read.inertial(read.get(dynamics_data, "tool", "dynamics"), "dynamics.tool"),
        read.vector(dynamics_data, "armature", "dynamics", dof, positive=True),
        read.vector(dynamics_data, "damping", "dynamics", dof, positive=True),
        bool(dynamics_data.get("gravity_compensated", True)),
    )

    controller_data = read.mapping(read.get(data, "controller", ""), "controller")
    settings = read.mapping(controller_data.get("settings", {}) or {}, "controller.settings")
    command_topic = read.text(controller_data, "command_topic", "controller")
    if not command_topic.startswith("/"):
        raise read.fail("controller.command_topic", f"must be an absolute topic name, got {command_topic!r}")
    controller = Controller(
        read.text(controller_data, "name", "controller"),
        command_topic,
        read.text(controller_data, "interface", "controller"),
        read.vector(controller_data, "p_gains", "controller", dof, positive=True),
        read.vector(controller_data, "d_gains", "controller", dof, positive=True),
        dict(settings),
    )

    states = read.mapping(read.get(data, "joint_states", ""), "joint_states")
    joint_states = JointStates(
        read.text(states, "topic", "joint_states"),
        read.number(states, "rate", "joint_states", positive=True),
        read.text(states, "merged_topic", "joint_states"),
        read.number(states, "merged_rate", "joint_states", positive=True),
    )

    drivers_data = read.get(data, "drivers", "")
    if not isinstance(drivers_data, Sequence) or not drivers_data:
        raise read.fail("drivers", "must list at least one driver release")
    drivers = []
    for i, entry in enumerate(drivers_data):
        where = f"drivers[{i}]"
        entry = read.mapping(entry, where)
        arguments = read.mapping(entry.get("arguments", {}) or {}, f"{where}.arguments")
        activate = entry.get("activate", []) or []
        drivers.append(
            DriverRelease(
                read.text(entry, "release", where),
                read.text(entry, "distro", where),
                read.text(entry, "package", where),
                read.text(entry, "launch_file", where),
                {str(k): str(v) for k, v in arguments.items()},
                tuple(str(step) for step in activate),
                str(entry.get("notes", "")),
            )
        )

    stop_data = read.mapping(read.get(data, "stop", ""), "stop")
    kind = read.text(stop_data, "surface", "stop")
    if kind not in STOP_SURFACES:
        raise read.fail("stop.surface", f"must be one of {', '.join(STOP_SURFACES)}, got {kind!r}")
    stop = StopSurface(
        kind,
        read.text(stop_data, "topic", "stop", default="-"),
        tuple(int(mode) for mode in stop_data.get("stopped_modes", []) or []),
    )
    recovery_data = read.mapping(read.get(data, "recovery", ""), "recovery")
    recovery = Recovery(
        read.text(recovery_data, "agent_parameter", "recovery"),
        tuple(str(step) for step in recovery_data.get("steps", []) or []),
        read.text(recovery_data, "controller_manager", "recovery", default="/controller_manager"),
        str(recovery_data.get("hardware_component", "")),
    )
    if recovery.agent_parameter.startswith("franka_hardware:") and not recovery.hardware_component:
        raise read.fail("recovery.hardware_component", "is missing: a franka_hardware recovery activates it")

    workspace_low, workspace_high = read.box(data, "workspace")
    target_low, target_high = read.box(data, "targets")
    if np.any(target_low < workspace_low) or np.any(target_high > workspace_high):
        raise read.fail("targets", "must lie inside the workspace box")

    return RobotProfile(
        name=name,
        description=read.text(data, "description", ""),
        joint_names=tuple(names),
        limits=limits,
        limit_sources=dict(sources),
        home=home,
        base=read.origin(kinematics.get("base", {}), "kinematics.base"),
        joints=tuple(read.origin(origin, f"kinematics.joints[{i}]") for i, origin in enumerate(joint_origins)),
        flange=read.origin(read.get(tool, "flange", "kinematics.tool"), "kinematics.tool.flange"),
        tcp=read.vector(tool, "tcp", "kinematics.tool", 3),
        kinematics_source=read.text(kinematics, "source", "kinematics"),
        dynamics=dynamics,
        workspace_low=workspace_low,
        workspace_high=workspace_high,
        target_low=target_low,
        target_high=target_high,
        controller=controller,
        joint_states=joint_states,
        drivers=tuple(drivers),
        stop=stop,
        recovery=recovery,
        path=path,
    )


def profile_path(robot: str) -> Path:
    """The file of a profile given by name (``config/robots/<name>.yaml``) or as a path."""
    candidate = Path(robot).expanduser()
    if candidate.suffix in (".yaml", ".yml") or "/" in robot:
        if not candidate.is_file():
            raise ProfileError(f"robot profile file '{robot}' does not exist")
        return candidate
    from spin_decoupler_ros.tools.paths import find_config

    try:
        return find_config(f"{PROFILE_FOLDER}/{robot}.yaml", package="franka_agent")
    except FileNotFoundError:
        raise ProfileError(
            f"no robot profile '{robot}': the profiles here are {', '.join(BUILT_IN_PROFILES)}, "
            f"or give the path of a profile file"
        ) from None


_LOADED: dict[Path, RobotProfile] = {}


def load_profile(robot: str) -> RobotProfile:
    """The profile named ``robot`` (``panda``, ``fr3``, ``ur5e``) or in the file at that path."""
    import yaml

    path = profile_path(robot).resolve()
    if path not in _LOADED:
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as error:
            raise ProfileError(f"robot profile {path} is not valid YAML: {error}") from None
        _LOADED[path] = profile_from_mapping(data, str(path), path)
    return _LOADED[path]
