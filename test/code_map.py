"""docs/code_map.md, generated from the modules' own docstrings so it cannot drift: every
module of the packages with the first paragraph of its docstring, the purpose it names.

    ./ws exec python test/code_map.py     # rewrites docs/code_map.md

test/unit/test_code_map.py fails when the committed page differs.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "code_map.md"
PACKAGES = {
    "spin_decoupler_ros": "the decoupler: both sides' nodes, the pure logic beneath them (`core/`), examples",
    "franka_agent": "the arm: the Panda agent, its MuJoCo mock, the reach task and its trainer",
}
INTRODUCTION = """\
# Code map

Every module of the Python packages, with what it is for (the first paragraph of its
docstring; `test/code_map.py` writes this page from them). `core/` folders hold the pure
logic, without ROS; each package's own tests are in its `test/` folder, what spans
packages in the top-level `test/`. The message and action definitions are in
`src/spin_decoupler_msgs` (no code).
"""


def purpose(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(), filename=str(path))) or ""
    return " ".join(doc.split("\n\n")[0].split())


def page() -> str:
    lines = [INTRODUCTION]
    for package, what in PACKAGES.items():
        lines += [f"## {package}", "", f"{what[0].upper()}{what[1:]}.", "", "| module | what it is for |", "|---|---|"]
        base = ROOT / "src" / package / package
        for path in sorted(base.rglob("*.py")):
            if path.name == "__init__.py":
                continue
            lines.append(f"| `{path.relative_to(base).as_posix()}` | {purpose(path)} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    PAGE.write_text(page())
    print(f"wrote {PAGE}")
