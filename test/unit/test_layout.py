"""The design card's layout, read from the source: the arrows between the rooms
(DEVELOPERS.md, "Layout": no arrow back up, no ROS in the pure logic) and the size of
a room (a file of the packages' code over LIMIT lines says why it is one thing)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGES = ("spin_decoupler_ros", "franka_agent")
LIMIT = 430  # lines
# Files over LIMIT, each with why it is one thing.
ONE_THING = {
    "spin_decoupler_ros/spin_decoupler_ros/rl/channel.py": (
        "one agent's link as the RL side holds it: sending, receiving and discovery share its episode's state "
        "(what is pure, the answer and the refusal, is in step_answer.py and refusal.py)"
    ),
    "spin_decoupler_ros/spin_decoupler_ros/agent/agent_node.py": (
        "the lifecycle and the hooks an agent implements, each hook's docstring its contract; the rest of the "
        "agent is in the rooms beside it"
    ),
}


def module_of(path: Path) -> str:
    """``src/<package>/<package>/a/b.py`` as ``<package>.a.b`` (a package's ``__init__``
    as the package)."""
    parts = list(path.relative_to(SRC).with_suffix("").parts[1:])
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it (in a function, under
    TYPE_CHECKING): for ``from a import b`` both ``a`` and ``a.b`` (b may be a module)."""
    package = module_of(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_of(path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def sources(*parts: str) -> list[Path]:
    files = sorted(SRC.joinpath(*parts).rglob("*.py"))
    assert files, f"no sources under {parts}"
    return files


def offending(files: list[Path], forbidden: str) -> list[str]:
    return [
        f"{path.relative_to(SRC)} imports {module}"
        for path in files
        for module in sorted(imports_of(path))
        if module == forbidden or module.startswith(forbidden + ".")
    ]


def test_spin_decoupler_ros_never_imports_franka_agent() -> None:
    assert offending(sources("spin_decoupler_ros"), "franka_agent") == []


@pytest.mark.parametrize("core", ["spin_decoupler_ros/spin_decoupler_ros/core", "franka_agent/franka_agent/core"])
def test_the_pure_logic_never_imports_ros(core: str) -> None:
    files = sources(core)
    for ros in (
        "rclpy",
        "spin_decoupler_msgs",
        "rosgraph_msgs",
        "sensor_msgs",
        "trajectory_msgs",
        "builtin_interfaces",
    ):
        assert offending(files, ros) == []


def test_the_rl_side_never_imports_the_agent_side() -> None:
    assert offending(sources("spin_decoupler_ros", "spin_decoupler_ros", "rl"), "spin_decoupler_ros.agent") == []


def test_the_agent_never_imports_the_mock() -> None:
    """Nothing the Panda agent loads, however indirectly, is the mock's."""
    ours = {module_of(path): path for package in PACKAGES for path in sources(package)}
    seen, todo = set(), ["franka_agent.panda_agent_node"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo += [name for name in imports_of(ours[module]) if name in ours]
    assert len(seen) > 10
    assert sorted(name for name in seen if name.startswith("franka_agent.mock")) == []


def test_the_msgs_package_holds_no_code() -> None:
    assert sorted(SRC.joinpath("spin_decoupler_msgs").rglob("*.py")) == []
    assert sorted(SRC.joinpath("spin_decoupler_msgs").rglob("*.c*")) == []


def test_a_file_over_the_limit_says_why_it_is_one_thing() -> None:
    code = [path for package in PACKAGES for path in SRC.joinpath(package, package).rglob("*.py")]
    sizes = {str(path.relative_to(SRC)): len(path.read_text().splitlines()) for path in code}
    over = sorted(name for name, lines in sizes.items() if lines > LIMIT)
    assert over == sorted(ONE_THING), {name: sizes.get(name) for name in set(over) ^ set(ONE_THING)}


def test_the_import_reader_sees_every_form(tmp_path: Path) -> None:
    package = tmp_path / "franka_agent" / "franka_agent"
    package.mkdir(parents=True)
    module = package / "m.py"
    module.write_text(
        "import rclpy\nfrom franka_agent.mock import mock_hardware_node\nfrom . import arm_state\n"
        "def f():\n    from spin_decoupler_ros.agent.agent_node import AgentNode\n"
    )
    global SRC
    saved, SRC = SRC, tmp_path
    try:
        found = imports_of(module)
    finally:
        SRC = saved
    assert {
        "rclpy",
        "franka_agent.mock",
        "franka_agent.mock.mock_hardware_node",
        "franka_agent.arm_state",
        "spin_decoupler_ros.agent.agent_node",
    } <= found
