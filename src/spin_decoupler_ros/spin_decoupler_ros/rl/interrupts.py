"""Ctrl-C on the RL side ends in ``KeyboardInterrupt``, wherever it lands.

Python raises ``KeyboardInterrupt`` where its signal handler runs. When that is inside a
Python call made from rclpy's C++ code (a message converted while the executor takes
it), the C++ side sees only that the call failed, and pybind11 raises its own
``TypeError``/``RuntimeError`` ("Unable to convert ...") in place of the interrupt: a
learner's ``except KeyboardInterrupt`` then misses it. When it is inside a finalizer
(``__del__``: rclpy's ``Future`` has one, and the executor drops a task per callback),
Python reports it as "Exception ignored" and drops it: the learner never hears of it.
``watch_for_ctrl_c`` notes that SIGINT came (keeping Python's behaviour otherwise) and
catches a dropped interrupt; ``interruptible`` turns a conversion failure back into
``KeyboardInterrupt``, and ``raise_dropped_ctrl_c`` raises a dropped one where the
client next looks. test_ctrl_c_translation.py and test_interrupts.py hold it.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

# pybind11's words for a failed conversion, which is what an interrupt inside a Python
# call from C++ looks like from outside.
CONVERSION_FAILED = "Unable to convert"


class _CtrlC:
    seen = False  # a SIGINT came since the current interruptible block began
    dropped = False  # a KeyboardInterrupt raised where Python drops it (a finalizer)
    previous_hook: Callable[[Any], object] | None = None


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _CtrlC.seen = True
    signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt, as Python's own


def _on_unraisable(unraisable: Any) -> None:
    """sys.unraisablehook: a KeyboardInterrupt Python would drop is kept, to be raised
    again (``raise_dropped_ctrl_c``); anything else goes to the hook that was in place."""
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        _CtrlC.dropped = True
        return
    previous = _CtrlC.previous_hook or sys.__unraisablehook__
    previous(unraisable)


def watch_for_ctrl_c() -> None:
    """Note SIGINTs where Python's default handler is in place (a program's own handler is
    left alone), and keep the interrupts a finalizer would drop; callable from any thread,
    and more than once."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
    if sys.unraisablehook is not _on_unraisable:
        _CtrlC.previous_hook = sys.unraisablehook
        sys.unraisablehook = _on_unraisable


def raise_dropped_ctrl_c() -> None:
    """Raise the KeyboardInterrupt that Python dropped in a finalizer, if one was: the
    client calls it wherever it waits, so a Ctrl-C never goes unheard
    (test_interrupts.py::test_a_ctrl_c_that_lands_in_a_finalizer_still_interrupts_the_step)."""
    if _CtrlC.dropped:
        _CtrlC.dropped = False
        raise KeyboardInterrupt("interrupted (Ctrl-C) while Python ran a finalizer")


@contextmanager
def interruptible() -> Iterator[None]:
    """A call into rclpy: a conversion failure that a Ctrl-C caused is raised as
    ``KeyboardInterrupt`` (from the failure); anything else as it is."""
    _CtrlC.seen = False
    try:
        yield
    except (TypeError, RuntimeError) as error:
        if _CtrlC.seen and CONVERSION_FAILED in str(error):
            raise KeyboardInterrupt("interrupted (Ctrl-C) while rclpy was taking a message") from error
        raise


def recover_executor(executor: Any, nodes: Iterable[Any]) -> None:
    """Make ``executor`` serve ``nodes`` again after an interrupt inside its spin.

    rclpy marks an entity while a handler for it is made and run (``_executor_event``, its
    callback group's active entity); an interrupt between the marking and the handler's
    end (an interrupt inside ``take``, or between the handler's making and its run) leaves
    the marks for good, and the entity, with every other in its mutually exclusive group,
    is never served again: a reset after Ctrl-C then waits forever for its goal response.
    Nothing runs here (the interrupt ended the spin), so every mark is cleared and the
    handlers left half run are dropped (rclpy 7 to 9; test_interrupts.py)."""
    for node in nodes:
        for entity in (*node.subscriptions, *node.timers, *node.clients, *node.services, *node.guards, *node.waitables):
            if getattr(entity, "_executor_event", False):
                entity._executor_event = False
            group = getattr(entity, "callback_group", None)
            if group is not None and getattr(group, "_active_entity", None) is entity:
                group.ending_execution(entity)
    lock = getattr(executor, "_tasks_lock", None)
    tasks = getattr(executor, "_tasks", None)
    if lock is not None and tasks is not None:
        with lock:
            tasks[:] = [entry for entry in tasks if not (entry[0].executing() and not entry[0].done())]


INTERRUPTED = 130  # the exit code a shell gives a command ended by SIGINT (128 + 2)


def quiet_on_ctrl_c(main: Callable[[], int], say: Callable[[], str]) -> int:
    """Run an entry point's ``main``; Ctrl-C that it did not handle itself ends it with
    the one line ``say()`` returns (where the run is, how to go on), exit code 130, no
    traceback."""
    try:
        return main()
    except KeyboardInterrupt:
        print(say(), file=sys.stderr, flush=True)
        return INTERRUPTED
