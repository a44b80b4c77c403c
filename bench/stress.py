"""The stress gate: the timing-sensitive tests, many times alone and many times beside a
CPU hog pinned to one core, counting failures per test.

    ./ws bench stress                    # 30 runs idle, 30 beside the hog, alternating
    ./ws bench stress --runs 5 --columns busy_core
    ./ws bench stress --resume           # go on with the last gate, if the code is the same
    ./ws bench stress --keep-failures /tmp/stress_failures   # a failing run's logs kept
    ./ws bench stress --tests <ids> --name stress_restarts   # a few tests, their own result

Writes bench/results/stress.json: {"runs": N, "idle": {"<test id>": failures, ...},
"busy_core": {...}} and, per column, the wall time per run and every failure's first
lines, after every run. Target: no failure anywhere. The fuzz tests run
SPIN_DECOUPLER_FUZZ_STEPS steps each here (--fuzz-steps, 150; 1500 in the suite); a run
takes two to three and a half minutes, so 30 + 30 take about three hours.

The columns alternate, so a gate cut short has measured both alike. The result names the
code it measured: the commit and a fingerprint of every file the tests run (src/, the test
modules it runs and their helpers, the requirements, the pytest settings, ./ws; not the
unit or launch tests). ``--resume`` adds runs to a gate whose commit had the same files,
test list and fuzz steps as this checkout, and refuses otherwise, naming what changed: a
gate may be continued later, never across two versions of the code it runs.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, write_result

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
    "test/integration/test_panda.py::test_on_a_waiting_clock_a_tick_reads_the_state_stamped_at_its_time",
    "test/integration/test_timing_models.py::test_a_seeded_panda_training_run_repeats_its_steps_csv_in_one_process_or_two",
    "test/integration/test_timing_models.py::test_a_seeded_run_repeats_through_terminations_resets_and_a_resume",
    "test/integration/test_fuzz.py",
    "test/integration/test_scale_out.py::test_agents_step_concurrently_not_one_after_another",
    "test/integration/test_scale_out.py::test_an_agent_dying_mid_step_fails_the_vec_step_with_its_name",
    DECOUPLER + "test_lat_and_durations_agree_with_the_requested_duration",
    DECOUPLER + "test_ato_strictly_increases",
    DECOUPLER + "test_variable_per_step_durations",
    DECOUPLER + "test_no_agent_is_a_clear_error",
    DECOUPLER + "test_step_times_out_with_a_clear_error_when_the_agent_freezes",
    DECOUPLER + "test_after_a_stall_between_two_steps_the_next_step_is_served",
    DECOUPLER + "test_a_reset_against_a_frozen_agent_fails_once_its_liveliness_lapses",
    DECOUPLER + "test_a_node_on_simulated_time_stops_on_sigint_even_when_its_clock_has_stopped",
    DECOUPLER + "test_finished_episodes_leave_the_action_status_soon",
    "test/integration/test_faults.py::test_agent_killed_mid_step_ends_in_a_typed_error_within_the_timeout",
    "test/integration/test_faults.py::test_agent_holds_when_the_rl_side_dies_or_stalls_and_takes_a_new_client",
    "test/integration/test_rephase_timer.py",
    "test/integration/test_clock_offset.py",
    "test/integration/test_latest_message.py",
    "test/integration/test_robot_stops.py",
    "test/integration/test_faults.py::test_an_episode_belongs_to_its_client",
    "test/integration/test_faults.py::test_a_reset_against_an_agent_that_left_fails_at_once",
    "test/integration/test_faults.py::test_a_reset_against_a_killed_agent_fails_once_its_liveliness_lapses",
    "test/integration/test_faults.py::test_an_agent_restarted_after_a_kill_is_taken_as_soon_as_it_is_ready",
    "test/integration/test_no_orphans.py::test_a_second_agent_is_named_whenever_it_started",
    "test/integration/test_interrupts.py::test_a_learners_ctrl_c_anywhere_in_a_step_is_a_keyboard_interrupt",
    "test/integration/test_interrupts.py::test_a_ctrl_c_that_lands_in_a_finalizer_still_interrupts_the_step",
    "test/integration/test_no_orphans.py::test_a_rerun_beside_a_stray_agent_says_so_by_name",
    "test/integration/test_lifecycle.py::test_a_panda_deactivated_mid_motion_brakes_to_rest_within_the_limits",
    "test/integration/test_time_aware_env.py::test_the_learners_work_runs_while_the_agent_acts",
    "test/integration/test_executors.py::test_an_agent_waiting_for_its_learner_takes_no_cpu",
    DECOUPLER + "test_a_running_episode_is_an_executing_goal_until_it_ends",
    DECOUPLER + "test_a_step_answer_is_taken_while_polling",
    "test/integration/test_panda.py::test_the_panda_refuses_a_then_action",
)
COLUMNS = ("idle", "busy_core")
PR_SET_PDEATHSIG = 1
# What the gate's tests run: the packages, the requirements, the pytest settings, ./ws and
# the test tree, less the test modules the gate neither runs nor imports (the unit tests,
# the launch tests, the other integration modules). A change to any of it makes a new gate.
MEASURED_PATHS = ("src", "test", "requirements", "pyproject.toml", "ws")
TEST_IMPORT = re.compile(r"^(?:from|import) (test_\w+)", re.MULTILINE)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def gated_modules(commit: str, tests: list[str]) -> set[str]:
    """The test modules the gate runs at ``commit``, and those they import, transitively."""
    pending = {test.split("::")[0] for test in tests}
    modules: set[str] = set()
    while pending:
        path = pending.pop()
        if path in modules:
            continue
        modules.add(path)
        source = git("show", f"{commit}:{path}")
        folder = path.rsplit("/", 1)[0]
        pending |= {f"{folder}/{name}.py" for name in TEST_IMPORT.findall(source)} - modules
    return modules


def measured(path: str, modules: set[str]) -> bool:
    """Whether the gate's tests run ``path`` (one of MEASURED_PATHS' files)."""
    if path.startswith(("test/unit/", "test/launch/")) or re.match(r"src/[^/]+/test/", path):
        return False  # (the unit tests: in test/unit and in each package's test/)
    is_test_module = path.startswith("test/") and path.rsplit("/", 1)[-1].startswith("test_")
    return not is_test_module or path in modules


def measured_files(commit: str, tests: list[str]) -> list[str]:
    """``git ls-tree`` lines (mode, blob, path) of every file the gate's tests run at ``commit``."""
    modules = gated_modules(commit, tests)
    listing = git("ls-tree", "-r", commit, "--", *MEASURED_PATHS).splitlines()
    return [line for line in listing if measured(line.split("\t", 1)[1], modules)]


def fingerprint(commit: str, tests: list[str]) -> str:
    return hashlib.sha256("\n".join(measured_files(commit, tests)).encode()).hexdigest()[:16]


def measured_code(tests: list[str]) -> dict[str, Any]:
    """The commit, and the fingerprint of the files the tests run (None if any of them has
    uncommitted changes: such a gate cannot be resumed, as its code is in no commit)."""
    commit = git("rev-parse", "HEAD").strip()
    modules = gated_modules(commit, tests)
    status = git("status", "--porcelain", "--untracked-files=all", "--", *MEASURED_PATHS).splitlines()
    dirty = any(measured(line[3:].split(" -> ")[-1], modules) for line in status)
    return {"commit": commit, "fingerprint": None if dirty else fingerprint(commit, tests)}


def resumable(previous: dict[str, Any], result: dict[str, Any]) -> str | None:
    """Why ``previous`` cannot be continued by this gate, or None if it can. The
    fingerprints compared are both taken by this checkout's rule, of the previous gate's
    commit and of this one: the rule may change, the comparison stays like for like."""
    if "code" not in previous:
        return "it names no commit (it predates fingerprints)"
    if result["code"]["fingerprint"] is None:
        return "this checkout has uncommitted changes in the files the gate's tests run"
    for key, what in (("tests", "test list"), ("fuzz_steps", "fuzz steps")):
        if previous.get(key) != result[key]:
            return f"its {what} differs from this gate's"
    if previous["code"]["fingerprint"] is None:
        return "its code had uncommitted changes"
    before = fingerprint(previous["code"]["commit"], result["tests"])
    if before != result["code"]["fingerprint"]:
        earlier = set(measured_files(previous["code"]["commit"], result["tests"]))
        changed = earlier ^ set(measured_files("HEAD", result["tests"]))
        paths = sorted({line.split("\t", 1)[1] for line in changed})
        return f"the files its tests run changed since {previous['code']['commit'][:10]}: {', '.join(paths[:8])}"
    return None


def end_with_the_gate(sig: int = signal.SIGTERM) -> None:
    """In a child: the kernel sends ``sig`` when the gate dies, however it dies (Linux)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)


def start_hog() -> subprocess.Popen[bytes]:
    """A busy loop pinned to core 0: the tests keep both cores, one of them shared."""

    def pin() -> None:
        end_with_the_gate(signal.SIGKILL)
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
            preexec_fn=end_with_the_gate,  # pytest stops its nodes on SIGTERM
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
        if not outcomes:  # (a test id that no longer exists makes pytest run nothing)
            return {"<pytest ran no test>": "no test ran: is every test id in the gate's list still there?"}, seconds
        if keep_failures is not None and any(failure is not None for failure in outcomes.values()):
            kept = keep_failures / time.strftime("%Y%m%d-%H%M%S")
            shutil.copytree(basetemp, kept, dirs_exist_ok=True)
            print(f"[stress] a failure's folders kept in {kept}", flush=True)
        return outcomes, seconds


def new_column() -> dict[str, Any]:
    return {"runs_done": 0, "failures": {}, "failure_texts": [], "seconds_per_run": []}


def run_in_column(
    column: str, outcome: dict[str, Any], tests: tuple[str, ...], fuzz_steps: int, keep_failures: Path | None
) -> None:
    """One more run of ``tests`` in ``column`` (the hog beside it in busy_core), counted
    into ``outcome``."""
    hog = start_hog() if column == "busy_core" else None
    try:
        outcomes, took = run_once(tests, fuzz_steps, keep_failures)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    run = outcome["runs_done"]
    outcome["seconds_per_run"].append(round(took, 1))
    for test, failure in outcomes.items():
        outcome["failures"][test] = outcome["failures"].get(test, 0) + (failure is not None)
        if failure is not None:
            outcome["failure_texts"].append({"run": run, "test": test, "failure": failure})
    outcome["runs_done"] = run + 1
    failed = sum(failure is not None for failure in outcomes.values())
    print(f"[stress] {column} run {run + 1}: {len(outcomes)} tests, {failed} failed, {took:.0f} s", flush=True)


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress as it comes
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--columns", default=",".join(COLUMNS), help="idle, busy_core or both")
    parser.add_argument("--fuzz-steps", type=int, default=150)
    parser.add_argument("--tests", nargs="*", default=list(TESTS))
    parser.add_argument(
        "--name",
        default="stress",
        help="the result's name, bench/results/NAME.json (another name for a gate on a few tests)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="add runs to bench/results/NAME.json if it measured this code"
    )
    parser.add_argument(
        "--keep-failures", type=Path, default=None, help="keep a failing run's test folders (logs, records) here"
    )
    args = parser.parse_args()
    columns = [column for column in args.columns.split(",") if column]
    unknown = set(columns) - set(COLUMNS)
    if unknown:
        parser.error(f"unknown columns {sorted(unknown)}: choose from {COLUMNS}")
    result: dict[str, Any] = {
        "runs": args.runs,
        "fuzz_steps": args.fuzz_steps,
        "tests": args.tests,
        "code": measured_code(args.tests),
        "details": {},
    }
    outcomes = {column: new_column() for column in columns}
    if args.resume:
        previous = json.loads((RESULTS / f"{args.name}.json").read_text())
        refusal = resumable(previous, result)
        if refusal is not None:
            parser.error(f"--resume: bench/results/{args.name}.json cannot be continued: {refusal}")
        result["code"]["commits"] = sorted({*previous["code"].get("commits", [previous["code"]["commit"]])})
        for column in columns:
            if column in previous["details"]:
                outcomes[column] = {"failures": previous[column], **previous["details"][column]}
    result["code"].setdefault("commits", [])
    if result["code"]["commit"] not in result["code"]["commits"]:
        result["code"]["commits"].append(result["code"]["commit"])

    def report() -> None:
        """Written after every run, so an interrupted gate keeps what it measured."""
        for column in columns:
            result[column] = outcomes[column]["failures"]
            result["details"][column] = {
                key: outcomes[column][key] for key in ("runs_done", "failure_texts", "seconds_per_run")
            }
        write_result(args.name, result, quiet=True)

    report()
    while True:
        pending = [column for column in columns if outcomes[column]["runs_done"] < args.runs]
        if not pending:
            break
        # The column with fewer runs goes next: the two stay level however the gate ends.
        column = min(pending, key=lambda name: outcomes[name]["runs_done"])
        run_in_column(column, outcomes[column], tuple(args.tests), args.fuzz_steps, args.keep_failures)
        report()
    failed = sum(sum(result[column].values()) for column in columns)
    print(f"[stress] {failed} failures in {len(columns)} x {args.runs} runs")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
