"""docs/nodes.md says what the nodes declare: it is generated from them, and this test
fails when the committed page and the code differ."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "node_reference.py"


def test_the_node_reference_page_matches_the_code() -> None:
    # (a process of its own: the generator initialises rclpy's default context)
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
