"""Each package.xml declares exactly what its package imports or starts, so that
``rosdep install --from-paths src`` gives a workspace whose packages import."""

from __future__ import annotations

import ast
import re
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

SRC = Path(__file__).resolve().parents[2] / "src"
PYTHON_PACKAGES = ("spin_decoupler_ros", "franka_agent")
# Python modules that are not ROS packages, by their rosdep key (rosdistro's rosdep/python.yaml).
ROSDEP_KEYS = {
    "numpy": "python3-numpy",
    "yaml": "python3-yaml",
    "matplotlib": "python3-matplotlib",
    "torch": "python3-torch",
    "gymnasium": "python3-gymnasium-pip",
    "stable_baselines3": "python3-stable-baselines3-pip",
    "mujoco": "python3-mujoco-pip",
    "mcap": "mcap-ros2-support",  # rosdep's key for the MCAP packages installs mcap with it
}
# Needed at run time without an import of ours, each for a stated reason.
RUN_TIME_ONLY = {
    "spin_decoupler_ros": {"python3-pygame"},  # Gymnasium's LunarLander module imports it
}


def declared(package_xml: Path) -> set[str]:
    """Every run-time dependency (depend, exec_depend, build_export_depend), conditions included."""
    root = ElementTree.parse(package_xml).getroot()
    tags = ("depend", "exec_depend", "build_export_depend")
    return {element.text.strip() for tag in tags for element in root.iter(tag) if element.text}


def imported_modules(files: list[Path]) -> set[str]:
    """Top-level modules the files import (absolute imports; the standard library left out)."""
    modules: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names)


def launched_packages(launch_files: list[Path]) -> set[str]:
    """ROS packages the launch files include or start nodes from."""
    pattern = re.compile(r"""(?:FindPackageShare\(|package=)\s*["'](\w+)["']""")
    return {name for path in launch_files for name in pattern.findall(path.read_text())}


def needed(package: str) -> set[str]:
    root = SRC / package
    code = sorted((root / package).rglob("*.py"))
    launch_files = sorted((root / "launch").glob("*.launch.py"))
    modules = imported_modules(code + launch_files) | launched_packages(launch_files)
    modules.discard(package)
    return {ROSDEP_KEYS.get(module, module) for module in modules} | RUN_TIME_ONLY.get(package, set())


# What a machine that runs only agents starts (a robot PC beside the arm): these modules,
# with everything of ours they import, and the packages' launch files.
AGENT_MODULES = {
    "spin_decoupler_ros": (
        "spin_decoupler_ros.examples.first_order_plant.agent",
        "spin_decoupler_ros.skeletons.skeleton_agent",
    ),
    "franka_agent": ("franka_agent.panda_agent_node",),
}
AGENT_ONLY = 'condition="$SPIN_DECOUPLER_SIDE != agent"'


def module_file(module: str) -> Path | None:
    """The source file of one of our modules, or None if it is not ours."""
    top = module.split(".")[0]
    if top not in PYTHON_PACKAGES:
        return None
    base = SRC / top / Path(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def agent_side_files(package: str) -> list[Path]:
    """The agents' modules and every module of ours they import, at any depth (in a
    function too), with the packages above them; and the package's launch files."""
    files: set[Path] = set()
    todo = list(AGENT_MODULES[package])
    while todo:
        module = todo.pop()
        path = module_file(module)
        if path is None or path in files:
            continue
        files.add(path)
        parts = module.split(".")
        todo += [".".join(parts[:end]) for end in range(1, len(parts))]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                todo += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return sorted(files) + sorted((SRC / package / "launch").glob("*.launch.py"))


def needed_by_agents(package: str) -> set[str]:
    files = agent_side_files(package)
    modules = imported_modules(files) | launched_packages([path for path in files if path.name.endswith(".launch.py")])
    return {ROSDEP_KEYS.get(module, module) for module in modules} - set(PYTHON_PACKAGES)


@pytest.mark.parametrize("package", PYTHON_PACKAGES)
def test_what_only_the_learner_needs_is_left_out_on_an_agent_only_machine(package: str) -> None:
    """``SPIN_DECOUPLER_SIDE=agent rosdep install`` leaves out exactly what the agents do
    not import: no torch, SB3, Gymnasium or pygame on a robot PC."""
    text = (SRC / package / "package.xml").read_text()
    learner_only = {name for name in declared(SRC / package / "package.xml") if f"{AGENT_ONLY}>{name}<" in text}
    agents = needed_by_agents(package)
    # Python modules only: ROS packages come with any ROS install, and stay unconditional.
    python_keys = set(ROSDEP_KEYS.values()) | RUN_TIME_ONLY.get(package, set())
    assert learner_only == (needed(package) - agents) & python_keys, (
        f"{package}/package.xml: conditioned on the side {sorted(learner_only)}, the agents need {sorted(agents)}"
    )
    assert {"python3-torch", "python3-stable-baselines3-pip", "python3-gymnasium-pip"} <= learner_only
    requirements = (SRC.parent / "requirements" / "agent.txt").read_text()
    pip_names = {"python3-numpy": "numpy", "python3-yaml": "pyyaml", "python3-mujoco-pip": "mujoco"}
    for key in agents & set(pip_names):
        assert re.search(rf"^{pip_names[key]}\b", requirements, re.M), f"requirements/agent.txt lacks {pip_names[key]}"


@pytest.mark.parametrize("package", PYTHON_PACKAGES)
def test_a_python_package_declares_exactly_what_it_imports(package: str) -> None:
    missing = needed(package) - declared(SRC / package / "package.xml")
    unused = declared(SRC / package / "package.xml") - needed(package)
    assert not missing, f"{package}/package.xml lacks {sorted(missing)}"
    assert not unused, f"{package}/package.xml declares {sorted(unused)}, which nothing in {package} uses"


def test_the_interface_package_declares_exactly_the_interfaces_it_uses() -> None:
    root = SRC / "spin_decoupler_msgs"
    definitions = [*root.glob("msg/*.msg"), *root.glob("action/*.action")]
    used = {match for path in definitions for match in re.findall(r"^\s*(\w+)/\w+", path.read_text(), re.M)}
    if list(root.glob("action/*.action")):
        used.add("action_msgs")  # the generated action types are built on it
    assert declared(root / "package.xml") == used | {"rosidl_default_runtime"}


def test_the_checker_sees_an_import_missing_from_a_manifest(tmp_path: Path) -> None:
    """The comparison above can fail: a module importing a package the manifest lacks."""
    module = tmp_path / "uses_geometry.py"
    module.write_text("from geometry_msgs.msg import Pose\nimport numpy as np\nimport os\n")
    assert imported_modules([module]) == {"geometry_msgs", "numpy"}
    launch = tmp_path / "x.launch.py"
    launch.write_text('Node(package="controller_manager")\nFindPackageShare("franka_bringup")\n')
    assert launched_packages([launch]) == {"controller_manager", "franka_bringup"}


def test_every_package_carries_its_license_and_changelog() -> None:
    license_text = (SRC.parent / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in license_text and "Version 3" in license_text
    for package_xml in SRC.glob("*/package.xml"):
        root = ElementTree.parse(package_xml).getroot()
        assert root.findtext("license") == "GPL-3.0-only", package_xml
        assert (package_xml.parent / "LICENSE").read_text() == license_text, "a copied package keeps its license"
        changelog = package_xml.parent / "CHANGELOG.rst"
        assert changelog.is_file(), f"{changelog} is missing"
        assert re.search(rf"^{re.escape(root.findtext('version') or '')} \(", changelog.read_text(), re.M), (
            f"{changelog} has no entry for version {root.findtext('version')}"
        )


def test_the_packages_share_one_version_and_the_changelog_records_it() -> None:
    """One version for the three packages, in package.xml, setup.py, their CHANGELOG.rst and
    the newest release of CHANGELOG.md; the changelog holds versions, not dated entries."""
    versions = {
        package_xml.parent.name: ElementTree.parse(package_xml).getroot().findtext("version")
        for package_xml in SRC.glob("*/package.xml")
    }
    assert len(versions) == 3 and len(set(versions.values())) == 1, versions
    version = next(iter(versions.values()))
    for package in PYTHON_PACKAGES:
        assert f'version="{version}"' in (SRC / package / "setup.py").read_text(), (
            f"{package}/setup.py is not at {version}"
        )
    changelog = (SRC.parent / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (.*)$", changelog, re.M)
    release = re.compile(r"\[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}")
    assert headings[0] == "[Unreleased]", "CHANGELOG.md starts with [Unreleased]"
    assert all(release.fullmatch(heading) for heading in headings[1:]), f"not a version section: {headings}"
    assert release.fullmatch(headings[1]).group(1) == version, f"CHANGELOG.md's newest release is not {version}"  # type: ignore[union-attr]
    sections = set(re.findall(r"^### (.*)$", changelog, re.M))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, sections
