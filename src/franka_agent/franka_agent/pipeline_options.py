"""What the main job accepts: its command line, and every option and file checked before
anything is created or started (a Refusal names the first that is wrong;
test_pipeline_refusals.py, test_pipeline_options.py)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.tools.paths import check_run_dir, find_config

OPTIONS_FILE = "options.json"
TASK = "panda_reach"  # run folders go under <runs>/panda_reach/


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=os.environ.get("SPIN_DECOUPLER_COMMAND", "python -m franka_agent.pipeline"),
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--robot",
        default="panda",
        help="the arm's profile: panda (default), fr3, ur5e (config/robots/) or the path of a profile file",
    )
    parser.add_argument("--config", help="parameters YAML (default: config/panda_reach.yaml)")
    parser.add_argument(
        "--total-timesteps",
        type=int,
        help="train exactly this many steps (default: until the config's stop_at_success share of the last "
        "success_window episodes succeeds, within the config's total_timesteps)",
    )
    parser.add_argument(
        "--sim-speed",
        type=float,
        default=0.0,
        help="simulated seconds per wall second of the mock; 0 (default): as fast as the agent, in lockstep",
    )
    parser.add_argument(
        "--timing-model",
        help="how long the mock's world runs on while the learner thinks: wall (as it happens), none, "
        "fixed:<s>, lognormal:<median>,<p99> or replay:<steps.csv> (docs/time_models.md); default: replay of "
        "this learner's think times at real time (config/think_times_panda_sac.csv)",
    )
    parser.add_argument(
        "--one-process",
        choices=("auto", "yes", "no"),
        default="auto",
        help="run each mock arm and its agent in one process (franka_agent.sim_robot); auto (default): yes under "
        "any timing model but wall, where the run is the same either way",
    )
    parser.add_argument("--rl-timestep", type=float, help="seconds of one RL step (default: the config's)")
    parser.add_argument("--control-rate", type=float, help="agent control rate in Hz (default: the config's)")
    parser.add_argument("--algorithm", choices=("sac", "td3"), help="default: the config's")
    parser.add_argument("--seed", type=int, help="default: the config's")
    parser.add_argument("--eval-episodes", type=int, help="default: the config's")
    parser.add_argument(
        "--num-agents", type=int, default=1, help="mock Pandas and agents to train on at once (/panda0...)"
    )
    parser.add_argument(
        "--run-dir", help="run folder (default: a fresh runs/panda_reach/<date-time>; one holding a run is refused)"
    )
    parser.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help=f"go on with that run from its latest checkpoint, with the options it was started with "
        f"(RUN_DIR/{OPTIONS_FILE}); logs appended",
    )
    parser.add_argument(
        "--extend-to",
        type=int,
        metavar="STEPS",
        help="with --resume of a finished run: train it on to STEPS in all (its results, model and plots are "
        "kept in RUN_DIR/finished_at_<steps>/); a finished run is otherwise never trained or evaluated again",
    )
    parser.add_argument(
        "--evaluate",
        metavar="MODEL_ZIP",
        help="evaluate a trained policy (a run's model.zip) over --eval-episodes instead of training; "
        "e.g. with --sim-speed 1 --timing-model wall, at real time",
    )
    parser.add_argument(
        "--real-time-eval",
        choices=("auto", "yes", "no"),
        default="auto",
        help="after training, evaluate the policy over --eval-episodes with the mock at real time under wall, as "
        "on the arm (into RUN_DIR/real_time_eval/, its figures in results.json); auto (default): yes when the "
        "training ran otherwise",
    )
    parser.add_argument("--checkpoint-every", type=int, help="steps between checkpoints (default: the config's)")
    parser.add_argument(
        "--use-mock-hardware",
        default="true",
        choices=("true", "false"),
        help="false drives a real Panda: that needs franka_ros2, so use the launch file",
    )
    return parser


class Refusal(ValueError):
    """A user's mistake, said in one line before anything starts (exit code 2)."""


# The ranges the nodes' parameters take (franka_agent.train, AgentNode), checked here
# first: a refusal must come before a run folder or a node exists.
RANGES: dict[str, tuple[float, float]] = {
    "total_timesteps": (1, float("inf")),
    "extend_to": (1, float("inf")),
    "eval_episodes": (1, float("inf")),
    "seed": (0, float("inf")),
    "num_agents": (1, 64),
    "checkpoint_every": (0, float("inf")),
    "sim_speed": (0.0, 1e6),
    "rl_timestep": (1e-4, 60.0),
    "control_rate": (1.0, 5000.0),
}


def check_ranges(args: argparse.Namespace) -> None:
    for name, (low, high) in RANGES.items():
        value = getattr(args, name, None)
        if value is not None and not low <= value <= high:
            allowed = f"at least {low:g}" if high == float("inf") else f"from {low:g} to {high:g}"
            raise Refusal(f"--{name.replace('_', '-')} {value:g}: must be {allowed}")


def options_of_the_run(args: argparse.Namespace, parser: argparse.ArgumentParser, run_dir: Path) -> None:
    """On a resume, take the options the run was started with; an option given again
    with another value is refused, naming it (a run is one experiment)."""
    recorded_path = run_dir / OPTIONS_FILE
    if not recorded_path.is_file():
        raise Refusal(f"{recorded_path} does not exist, so the run's options are unknown")
    recorded = json.loads(recorded_path.read_text())
    for name, value in recorded.items():
        given = getattr(args, name, None)
        if given != parser.get_default(name) and given != value:
            flag = "--" + name.replace("_", "-")
            started = f"{flag} {value}" if value is not None else f"the config's {name} (no {flag})"
            extend = "; to train a finished run further: --extend-to STEPS" if name == "total_timesteps" else ""
            raise Refusal(f"the run was started with {started}, not {flag} {given}: leave it out{extend}")
        setattr(args, name, value)


def check_resume(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """A resume's folder, checkpoint, step log and options agree, and it rewrites nothing."""
    from spin_decoupler_ros.rl.checkpoint import CheckpointError, check_log, read_latest, refuse_to_rewrite

    run_dir = Path(args.resume)
    if args.run_dir and Path(args.run_dir) != run_dir:
        raise Refusal("--resume goes on in the run's own folder: leave out --run-dir")
    try:
        latest = read_latest(run_dir)
        check_log(run_dir / "steps.csv", latest)
        options_of_the_run(args, parser, run_dir)
        if args.extend_to is not None:
            if args.extend_to <= latest.step:
                raise Refusal(f"--extend-to {args.extend_to}: the run has trained {latest.step} steps already")
            args.total_timesteps = args.extend_to
        rewrite = refuse_to_rewrite(run_dir, latest.step, args.total_timesteps or 0)
    except CheckpointError as exc:
        raise Refusal(str(exc)) from None
    if rewrite is not None:
        raise Refusal(rewrite)
    if not os.access(run_dir, os.W_OK):
        raise Refusal(f"{run_dir} is not writable: the resumed run appends to it")


def check_step_timing(args: argparse.Namespace) -> None:
    """The agent's rule, checked here first: an RL step lasts longer than a control period
    (--rl-timestep and --control-rate, or the config's values)."""
    import yaml

    config = Path(args.config) if args.config else find_config("panda_reach.yaml", package="franka_agent")
    agent = yaml.safe_load(config.read_text()).get("/**/panda_agent", {}).get("ros__parameters", {})
    timestep = args.rl_timestep if args.rl_timestep is not None else float(agent.get("rl_timestep", 0.1))
    rate = args.control_rate if args.control_rate is not None else float(agent.get("control_rate", 100.0))
    if timestep <= 1.0 / rate:
        raise Refusal(
            f"--rl-timestep {timestep:g} s must exceed the control period 1/{rate:g} Hz = {1.0 / rate:g} s "
            "(raise --control-rate, or lengthen the step)"
        )


def check_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Every option and every file the job needs, before anything is created or started;
    Refusal naming the first that is wrong (test_pipeline_refusals.py)."""
    from franka_agent.core.profile_file import load_profile
    from spin_decoupler_ros.core.think_time import TimingModel
    from spin_decoupler_ros.params import check_params_files

    check_ranges(args)
    try:
        load_profile(args.robot)
    except ParameterError as exc:
        raise Refusal(f"--robot: {exc}") from None
    if args.use_mock_hardware == "false":
        raise Refusal(
            "--use-mock-hardware false: a real arm is driven through its driver, which this job cannot start; "
            f"use: ros2 launch franka_agent panda_train.launch.py robot:={args.robot} use_mock_hardware:=false "
            "robot_ip:=<ip>"
        )
    if args.evaluate and args.resume:
        raise Refusal("--evaluate and --resume exclude each other")
    if args.evaluate and not Path(args.evaluate).is_file():
        raise Refusal(f"--evaluate {args.evaluate}: no such file")
    if args.resume:
        try:
            check_resume(args, parser)
        except Refusal as exc:
            raise Refusal(f"--resume {args.resume}: {exc}") from None
    elif args.extend_to is not None:
        raise Refusal("--extend-to goes with --resume of a finished run")
    if args.config is not None:
        try:
            check_params_files(["--params-file", args.config])
        except ParameterError as exc:
            raise Refusal(f"--config: {exc}") from None
    if args.timing_model is not None:
        try:
            TimingModel.parse(args.timing_model)
        except ParameterError as exc:
            raise Refusal(f"--timing-model: {exc}") from None
    check_step_timing(args)
    if not args.resume:
        try:
            check_run_dir(args.run_dir or "", TASK)
        except ParameterError as exc:
            raise Refusal(f"--run-dir: {exc}" if args.run_dir else str(exc)) from None
