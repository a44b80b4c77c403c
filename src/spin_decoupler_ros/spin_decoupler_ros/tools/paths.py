"""Finding the workspace's config/ and launch/ files from a checkout or an install, and
the folders runs write to."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any


def workspace_root() -> Path | None:
    """The checkout this code runs from (``./ws`` exports it), if any."""
    env = os.environ.get("SPIN_DECOUPLER_ROOT")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "config").is_dir() and (parent / "src" / "spin_decoupler_ros").is_dir():
            return parent
    return None


def find_config(name: str, package: str = "spin_decoupler_ros") -> Path:
    """``config/<name>`` from the checkout, else from ``share/<package>/config`` of an install."""
    root = workspace_root()
    if root is not None and (root / "config" / name).is_file():
        return root / "config" / name
    try:
        from ament_index_python.packages import get_package_share_directory

        installed = Path(get_package_share_directory(package)) / "config" / name
        if installed.is_file():
            return installed
    except (ImportError, LookupError):
        pass
    raise FileNotFoundError(f"config file '{name}' is neither in the checkout's config/ nor in share/{package}/config")


RUNS_ROOT_VARIABLE = "SPIN_DECOUPLER_RUNS"
# What a trainer writes into its run folder; a folder holding any of these holds a run.
RUN_OUTPUTS = ("steps.csv", "results.json", "model.zip", "checkpoints")


def runs_root() -> Path:
    """Where run folders go: ``$SPIN_DECOUPLER_RUNS``, else ``runs/`` of the checkout this
    code runs from, else ``~/.ros/spin_decoupler/runs`` (an installed package)."""
    env = os.environ.get(RUNS_ROOT_VARIABLE)
    if env:
        return Path(env).expanduser()
    root = workspace_root()
    if root is not None:
        return root / "runs"
    return Path.home() / ".ros" / "spin_decoupler" / "runs"


def new_run_dir(task: str, root: Path | None = None, stamp: str | None = None) -> Path:
    """Make and return a fresh ``<root>/<task>/<date-time>`` folder (``-2``, ``-3``... when a
    run started in the same second): two runs never share a folder."""
    parent = (root if root is not None else runs_root()) / task
    parent.mkdir(parents=True, exist_ok=True)
    base = stamp or time.strftime("%Y%m%d-%H%M%S")
    for attempt in range(1, 1000):
        candidate = parent / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            candidate.mkdir()  # exclusive: whoever makes it owns it
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(f"no free run folder for {base} under {parent}")


def _writable_where_made(path: Path) -> bool:
    """Whether ``path`` is, or could be made, a folder this process writes to."""
    for folder in (path, *path.parents):
        if folder.exists():
            return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)
    return False


def check_run_dir(run_dir: str, task: str = "") -> Path:
    """The folder a new run would write to (``run_dir``, or ``runs_root()/task`` when it is
    empty), checked without creating anything: ParameterError if it holds a run or cannot
    be written."""
    from spin_decoupler_ros.core.errors import ParameterError

    path = Path(run_dir).expanduser() if run_dir else runs_root() / task
    if run_dir:
        held = [name for name in RUN_OUTPUTS if (path / name).exists()]
        if held:
            raise ParameterError(
                f"'{path}' already holds a run ({', '.join(held)}), which is never overwritten: leave it out for a "
                f"fresh dated folder under {runs_root()}, choose another, or go on with that run (./ws main "
                f"--resume {path}; launch: resume:={path})"
            )
    if not _writable_where_made(path):
        where = "run folders" if not run_dir else "the run"
        raise ParameterError(
            f"'{path}' cannot be written by this user, so {where} cannot go there: choose a folder you may write "
            f"(--run-dir, or ${RUNS_ROOT_VARIABLE} for all runs)"
        )
    return path


def claim_run_dir(run_dir: str, task: str) -> Path:
    """The folder a new run writes to: a fresh dated one when ``run_dir`` is empty, else
    ``run_dir`` if it holds no run yet. Nothing is ever overwritten.

    Test: ``src/spin_decoupler_ros/test/test_run_dirs.py``."""
    from spin_decoupler_ros.core.errors import ParameterError

    path = check_run_dir(run_dir, task)
    try:
        if not run_dir:
            return new_run_dir(task)
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(f"'{path}' cannot be made: {exc.strerror or exc}") from None
    return path


def declare_run_dir(node: Any, task: str, holds: str) -> Path | None:
    """Declare a trainer's ``run_dir`` parameter and claim the folder (``claim_run_dir``);
    None after printing why it cannot be used (the caller exits with status 2)."""
    from spin_decoupler_ros.core.errors import ParameterError
    from spin_decoupler_ros.params import declare_str

    run_dir = declare_str(
        node, "run_dir", "", f"{holds} (empty: a fresh dated folder under runs/); one holding a run is refused"
    )
    try:
        return claim_run_dir(run_dir, task)
    except ParameterError as exc:
        print(f"[{node.get_name()}] fatal: {exc}", file=sys.stderr, flush=True)
        return None
