"""The interface files' comments name real fields: a comment is the reference a user reads
first, so a field it names (``StepResult.ato``, ``dropped_commands``) must exist, and any
other name it uses must be a topic, hook or package that exists under that name."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MSGS = ROOT / "src" / "spin_decoupler_msgs"
AGENT = ROOT / "src" / "spin_decoupler_ros" / "spin_decoupler_ros" / "agent"
QUALIFIED = re.compile(r"\b([A-Z][A-Za-z]+)\.([a-z][a-z0-9_]*)\b")
SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def interface_files() -> list[Path]:
    return sorted([*MSGS.glob("msg/*.msg"), *MSGS.glob("action/*.action")])


def declared_names(path: Path) -> set[str]:
    """Field and constant names of an interface (all three parts of an action)."""
    names = set()
    for line in path.read_text().splitlines():
        declaration = line.split("#", 1)[0].strip()
        if declaration and declaration != "---":
            names.add(declaration.split()[1].split("=")[0])
    return names


def comments(path: Path) -> list[tuple[int, str]]:
    return [
        (number, line.split("#", 1)[1]) for number, line in enumerate(path.read_text().splitlines(), 1) if "#" in line
    ]


def other_names() -> dict[str, bool]:
    """Names a comment may use that are not fields, each with whether it exists now."""
    agent = "".join(path.read_text() for path in sorted(AGENT.glob("*.py")))
    return {
        # topics the agent offers
        "step_command": '"step_command"' in agent,
        "step_timing": '"step_timing"' in agent,
        # the hook an agent implements
        "reset_workspace": "def reset_workspace(" in agent,
        # the package whose code the comments point to
        "spin_decoupler_ros": (ROOT / "src" / "spin_decoupler_ros" / "package.xml").is_file(),
    }


def misnamed(files: list[Path], others: dict[str, bool]) -> list[str]:
    """Every name in the files' comments that is neither a field of the interface it
    qualifies (``StepResult.ato``) nor, unqualified, a field of any interface or one of
    ``others``."""
    fields = {path.stem: declared_names(path) for path in files}
    every_field = set().union(*fields.values())
    wrong = []
    for path in files:
        for number, comment in comments(path):
            for interface, field in QUALIFIED.findall(comment):
                if interface in fields and field not in fields[interface]:
                    wrong.append(f"{path.name}:{number}: {interface}.{field} is not a field of {interface}")
            for name in SNAKE.findall(comment):
                if name not in every_field and name not in others:
                    wrong.append(f"{path.name}:{number}: {name} is no field of any interface")
    return wrong


def test_every_field_a_comment_names_exists() -> None:
    files = interface_files()
    assert {path.stem for path in files} >= {"StepCommand", "StepResult", "AgentStatus", "Episode"}
    others = other_names()
    assert all(others.values()), f"a name the comments use no longer exists: {others}"
    wrong = misnamed(files, others)
    assert not wrong, "\n".join(wrong)


def test_the_check_finds_a_misnamed_field(tmp_path: Path) -> None:
    interface = tmp_path / "Thing.msg"
    interface.write_text(
        "# counted in Thing.lost_commands, Thing.dropped_commands and dropped_things\nuint64 dropped_commands\n"
    )
    assert misnamed([interface], {}) == [
        "Thing.msg:1: Thing.lost_commands is not a field of Thing",
        "Thing.msg:1: lost_commands is no field of any interface",
        "Thing.msg:1: dropped_things is no field of any interface",
    ]
