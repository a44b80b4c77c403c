"""The Panda trainer's SAC settings: the config says what the code defaults to, and an
entropy coefficient SB3 cannot take is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from franka_agent.algorithms import HYPERPARAMETERS, TEXT_SETTINGS, entropy_coefficient, gradient_steps_per_step
from spin_decoupler_ros.core.errors import ParameterError

CONFIG = Path(__file__).resolve().parents[1] / "config" / "panda_reach.yaml"


@pytest.mark.parametrize("algorithm", sorted(HYPERPARAMETERS))
def test_the_config_holds_the_trainers_defaults(algorithm: str) -> None:
    """A user reading config/panda_reach.yaml reads what a trainer without it would use."""
    configured = yaml.safe_load(CONFIG.read_text())["/**/panda_trainer"]["ros__parameters"][algorithm]
    assert configured == HYPERPARAMETERS[algorithm]


@pytest.mark.parametrize(
    ("value", "taken"), [("auto", "auto"), ("auto_0.1", "auto_0.1"), (" auto_1e-2 ", "auto_1e-2"), ("0.05", 0.05)]
)
def test_an_entropy_coefficient_is_passed_as_sb3_takes_it(value: str, taken: str | float) -> None:
    assert entropy_coefficient(value) == taken


@pytest.mark.parametrize("value", ["", "automatic", "auto_", "auto_0", "auto_-0.1", "0", "-1", "nan", "inf", "x"])
def test_an_entropy_coefficient_sb3_cannot_take_is_refused_by_name(value: str) -> None:
    with pytest.raises(ParameterError, match=r"parameter 'sac\.ent_coef' = .* above 0: SAC's entropy coefficient"):
        entropy_coefficient(value)


@pytest.mark.parametrize("algorithm", sorted(HYPERPARAMETERS))
def test_every_setting_given_as_text_has_its_parser(algorithm: str) -> None:
    """A text setting is parsed by what TEXT_SETTINGS names for it, never by another's."""
    text = {name for name, default in HYPERPARAMETERS[algorithm].items() if isinstance(default, str)}
    assert text <= set(TEXT_SETTINGS)
    assert TEXT_SETTINGS["ent_coef"][0] is entropy_coefficient


@pytest.mark.parametrize(
    ("duration", "per_second", "at_least", "steps"),
    [(0.1, 0.0, 1, 1), (0.1, 100.0, 1, 10), (0.25, 100.0, 1, 25), (0.1, 5.0, 1, 1), (0.1, 100.0, 12, 12)],
)
def test_the_gradient_steps_of_a_step_follow_its_duration(
    duration: float, per_second: float, at_least: int, steps: int
) -> None:
    """updates_per_second x the action's duration, never below the algorithm's own count;
    0 keeps SB3's fixed count per step."""
    assert gradient_steps_per_step(duration, per_second, at_least) == steps
