"""The main job: train on the MuJoCo mock Panda through the decoupled nodes.

    ./ws main [--total-timesteps N] [--sim-speed S] [--run-dir DIR] ...

Starts what ``launch/panda_train.launch.py`` starts with ``use_mock_hardware:=true``,
for machines without ``ros2 launch``: the mock hardware (MuJoCo, publishing /clock)
and the Panda agent (on simulated time), in one process under a simulated timing model
(``sim_robot.py``) and in two under ``wall``, and the trainer (the RL node); then waits
for the trainer, stops the others and prints the results. Agent and mock logs go to the
run folder; the trainer's progress to the console.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from franka_agent.pipeline_options import OPTIONS_FILE, TASK, Refusal, build_parser, check_options
from franka_agent.robots import default_timing_model, read_limit_violations, robot_namespaces, start_mock_robots
from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.dds_profile import use_dds_profile
from spin_decoupler_ros.rl.interrupts import INTERRUPTED
from spin_decoupler_ros.tools.paths import claim_run_dir, find_config
from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup, ros_args

REAL_TIME_EVAL = "real_time_eval"  # the run's sub-folder of its evaluation at real time
# May differ on a resume (one process or two runs the same MDP: test_timing_models.py).
NOT_RECORDED = ("resume", "extend_to", "run_dir", "checkpoint_every", "use_mock_hardware", "one_process")


def start_nodes(
    group: ProcessGroup,
    args: argparse.Namespace,
    config: Path,
    run_dir: Path,
    agent_params: dict[str, object],
    trainer_params: dict[str, object],
) -> NodeProcess:
    """The mock robots and their agents, then the trainer; the trainer's process."""
    agents = start_mock_robots(
        group,
        config,
        args.num_agents,
        sim_speed=args.sim_speed,
        log_dir=run_dir,
        agent_params=agent_params,
        timing_model=args.timing_model,
        one_process={"auto": None, "yes": True, "no": False}[args.one_process],
        robot=args.robot,
    )
    # One agent: the trainer in its namespace (its client's names are relative); several:
    # the trainer at the root, each client naming its agent's namespace.
    trainer = NodeProcess(
        "franka_agent.train",
        ros_args(
            params_files=[config],
            params=trainer_params,
            namespace=agents[0] if args.num_agents == 1 else None,
        ),
        label="panda_trainer",
    )
    return group.start(trainer)


def interrupted(group: ProcessGroup, run_dir: Path) -> int:
    """Ctrl-C: stop the nodes, the trainer first (it checkpoints and says where the run
    is, exit code 130); say it here if it could not. Exit code 130, no traceback."""
    from spin_decoupler_ros.rl.checkpoint import CheckpointError, read_latest

    codes = group.stop()
    if codes.get("panda_trainer") == INTERRUPTED:
        return INTERRUPTED  # (the trainer said where the run is)
    try:
        where = f"its last checkpoint is step {read_latest(run_dir).step}: ./ws main --resume {run_dir} goes on"
    except CheckpointError:
        where = f"no checkpoint was written yet; the logs are in {run_dir}"
    print(f"interrupted (Ctrl-C); {where}", file=sys.stderr, flush=True)
    return INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_options(args, parser)
    except Refusal as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 2
    if args.extend_to is not None:  # a kill during the extension resumes to the same end
        options = json.loads((Path(args.resume) / OPTIONS_FILE).read_text())
        options["total_timesteps"] = args.extend_to
        (Path(args.resume) / OPTIONS_FILE).write_text(json.dumps(options, indent=1) + "\n")
    if args.timing_model is None:
        args.timing_model = default_timing_model(mock=True)
    config = Path(args.config) if args.config else find_config("panda_reach.yaml", package="franka_agent")
    try:
        run_dir = Path(args.resume) if args.resume else claim_run_dir(args.run_dir or "", TASK)
    except ParameterError as exc:
        print(f"{parser.prog}: --run-dir: {exc}", file=sys.stderr)
        return 2
    if not args.resume:
        recorded = {name: value for name, value in vars(args).items() if name not in NOT_RECORDED}
        recorded["config"] = str(config.resolve())
        (run_dir / OPTIONS_FILE).write_text(json.dumps(recorded, indent=1) + "\n")
    # Everything runs on this machine: keep discovery local unless told otherwise (the
    # decoupler's DDS profile, this host only; or the ROS way, under another middleware).
    if "ROS_AUTOMATIC_DISCOVERY_RANGE" not in os.environ and use_dds_profile(localhost=True) is None:
        os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

    agent_params: dict[str, object] = {}
    if args.rl_timestep is not None:
        agent_params["rl_timestep"] = args.rl_timestep
    if args.control_rate is not None:
        agent_params["control_rate"] = args.control_rate
    trainer_params: dict[str, object] = {"run_dir": str(run_dir), "robot": args.robot}
    if args.total_timesteps is not None:  # a budget given (or an extension): train all of it
        trainer_params["stop_at_success"] = 0.0
    if args.resume:
        trainer_params["resume"] = str(run_dir)
    if args.evaluate:
        trainer_params["evaluate"] = str(Path(args.evaluate).resolve())
    if args.checkpoint_every is not None:
        trainer_params["checkpoint_every"] = args.checkpoint_every
    for option, name in (
        ("total_timesteps", "total_timesteps"),
        ("algorithm", "algorithm"),
        ("seed", "seed"),
        ("eval_episodes", "eval_episodes"),
    ):
        if getattr(args, option) is not None:
            trainer_params[name] = getattr(args, option)
    real_time_eval = evaluates_at_real_time(args)
    if real_time_eval:
        trainer_params["eval_episodes"] = 0  # (the evaluation comes after, at real time)

    speed = "flat out, in lockstep with the agent" if args.sim_speed == 0 else f"{args.sim_speed:g}x real time"
    print(
        f"main job: reach with the {args.robot} on the MuJoCo mock ({speed}, timing model {args.timing_model}); "
        f"run folder {run_dir}",
        flush=True,
    )
    trainer_params["num_agents"] = args.num_agents
    with ProcessGroup() as group:
        try:
            trainer = start_nodes(group, args, config, run_dir, agent_params, trainer_params)
            while trainer.running():
                group.check_alive_except(trainer)
                time.sleep(0.5)
        except (RuntimeError, ParameterError) as exc:
            print(f"stopping: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return interrupted(group, run_dir)
        code = trainer.returncode()
        if code is not None and code < 0:
            print(
                f"the trainer died (signal {-code}); ./ws main --resume {run_dir} goes on from its latest checkpoint",
                file=sys.stderr,
            )
        results = run_dir / "results.json"
        if code == 0 and results.exists():
            # What the mocks counted: every command checked against the Panda's limits.
            figures = json.loads(results.read_text())
            violations = read_limit_violations(robot_namespaces(args.num_agents))
            figures["mock_limit_violations"] = violations if len(violations) > 1 else next(iter(violations.values()))
            figures["timing_model"] = args.timing_model
            results.write_text(json.dumps(figures, indent=2) + "\n")
    if code == 0 and results.exists() and real_time_eval:
        code = evaluate_at_real_time(args, run_dir)
        figures = json.loads(results.read_text())
    if code == 0 and results.exists() and not args.evaluate:
        print(
            f"done: success rate {100 * figures['success_rate']:.0f}% over {figures['eval_episodes']} evaluation "
            f"episodes{' at real time' if real_time_eval else ''}; {figures['total_timesteps']} steps in "
            f"{figures['train_seconds']:.0f} s; limit violations counted by the mock hardware: "
            f"{figures['mock_limit_violations']}{violations_in_evaluation(figures)}; "
            f"see {run_dir}/ (model.zip, steps.csv, learning_curve.png, lat_histogram.png, results.json)",
            flush=True,
        )
    return 1 if code is not None and code < 0 else int(code or 0)


def violations_in_evaluation(figures: dict[str, object]) -> str:
    """The real-time evaluation's count, if there was one, for the closing line."""
    count = figures.get("eval_mock_limit_violations")
    return "" if count is None else f" in training, {count} in the evaluation"


def evaluates_at_real_time(args: argparse.Namespace) -> bool:
    """Whether the policy trained is evaluated afterwards at real time (--real-time-eval)."""
    if args.evaluate or args.real_time_eval == "no":
        return False
    return args.real_time_eval == "yes" or not (args.sim_speed == 1.0 and args.timing_model == "wall")


def evaluate_at_real_time(args: argparse.Namespace, run_dir: Path) -> int:
    """The trained policy over --eval-episodes on a fresh mock at real time under wall, as on
    the arm (the first agent's robot): its run in ``run_dir/real_time_eval``, its figures
    the run's evaluation in results.json; the exit code."""
    folder = run_dir / REAL_TIME_EVAL
    if folder.exists():  # (a resumed run evaluates again)
        shutil.rmtree(folder)
    same = [
        f"--{name.replace('_', '-')}={getattr(args, name)}"
        for name in ("robot", "config", "seed", "eval_episodes", "rl_timestep", "control_rate", "algorithm")
        if getattr(args, name) is not None
    ]
    code = main(
        [
            *same,
            "--evaluate", str(run_dir / "model.zip"), "--sim-speed", "1", "--timing-model", "wall",
            "--real-time-eval", "no", "--run-dir", str(folder),
        ]
    )  # fmt: skip
    if code != 0:
        if code != INTERRUPTED:
            print(f"the evaluation at real time failed; its logs are in {folder}", file=sys.stderr, flush=True)
        return code
    evaluation = json.loads((folder / "results.json").read_text())
    results = json.loads((run_dir / "results.json").read_text())
    for key in (
        "eval_episodes", "success_rate", "mean_final_distance_m", "mean_episode_length", "eval_seconds",
        "eval_per_episode",
    ):  # fmt: skip
        results[key] = evaluation[key]
    results["evaluation"] = "at real time: the mock at speed 1 under wall, as on the arm"
    results["eval_mock_limit_violations"] = evaluation["mock_limit_violations"]
    (run_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
