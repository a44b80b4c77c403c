"""Test-wide fixtures: DDS isolation, and starting nodes as real processes.

Every test that touches ROS gets its own ROS_DOMAIN_ID and localhost-only discovery,
so parallel test runs (and a training run beside them) never hear each other.
"""

from __future__ import annotations

import faulthandler
import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from spin_decoupler_ros.tools.isolation import LOCAL_DDS, isolated_ros_environment, sb3_logs_in
from spin_decoupler_ros.tools.processes import ProcessGroup

# This process's own nodes on the tests' DDS profile too: Fast DDS reads its profiles
# once, when the process's first participant is made, whichever test makes it.
os.environ.update(LOCAL_DDS)


@pytest.fixture(scope="session", autouse=True)
def sb3_log_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """SB3's log folders under the tests' own temporary folder, not the system's."""
    with sb3_logs_in(tmp_path_factory.mktemp("sb3_logs")) as folder:
        yield folder


@pytest.fixture
def ros_domain(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A private DDS domain for this test: in this process and in every process it starts."""
    env = isolated_ros_environment()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield env


@pytest.fixture
def processes(ros_domain: dict[str, str], tmp_path: Path) -> Iterator[ProcessGroup]:
    """Start node processes in the test's domain; all are stopped when the test ends."""
    group = ProcessGroup()
    yield group
    group.stop()


# pytest-timeout's signal can only interrupt Python code: a test stuck inside C (a DDS
# call that never returns) would hold CI to its own limit. Past its timeout and this
# grace, the session writes every thread's stack to HUNG_TEST_LOG and ends (exit 1);
# ./ws test prints that file.
LAST_RESORT_GRACE_S = 120.0
HUNG_TEST_LOG = Path(os.environ.get("SPIN_DECOUPLER_HUNG_TEST_LOG", "log/hung_test.txt"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    """Arm the last-resort watchdog for this test's setup, call and teardown."""
    marker = item.get_closest_marker("timeout")
    timeout = float(marker.args[0]) if marker and marker.args else float(item.config.getini("timeout") or 0)
    log = None
    if timeout > 0:
        HUNG_TEST_LOG.parent.mkdir(parents=True, exist_ok=True)
        log = HUNG_TEST_LOG.open("w")
        log.write(f"{item.nodeid} still running {timeout + LAST_RESORT_GRACE_S:.0f} s after it started:\n")
        log.flush()
        faulthandler.dump_traceback_later(timeout + LAST_RESORT_GRACE_S, exit=True, file=log)
    try:
        yield
    finally:
        if log is not None:
            faulthandler.cancel_dump_traceback_later()
            log.close()
            HUNG_TEST_LOG.unlink(missing_ok=True)


def pytest_configure(config: pytest.Config) -> None:
    """Load launch_pytest's plugin where launch is importable but not registered as a plugin."""
    try:
        import launch_pytest  # noqa: F401
    except ImportError:
        return
    if not config.pluginmanager.has_plugin("launch_pytest"):
        config.pluginmanager.import_plugin("launch_pytest.plugin")
