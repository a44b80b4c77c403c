"""The stress gate: the timing-sensitive tests, many times alone and many times beside a
CPU hog pinned to one core, counting failures per test.

    ./ws bench stress                    # 30 runs idle, 30 beside the hog
    ./ws bench stress --runs 5 --columns busy_core
    ./ws bench stress --keep-failures /tmp/stress_failures   # a failing run's logs kept

Writes bench/results/stress.json: {"runs": N, "idle": {"<test id>": failures, ...},
"busy_core": {...}} and, per column, the wall time per run and every failure's first
lines. Target: no failure anywhere. The fuzz tests run SPIN_DECOUPLER_FUZZ_STEPS steps
each here (--fuzz-steps, 150; 1500 in the suite), so a run takes a minute and a half
(30 x 2 runs: about 90 minutes on the 2-core machine).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import write_result

ROOT = Path(__file__).resolve().parent.parent
# Every test whose outcome could depend on timing: the Panda under stalls and adversarial
# actions (the mock checks every update), the fuzz runs, the VecEnv's concurrency, and
# every test that compares a measured time or a timeout with a bound.
DECOUPLER = "test/integration/test_decoupler.py::"
TESTS = (
    "test/integration/test_panda.py::test_an_agent_frozen_mid_motion_leaves_the_arm_braked_and_resumes_within_the_limits",
    "test/integration/test_panda.py::test_stalls_while_braking_while_resetting_and_between_steps_break_no_limit",
    "test/integration/test_panda.py::test_adversarial_actions_never_violate_the_limits",
    "test/integration/test_panda.py::test_mock_refuses_a_trajectory_that_ends_moving_as_newer_controllers_do",
    "test/integration/test_fuzz.py",
    "test/integration/test_scale_out.py::test_agents_step_concurrently_not_one_after_another",
    "test/integration/test_scale_out.py::test_an_agent_dying_mid_step_fails_the_vec_step_with_its_name",
    DECOUPLER + "test_lat_and_durations_agree_with_the_requested_duration",
    DECOUPLER + "test_ato_strictly_increases",
    DECOUPLER + "test_variable_per_step_durations",
    DECOUPLER + "test_no_agent_is_a_clear_error",
    DECOUPLER + "test_step_times_out_with_a_clear_error_when_the_agent_freezes",
    DECOUPLER + "test_after_a_stall_between_two_steps_the_next_step_is_served",
    DECOUPLER + "test_reset_times_out_with_a_clear_error_when_the_agent_freezes",
    DECOUPLER + "test_a_node_on_simulated_time_stops_on_sigint_even_when_its_clock_has_stopped",
    "test/integration/test_faults.py::test_agent_killed_mid_step_ends_in_a_typed_error_within_the_timeout",
    "test/integration/test_faults.py::test_agent_holds_when_the_rl_side_dies_or_stalls_and_takes_a_new_client",
    "test/integration/test_rephase_timer.py",
    "test/integration/test_clock_offset.py",
    "test/integration/test_latest_message.py",
    "test/integration/test_robot_stops.py",
    "test/integration/test_faults.py::test_an_episode_belongs_to_its_client",
    "test/integration/test_faults.py::test_a_reset_against_an_agent_that_left_fails_at_once",
    "test/integration/test_no_orphans.py::test_a_rerun_beside_a_stray_agent_says_so_by_name",
    "test/integration/test_lifecycle.py::test_a_panda_deactivated_mid_motion_brakes_to_rest_within_the_limits",
)
COLUMNS = ("idle", "busy_core")


def start_hog() -> subprocess.Popen[bytes]:
    """A busy loop pinned to core 0: the tests keep both cores, one of them shared."""

    def pin() -> None:
        os.sched_setaffinity(0, {0})

    return subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin)


def node_id(case: ET.Element) -> str:
    module = case.get("classname", "").replace(".", "/")
    return f"{module}.py::{case.get('name')}"


def run_once(
    tests: tuple[str, ...], fuzz_steps: int, keep_failures: Path | None = None
) -> tuple[dict[str, str | None], float]:
    """One pytest run of ``tests``: each test id with None (passed) or its failure's text.
    With ``keep_failures``, a run with a failure leaves its tests' folders (the nodes'
    logs, the mock's violation records) there."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.xml"
        basetemp = Path(scratch) / "tests"
        env = {**os.environ, "SPIN_DECOUPLER_FUZZ_STEPS": str(fuzz_steps)}
        started = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                *tests,
                "-q",
                "-p",
                "no:cacheprovider",
                f"--junitxml={report}",
                f"--basetemp={basetemp}",
            ],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        seconds = time.monotonic() - started
        if not report.exists():
            return {"<pytest did not report>": "no junit report"}, seconds
        outcomes: dict[str, str | None] = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            if case.find("skipped") is not None:
                continue
            outcomes[node_id(case)] = None if problem is None else (problem.get("message") or "")[:400]
        if keep_failures is not None and any(failure is not None for failure in outcomes.values()):
            kept = keep_failures / time.strftime("%Y%m%d-%H%M%S")
            shutil.copytree(basetemp, kept, dirs_exist_ok=True)
            print(f"[stress] a failure's folders kept in {kept}", flush=True)
        return outcomes, seconds


def run_column(
    column: str,
    runs: int,
    tests: tuple[str, ...],
    fuzz_steps: int,
    report: Callable[[dict[str, Any]], None],
    keep_failures: Path | None = None,
) -> dict[str, Any]:
    """``runs`` runs of ``tests``; ``report`` gets the column's figures after each run."""
    outcome: dict[str, Any] = {"runs_done": 0, "failures": {}, "failure_texts": [], "seconds_per_run": []}
    hog = start_hog() if column == "busy_core" else None
    try:
        for run in range(runs):
            outcomes, took = run_once(tests, fuzz_steps, keep_failures)
            outcome["seconds_per_run"].append(round(took, 1))
            for test, failure in outcomes.items():
                outcome["failures"][test] = outcome["failures"].get(test, 0) + (failure is not None)
                if failure is not None:
                    outcome["failure_texts"].append({"run": run, "test": test, "failure": failure})
            outcome["runs_done"] = run + 1
            report(outcome)
            failed = sum(failure is not None for failure in outcomes.values())
            print(
                f"[stress] {column} run {run + 1}/{runs}: {len(outcomes)} tests, {failed} failed, {took:.0f} s",
                flush=True,
            )
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    return outcome


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress as it comes
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--columns", default=",".join(COLUMNS), help="idle, busy_core or both")
    parser.add_argument("--fuzz-steps", type=int, default=150)
    parser.add_argument("--tests", nargs="*", default=list(TESTS))
    parser.add_argument(
        "--keep-failures", type=Path, default=None, help="keep a failing run's test folders (logs, records) here"
    )
    args = parser.parse_args()
    columns = [column for column in args.columns.split(",") if column]
    unknown = set(columns) - set(COLUMNS)
    if unknown:
        parser.error(f"unknown columns {sorted(unknown)}: choose from {COLUMNS}")
    result: dict[str, Any] = {"runs": args.runs, "fuzz_steps": args.fuzz_steps, "tests": args.tests, "details": {}}

    def report(column: str, outcome: dict[str, Any]) -> None:
        """Written after every run, so an interrupted gate keeps what it measured."""
        result[column] = outcome["failures"]
        result["details"][column] = {key: outcome[key] for key in ("runs_done", "failure_texts", "seconds_per_run")}
        write_result("stress", result, quiet=True)

    for column in columns:
        run_column(
            column, args.runs, tuple(args.tests), args.fuzz_steps, functools.partial(report, column), args.keep_failures
        )
    failed = sum(sum(result[column].values()) for column in columns)
    print(f"[stress] {failed} failures in {len(columns)} x {args.runs} runs")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
