"""Start ROS 2 nodes as OS processes, and stop them for sure.

This is what ``ros2 launch`` does for the launch files in launch/; the main job, the
examples, the tests and the benchmarks use it so they run where launch is not
installed. Each node runs as ``python -m <module> --ros-args ...`` in its own process
group with its output in a log file, and ``stop()`` escalates SIGINT -> SIGTERM ->
SIGKILL with bounded waits, so nothing is ever left running.

However the starting process ends, its nodes end with it: a ``ProcessGroup`` turns a
SIGTERM into a clean stop of its nodes, and every node started here asks the kernel for
a SIGTERM when its parent dies, SIGKILL included (``die_with_parent``, called by
``run_node`` and the trainers; test_no_orphans.py).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# Set by NodeProcess for its child: the pid of the process that must outlive it.
PARENT_PID_ENV = "SPIN_DECOUPLER_PARENT_PID"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """In a process a NodeProcess started: have the kernel send ``sig`` when the parent
    dies, however it dies, and send it now if the parent is already gone. Does nothing
    elsewhere (a node started by ros2 launch, a shell, or off Linux)."""
    parent = os.environ.pop(PARENT_PID_ENV, "")  # (not for this process's own children)
    if not parent or not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    if os.getppid() != int(parent):  # it died before the request was made
        os.kill(os.getpid(), sig)


def ros_args(
    *,
    name: str | None = None,
    namespace: str | None = None,
    params: Mapping[str, Any] | None = None,
    params_files: Iterable[str | Path] = (),
    remaps: Mapping[str, str] | None = None,
    log_level: str | None = None,
) -> list[str]:
    """``--ros-args`` for a node: name, namespace, parameter files, then single parameters."""
    args = ["--ros-args"]
    if name:
        args += ["-r", f"__node:={name}"]
    if namespace:
        args += ["-r", f"__ns:={namespace if namespace.startswith('/') else '/' + namespace}"]
    for path in params_files:
        args += ["--params-file", str(path)]
    for key, value in (params or {}).items():
        args += ["-p", f"{key}:={_param_text(value)}"]
    for src, dst in (remaps or {}).items():
        args += ["-r", f"{src}:={dst}"]
    if log_level:
        args += ["--log-level", log_level]
    return args


def _param_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_param_text(v) for v in value) + "]"
    if isinstance(value, str):
        # rcl reads -p values as YAML: quote strings, or "nan", "true", "1.0" change type.
        return "'" + value.replace("'", "''") + "'"
    return str(value)


@dataclass
class NodeProcess:
    """A node (or any Python module with a main) running in its own process.

    :param module: the module to run with ``python -m``.
    :param args: its arguments (typically ``ros_args(...)``).
    :param log_path: where its stdout and stderr go (None: inherit this process's),
        appended: a restarted node (a resumed run) keeps what the last one wrote, and
        ``log_text`` reads only this start's part.
    :param env: extra environment variables.
    :param prefix: a command that runs the node, e.g. ``["ip", "netns", "exec", "agent_host"]``
        (it must exec the node in place, so signals reach it).
    """

    module: str
    args: list[str] = field(default_factory=list)
    log_path: Path | None = None
    env: Mapping[str, str] | None = None
    label: str = ""
    prefix: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)
    _log_start: int = field(default=0, init=False, repr=False)

    def start(self) -> NodeProcess:
        environment = dict(os.environ)
        environment.update(self.env or {})
        environment.setdefault("PYTHONUNBUFFERED", "1")
        environment[PARENT_PID_ENV] = str(os.getpid())
        out: IO[bytes] | int | None = None
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
            self._log_start = self._log.tell()
            out = self._log
        self.process = subprocess.Popen(
            self.argv(),
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT if out is not None else None,
            start_new_session=True,  # its own process group: signals reach all its threads and children
        )
        return self

    def argv(self) -> list[str]:
        """The command line: ``python -m module args``, after the prefix."""
        return [*self.prefix, sys.executable, "-m", self.module, *self.args]

    @property
    def name(self) -> str:
        return self.label or self.module.rsplit(".", 1)[-1]

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def wait(self, timeout: float | None = None) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` now (SIGKILL by default: a crash, for fault-injection tests)."""
        if self.running():
            assert self.process is not None
            os.killpg(self.process.pid, sig)

    def stop(self, grace: float = 5.0) -> int | None:
        """SIGINT, then SIGTERM, then SIGKILL, each with a bounded wait; return the exit code."""
        if self.process is None:
            return None
        for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            if self.process.poll() is not None:
                break
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(wait)
            except subprocess.TimeoutExpired:
                continue
        if self._log is not None:
            self._log.close()
            self._log = None
        return self.process.poll()

    def log_text(self) -> str:
        """What the node wrote to its log since this start."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as log:
            log.seek(self._log_start)
            return log.read().decode(errors="replace")

    def wait_for_log(self, text: str, timeout: float) -> bool:
        """Wait until ``text`` appears in the log (e.g. "agent ready"), the process dies, or timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return True
            if not self.running():
                return False
            time.sleep(0.02)
        return False

    def __enter__(self) -> NodeProcess:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ProcessGroup:
    """Several node processes started together and always stopped together: at the end
    of a ``with`` block, on an exception, and (in the main thread) on SIGTERM, which it
    turns into ``SystemExit`` while the block runs."""

    def __init__(self) -> None:
        self.processes: list[NodeProcess] = []
        self._previous_sigterm: Any = None

    def start(self, process: NodeProcess) -> NodeProcess:
        self.processes.append(process.start())
        return process

    def check_alive(self) -> None:
        """Raise if a process died, with the tail of its log."""
        self.check_alive_except(None)

    def check_alive_except(self, expected: NodeProcess | None) -> None:
        """Like ``check_alive``, but ``expected`` may have exited (e.g. a trainer that finished)."""
        for process in self.processes:
            if process is expected:
                continue
            code = process.returncode()
            if code is not None:
                tail = "\n".join(process.log_text().splitlines()[-20:])
                raise RuntimeError(f"{process.name} exited with code {code}:\n{tail}")

    def stop(self) -> dict[str, int | None]:
        return {p.name: p.stop() for p in reversed(self.processes)}

    def __enter__(self) -> ProcessGroup:
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) in (
            signal.SIG_DFL,
            None,
        ):
            self._previous_sigterm = signal.signal(signal.SIGTERM, _exit_on_sigterm)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            if self._previous_sigterm is not None:
                signal.signal(signal.SIGTERM, self._previous_sigterm)
                self._previous_sigterm = None


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM (``kill``, ``timeout``) in a process that started nodes: leave through the
    ``with ProcessGroup()`` blocks, which stop them."""
    raise SystemExit(128 + signum)


def find_process(module: str, argument: str) -> int | None:
    """The pid of a running ``python -m module`` whose command line has ``argument`` in
    one of its words (e.g. the trainer of one run folder), or None."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if module.encode() in command and any(argument.encode() in word for word in command):
            return int(entry.name)
    return None
