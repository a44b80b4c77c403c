"""Ctrl-C on the RL side ends in KeyboardInterrupt, also where pybind11 would have turned
it into its own conversion error (rl/interrupts.py)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

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


def test_an_executor_interrupted_inside_a_take_serves_the_node_again() -> None:
    """A Ctrl-C inside ``take`` leaves rclpy's marks on the entity and its callback group
    (nothing in that group is served again); recover_executor clears them."""
    from std_msgs.msg import String

    from spin_decoupler_ros.rl.client import RLNode
    from spin_decoupler_ros.rl.interrupts import recover_executor

    rl_node = RLNode("interrupted_taker")
    try:
        node = rl_node.node
        heard: list[str] = []
        publisher = node.create_publisher(String, "chatter", 10)
        node.create_subscription(String, "chatter", lambda msg: heard.append(msg.data), 10)
        executor = rl_node.executor
        take = executor._take_subscription  # (where rclpy converts a message: a Ctrl-C lands there)
        interrupts = [KeyboardInterrupt()]

        def interrupted_take(entity: Any) -> Any:
            if interrupts:
                raise interrupts.pop()
            return take(entity)

        executor._take_subscription = interrupted_take  # type: ignore[method-assign,assignment]
        publisher.publish(String(data="first"))
        with pytest.raises(KeyboardInterrupt):
            for _ in range(100):
                rl_node.executor.spin_once(timeout_sec=0.05)
        publisher.publish(String(data="second"))
        for _ in range(20):  # stuck: the entity and its group stay marked
            rl_node.executor.spin_once(timeout_sec=0.02)
        assert heard == []
        recover_executor(rl_node.executor, [node])
        for _ in range(50):
            rl_node.executor.spin_once(timeout_sec=0.02)
            if len(heard) == 2:
                break
        assert heard == ["first", "second"]  # (the interrupted take took nothing)
    finally:
        rl_node.close()
