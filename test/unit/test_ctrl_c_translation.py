"""Ctrl-C on the RL side ends in KeyboardInterrupt, also where pybind11 would have turned
it into its own conversion error (rl/interrupts.py)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from spin_decoupler_ros.rl.interrupts import INTERRUPTED, interruptible, quiet_on_ctrl_c, watch_for_ctrl_c


def convert_in_cpp() -> None:
    """What rclpy's C++ side does when a Python call it made was interrupted: the
    interrupt is swallowed and a conversion error raised in its place."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)  # (the handler runs here)
    except KeyboardInterrupt:
        raise RuntimeError("Unable to convert call argument '0' to Python object") from None


@pytest.fixture
def default_sigint() -> object:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("default_sigint")
def test_an_interrupt_hidden_in_a_conversion_error_is_raised_as_keyboard_interrupt() -> None:
    watch_for_ctrl_c()
    with pytest.raises(KeyboardInterrupt, match="interrupted") as raised, interruptible():
        convert_in_cpp()
    assert isinstance(raised.value.__cause__, RuntimeError)
    # A conversion error with no Ctrl-C behind it is left as it is.
    with pytest.raises(TypeError, match="Unable to convert function return value"), interruptible():
        raise TypeError("Unable to convert function return value to a Python type")


@pytest.mark.usefixtures("default_sigint")
def test_a_programs_own_sigint_handler_is_left_alone() -> None:
    def mine(signum: int, frame: object) -> None:
        pass

    signal.signal(signal.SIGINT, mine)
    watch_for_ctrl_c()
    assert signal.getsignal(signal.SIGINT) is mine


def test_an_entry_point_ends_ctrl_c_with_its_line_and_130(capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    assert quiet_on_ctrl_c(interrupted, lambda: "where the run is") == INTERRUPTED == 130
    assert capsys.readouterr().err == "where the run is\n"
    assert quiet_on_ctrl_c(lambda: 0, lambda: "never said") == 0
