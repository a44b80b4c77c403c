"""The emulation of joint_trajectory_controller against the genuine one's golden traces.

Each file in golden/genuine_jtc holds what bench/genuine_jtc.py (``--golden``) recorded
from the genuine controller (ros2_controllers 4.42.1, built from its Jazzy release
sources) configured as a robot profile says, on one distribution's defaults: the
trajectories it took (2 s of trajectories sent to bridge from its last command, and the
last 2.5 s of a real agent's, replacing each other at every phase of their motion) and its
reference at every update it published. Each is replayed through ``core/jtc_update.py``'s update and
``core/trajectory.py``'s interpolation at the very updates the genuine controller took
them, and the emulation's reference must stay within ``POSITION_TOLERANCE`` and
``VELOCITY_TOLERANCE`` of the genuine one at every row that can be checked
(``jtc_update.replay``; bench/genuine_jtc.py measures the same over its whole runs,
``mock_vs_genuine``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from franka_agent.core.jtc_update import ControllerUpdate, largest_errors, replay_recording

pytestmark = pytest.mark.core
GOLDEN = sorted((Path(__file__).parent / "golden" / "genuine_jtc").glob("*.npz"))
# The two references come from the same numbers: they agree to 2e-15 rad and 1e-12 rad/s
# (the float arithmetic of two spline codes). A sample taken one update early or late is
# v * dt off (1e-4 rad and more at these speeds), a linear segment instead of a cubic one
# a * h^2 / 8 (1e-5 rad and more).
POSITION_TOLERANCE = 1e-9  # rad
VELOCITY_TOLERANCE = 1e-7  # rad/s


def load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as golden:
        return {name: golden[name] for name in golden.files}


def test_there_are_golden_traces_of_every_profile() -> None:
    assert {path.stem.split("_")[0] for path in GOLDEN} >= {"panda", "fr3", "ur5e"}, GOLDEN


@pytest.mark.parametrize("path", GOLDEN, ids=[path.stem for path in GOLDEN])
def test_the_emulation_follows_the_genuine_controller(path: Path) -> None:
    golden = load(path)
    assert golden["from_desired_state"], "the profiles start new trajectories from the desired state"
    result = replay_recording(golden, ControllerUpdate("jazzy", float(golden["update_period"])))
    rows = result.checkable
    # Most rows are checkable (not: a bridge whose take the publisher dropped).
    assert rows.mean() > 0.9, f"only {rows.mean():.0%} of the rows could be checked"
    position_error, velocity_error = largest_errors(golden, result)
    assert position_error <= POSITION_TOLERANCE, f"{path.stem}: the reference is {position_error:.2e} rad off"
    assert velocity_error <= VELOCITY_TOLERANCE, f"{path.stem}: the velocity is {velocity_error:.2e} rad/s off"


@pytest.mark.parametrize("path", GOLDEN[:1], ids=[path.stem for path in GOLDEN[:1]])
def test_the_traces_tell_a_changed_emulation_apart(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the test above would see if the emulation were wrong: Humble's update timing
    instead of Jazzy's, or linear segments instead of cubic ones."""
    golden = load(path)
    period = float(golden["update_period"])
    position_error, _ = largest_errors(golden, replay_recording(golden, ControllerUpdate("humble", period)))
    assert position_error > 10 * POSITION_TOLERANCE

    import franka_agent.core.trajectory as trajectory

    def linear(p0, v0, p1, v1, h, s):  # type: ignore[no-untyped-def]
        return p0 + s * (p1 - p0), (p1 - p0) / h

    monkeypatch.setattr(trajectory, "hermite", linear)
    position_error, _ = largest_errors(golden, replay_recording(golden, ControllerUpdate("jazzy", period)))
    assert position_error > 10 * POSITION_TOLERANCE
