"""Finding the workspace's config/ and launch/ files from a checkout or an install."""

from __future__ import annotations

import os
from pathlib import Path


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
