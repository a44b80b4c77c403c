"""The Stable-Baselines3 that runs is the one requirements/python.txt pins: the version
``rl.training.begin_episode_again`` (the one place SB3's internals are touched) was
checked against, with src/spin_decoupler_ros/test/test_training_helpers.py. A new
version is taken by changing the pin, after that test passes on it."""

from __future__ import annotations

from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements" / "python.txt"


def test_the_sb3_that_runs_is_the_pinned_one() -> None:
    import stable_baselines3

    pins = [
        line.split("==")[1].strip()
        for line in REQUIREMENTS.read_text().splitlines()
        if line.startswith("stable-baselines3==")
    ]
    assert pins == [stable_baselines3.__version__]
