"""Configuration mistakes are named at start-up, in one line and no traceback: a typo in a
parameter name (with the nearest declared one), a params file that is missing, broken or
empty; and an integer where a float is declared is taken as the float it means. Each
node started as a process, as a user starts it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import panda_config, run_module, start_node

from spin_decoupler_ros.tools.processes import ProcessGroup, ros_args

PLANT = "spin_decoupler_ros.examples.first_order_plant.agent"
MOCK = "franka_agent.mock.mock_hardware_node"
TRAINER = "franka_agent.train"
SIM_ROBOT = "franka_agent.sim_robot"


def refused(module: str, args: list[str]) -> str:
    """Run a node that must refuse to start: its one-line error (exit code 2)."""
    done = run_module(module, *args, timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode == 2, f"exit {done.returncode}:\n{output}"
    assert "Traceback" not in output, output
    return output


@pytest.mark.parametrize("module", [PLANT, MOCK, TRAINER])
def test_a_misspelled_parameter_is_named_with_the_nearest_declared_one(module: str) -> None:
    wrong, meant = {PLANT: ("contol_rate", "control_rate"), MOCK: ("speed_facter", "speed_factor")}.get(
        module, ("total_timestep", "total_timesteps")
    )
    output = refused(module, ros_args(params={wrong: 3.0}))
    assert f"has no parameter '{wrong}' (did you mean '{meant}'?)" in output


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("", "is empty"),
        ("# only a comment\n", "is empty"),
        ("/**:\n  ros__parameters:\n    control_rate: [1, \n", "is not valid YAML at line"),
        (None, "cannot be read"),
    ],
)
@pytest.mark.parametrize("module", [PLANT, TRAINER])
def test_a_bad_params_file_is_named(module: str, content: str | None, said: str, tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    if content is not None:
        path.write_text(content)
    output = refused(module, ros_args(params_files=[path]))
    assert f"params file '{path}' {said}" in output


def test_an_integer_is_taken_where_a_float_is_declared(processes: ProcessGroup, tmp_path: Path) -> None:
    path = tmp_path / "plant.yaml"
    path.write_text("/**:\n  ros__parameters:\n    control_rate: 100\n    rl_timestep: 1\n    gain: 2\n")
    agent = start_node(processes, PLANT, tmp_path, params_files=(path,))
    assert "control period 10 ms" in agent.log_text() and "rl_timestep 1 s" in agent.log_text()


@pytest.mark.parametrize(
    ("agent", "mock", "wrong", "meant"),
    [
        ({"contol_rate": 100.0}, {}, "contol_rate", "control_rate"),
        ({}, {"speed_facter": 0.0}, "speed_facter", "speed_factor"),
    ],
)
def test_a_misspelled_parameter_of_either_node_of_a_one_process_robot_is_named(
    agent: dict[str, object], mock: dict[str, object], wrong: str, meant: str, tmp_path: Path
) -> None:
    """sim_robot.py: each node's own section of the node-keyed params file is checked."""
    from franka_agent.robots import sim_robot_args

    args = sim_robot_args(panda_config(), "", {"use_sim_time": True, **agent}, mock, tmp_path / "robot.yaml")
    output = refused(SIM_ROBOT, args)
    assert f"has no parameter '{wrong}' (did you mean '{meant}'?)" in output


def test_an_entropy_coefficient_sac_cannot_take_is_named() -> None:
    output = refused(TRAINER, ros_args(params={"sac.ent_coef": "auto_-1"}))
    assert "parameter 'sac.ent_coef' = 'auto_-1' is not 'auto', 'auto_<initial value>' or a number, above 0" in output


def test_a_discount_above_one_is_named() -> None:
    output = refused(TRAINER, ros_args(params={"sac.gamma": 1.5}))
    assert "parameter 'sac.gamma' = 1.5 is outside the allowed range [0, 1]: SAC gamma" in output
