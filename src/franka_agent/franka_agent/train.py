"""The RL node of the reach task: trains SB3 (SAC or TD3) on a Panda agent through the
decoupler, then evaluates the policy and writes the run folder.

    python -m franka_agent.train --ros-args --params-file config/panda_reach.yaml

Run folder (``run_dir``): ``model.zip``, ``steps.csv`` (every step: LAT, ATO,
requested and executed duration, RL wall time, reward, distance), ``episodes.csv``,
``learning_curve.png``, ``lat_histogram.png``, ``results.json`` (evaluation over
``eval_episodes`` episodes: success rate, final distances; timing figures), and
``checkpoints/`` (every ``checkpoint_every`` steps and at the end; ``resume:=RUN_DIR``
goes on from the latest: rl/checkpoint.py). ``evaluate:=MODEL_ZIP`` evaluates a trained
policy instead (results.json only), e.g. at real time on the mock or on the arm.
"""

from __future__ import annotations

import csv
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from franka_agent.algorithms import (
    ALGORITHMS,
    declare_hyperparameters,
    evaluate_policy,
    gradient_steps_per_step,
    load_model,
    make_model,
)
from franka_agent.core.profile_file import load_profile
from franka_agent.reach_task import RESETS, ReachEnv
from franka_agent.robots import robot_namespaces
from franka_agent.run_outputs import RUN_FOLDER_README, clients_of, start_recording
from spin_decoupler_ros.core.errors import ParameterError
from spin_decoupler_ros.params import (
    check_no_unknown_parameters,
    check_params_files,
    declare_bool,
    declare_float,
    declare_float_list,
    declare_int,
    declare_str,
)
from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.rl.client import RLNode
from spin_decoupler_ros.rl.interrupts import INTERRUPTED, quiet_on_ctrl_c
from spin_decoupler_ros.tools.paths import claim_run_dir
from spin_decoupler_ros.tools.processes import die_with_parent

if TYPE_CHECKING:
    pass

NODE_NAME = "panda_trainer"


def main(argv: list[str] | None = None) -> int:
    """The trainer; Ctrl-C ends it with one line saying where the run is, exit code 130
    (rl/interrupts.py)."""
    run_dirs: list[Path] = []  # the run's folder, once it is known
    return quiet_on_ctrl_c(lambda: train(sys.argv if argv is None else argv, run_dirs), lambda: where_is(run_dirs))


def where_is(run_dirs: list[Path]) -> str:
    """Where an interrupted run is: its last checkpoint and how to go on from it."""
    from spin_decoupler_ros.rl.checkpoint import CheckpointError, read_latest

    said = f"[{NODE_NAME}] interrupted (Ctrl-C)"
    if not run_dirs:
        return f"{said} before a run folder was chosen: nothing was written"
    try:
        step = read_latest(run_dirs[0]).step
    except CheckpointError:
        return f"{said} before the first checkpoint: nothing to resume; {run_dirs[0]} holds the logs"
    return f"{said}; the last checkpoint is step {step}: {resume_command(run_dirs[0])} goes on from there"


def train(argv: list[str], run_dirs: list[Path]) -> int:
    die_with_parent()
    try:
        check_params_files(argv)
    except ParameterError as exc:
        print(f"[{NODE_NAME}] fatal: {exc}", file=sys.stderr, flush=True)
        return 2
    rl_node = RLNode(NODE_NAME, argv, parameter_services=True)
    node = rl_node.node
    log = node.get_logger()
    try:
        num_agents = declare_int(
            node, "num_agents", 1, "agents to train on at once (namespaces /panda0...; 1: the root)", low=1, high=64
        )
        algorithm = declare_str(node, "algorithm", "sac", "SB3 algorithm", choices=ALGORITHMS)
        hyper = declare_hyperparameters(node, algorithm)
        total_timesteps = declare_int(node, "total_timesteps", 10000, "training steps (the budget)", low=1)
        stop_at_success = declare_float(
            node,
            "stop_at_success",
            0.95,
            "end training once this share of the last success_window episodes succeeded (0: train the budget)",
            low=0.0,
            high=1.0,
        )
        success_window = declare_int(node, "success_window", 20, "episodes stop_at_success looks at", low=1)
        confirm_episodes = declare_int(
            node,
            "confirm_episodes",
            20,
            "once stop_at_success holds, episodes of the deterministic policy (the evaluated one, not "
            "learning), from evaluation's starts, of which that share must succeed; else learning goes on",
            low=0,
        )
        seed = declare_int(node, "seed", 0, "seed of the learner and of the episodes", low=0)
        episode_steps = declare_int(node, "episode_steps", 50, "steps before an episode is truncated", low=1)
        eval_episodes = declare_int(
            node,
            "eval_episodes",
            20,
            "episodes of the final evaluation (0 after training: none, as when the main job evaluates at real time)",
            low=0,
        )
        success_distance = declare_float(
            node, "success_distance", 0.02, "reached when this close", unit="m", low=0.001, high=1.0
        )
        reward_per_metre = declare_float(
            node, "reward_per_metre", 10.0, "reward = -this x distance (m)", low=1e-6, high=1e6
        )
        profile = load_profile(
            declare_str(node, "robot", "panda", "the arm's profile: panda, fr3, ur5e or a file's path")
        )
        target_low = declare_float_list(
            node, "target_low", list(profile.target_low), "target box lower corner (m; the profile's by default)"
        )
        target_high = declare_float_list(
            node, "target_high", list(profile.target_high), "target box upper corner (m; the profile's by default)"
        )
        reset_from = declare_str(
            node,
            "reset_from",
            "here",
            "where a training episode starts: home (plus the agent's reset noise), or here: after a success, where "
            "the arm stands (a brake to rest, not a trip home), else home; evaluation starts at home",
            choices=RESETS,
        )
        torch_threads = declare_int(node, "torch_threads", 1, "torch threads (1 leaves a core to the agent)", low=1)
        train_while_acting = declare_bool(
            node,
            "train_while_acting",
            True,
            "run each step's gradient steps while the agent executes the next action (the policy acts one "
            "update behind); false: between observation and action, as SB3 does, where they are think time",
        )
        updates_per_second = declare_float(
            node,
            "updates_per_second",
            50.0,
            "gradient steps per second of action, run while the agent acts: a step of d seconds gets "
            "round(d x this), at least <algorithm>.gradient_steps (0: that many per step); keep it within what "
            "this machine runs in the action's time (the progress lines and results.json give the cost of one)",
            low=0.0,
        )
        progress_every = declare_int(node, "progress_every", 1000, "steps between progress lines", low=1)
        run_dir_param = declare_str(
            node,
            "run_dir",
            "",
            "the run folder (empty: a fresh dated panda_reach/<date-time> under $SPIN_DECOUPLER_RUNS, else "
            "the runs/ of the checkout the code runs from, else ~/.ros/spin_decoupler/runs); one that already "
            "holds a run is refused",
        )
        checkpoint_every = declare_int(
            node, "checkpoint_every", 1000, "steps between checkpoints (0: only at the end)", low=0
        )
        resume = declare_str(node, "resume", "", "a run folder to go on with, from its latest checkpoint")
        record = declare_bool(
            node,
            "record",
            True,
            "record the run in run.mcap (ros2 bag's MCAP layout): steps, answers, timing, agent status, joint "
            "states and the commands sent to the controller",
        )
        record_joint_states_every = declare_int(
            node,
            "record_joint_states_every",
            1,
            "record one in this many /joint_states messages (30 Hz on the robot and the mock; 0: none)",
            low=0,
        )
        evaluate = declare_str(
            node, "evaluate", "", "a trained model.zip to evaluate over eval_episodes instead of training"
        )
        if evaluate and resume:
            raise ParameterError("parameters 'evaluate' and 'resume' exclude each other: evaluate a run's model.zip")
        if evaluate and eval_episodes == 0:
            raise ParameterError("parameter 'evaluate' needs eval_episodes of at least 1")
        if evaluate and not Path(evaluate).is_file():
            raise ParameterError(f"parameter 'evaluate' = '{evaluate}': no such file")
        if resume:
            from spin_decoupler_ros.rl.checkpoint import checkpoint_to_resume

            checkpoint = checkpoint_to_resume(resume, algorithm, total_timesteps)
        else:
            checkpoint = None
        on_agent_lost = declare_str(
            node,
            "on_agent_lost",
            "truncate",
            "when the agent stops answering or is deactivated (a pause): truncate the episode and wait at the next "
            "reset, or raise (one agent; several always raise)",
            choices=("truncate", "raise"),
        )
        agent_wait_timeout = declare_float(
            node, "agent_wait_timeout", 600.0, "how long a reset waits for the agent to come back", unit="s", low=1.0
        )
        # (the params file may hold every algorithm's hyperparameters: only this one's are read)
        check_no_unknown_parameters(node, ignore_prefixes=[f"{name}." for name in ALGORITHMS if name != algorithm])
        run_dir = Path(resume) if resume else claim_run_dir(run_dir_param, "panda_reach")
        run_dirs.append(run_dir)
    except ParameterError as exc:
        print(f"[{NODE_NAME}] fatal: {exc}", file=sys.stderr, flush=True)
        rl_node.close()
        return 2

    import torch
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import VecMonitor

    from spin_decoupler_ros.rl.checkpoint import CheckpointCallback, keep_final_outputs, restore_rng_states
    from spin_decoupler_ros.rl.run_folder import (
        plot_lat_histogram,
        plot_learning_curve,
        purge_tensorboard_after,
        tensorboard_folder,
        write_results,
    )
    from spin_decoupler_ros.rl.stopping import StopAtSuccess
    from spin_decoupler_ros.rl.trainer import learn
    from spin_decoupler_ros.rl.training import (
        ProgressCallback,
        StepLogCallback,
        act_while_training,
        begin_episode_again,
    )
    from spin_decoupler_ros.rl.vec_env import DecoupledVecEnv

    torch.set_num_threads(torch_threads)

    def make_env(client: RLClient) -> ReachEnv:
        return ReachEnv(
            client=client,
            target_low=target_low,
            target_high=target_high,
            success_distance=success_distance,
            reward_per_metre=reward_per_metre,
            max_episode_steps=episode_steps,
            reset_from=reset_from,
            on_agent_lost=cast(Any, on_agent_lost) if num_agents == 1 else "raise",
            agent_wait_timeout=agent_wait_timeout,
        )

    # One agent: a plain env. Several: one VecEnv stepping them all at once; the first
    # agent's env does the evaluation.
    namespaces = robot_namespaces(num_agents)
    if num_agents == 1:
        client = RLClient(namespaces[0], rl_node=rl_node, connect=False)
        client.connect(timeout=60.0)
        env = make_env(client)
        train_env: Any = Monitor(env)
        closing: Any = env
    else:
        vec_env = DecoupledVecEnv(make_env, namespaces, rl_node=rl_node, connect_timeout=60.0)
        env, train_env, closing = cast(ReachEnv, vec_env.envs[0]), VecMonitor(vec_env), vec_env
        client = env.client
        log.info(f"{num_agents} agents: {', '.join(namespaces)}")
    if not (run_dir / "README.md").exists():
        (run_dir / "README.md").write_text(RUN_FOLDER_README)
    recorder = (
        start_recording(
            run_dir, rl_node.node, clients_of(closing, client), namespaces, record_joint_states_every, profile
        )
        if record
        else None
    )
    try:
        if evaluate:
            from stable_baselines3 import SAC, TD3

            model = (SAC if algorithm == "sac" else TD3).load(evaluate, device="cpu")
            evaluated = {"evaluated_model": evaluate, **evaluate_policy(env, model, eval_episodes, seed), "seed": seed}
            write_results(run_dir, evaluated)
            print(
                f"evaluation of {evaluate}: success {100 * evaluated['success_rate']:.0f}% over {eval_episodes} "
                f"episodes, mean final distance {100 * evaluated['mean_final_distance_m']:.1f} cm; "
                f"run folder {run_dir}",
                flush=True,
            )
            return 0
        done_steps = 0 if checkpoint is None else checkpoint.step
        trained_before = 0.0 if checkpoint is None else float(checkpoint.state.get("train_seconds", 0.0))
        hyper["gradient_steps"] = gradient_steps_per_step(
            client.rl_timestep, updates_per_second, hyper["gradient_steps"]
        )
        if checkpoint is None:
            model = make_model(algorithm, train_env, hyper, seed, train_while_acting, task=env.task)
        else:
            model = load_model(algorithm, checkpoint.path, train_env, hyper, train_while_acting)
            restore_rng_states(checkpoint.state["rng"])
            kept = keep_final_outputs(run_dir)  # an extension: the finished run's outputs stay
            if kept is not None:
                log.info(f"extending a finished run to {total_timesteps} steps; its outputs are kept in {kept}")
            purge_tensorboard_after(run_dir, algorithm.upper(), done_steps)
            # The episode under way at the checkpoint is begun again: learn() resets the
            # env (this process's new Episode goals) where it has no last observation.
            begin_episode_again(model)
            model.get_env().seed(seed + done_steps)  # new episodes, not the first ones again
            log.info(f"resuming {run_dir} from step {done_steps} ({checkpoint.path.name})")
        model.tensorboard_log = tensorboard_folder(run_dir)  # (a loaded model keeps its own otherwise)
        if train_while_acting:
            act_while_training(closing, model)
        steps = StepLogCallback(
            run_dir / "steps.csv",
            extra_fields=("distance", "is_success"),
            resume=None if checkpoint is None else checkpoint.state["log"],
        )
        progress = ProgressCallback(total_timesteps, steps, every=progress_every)
        reach_envs = [env] if num_agents == 1 else cast(list[ReachEnv], vec_env.envs)

        def starts_as_evaluated(on: bool) -> None:
            for each in reach_envs:
                each.reset_from = "home" if on else reset_from

        stop = StopAtSuccess(steps, stop_at_success, success_window, confirm_episodes, starts_as_evaluated)
        started = time.monotonic()
        checkpoints = CheckpointCallback(
            run_dir,
            checkpoint_every,
            steps,
            lambda: {"algorithm": algorithm, "train_seconds": trained_before + time.monotonic() - started},
        )
        until = f", or until {stop.success_stop}" if stop_at_success else ""
        log.info(f"training {algorithm.upper()} for {total_timesteps} steps{until}; run folder {run_dir}")
        try:
            learn(
                model,
                total_timesteps - done_steps,
                clients_of(closing, client),
                steps,
                stop,
                progress,
                checkpoints,
                reset_num_timesteps=checkpoint is None,
            )
        except KeyboardInterrupt:  # a clean stop: keep what was learned, say how to go on
            saved = checkpoints.save_now()
            print(
                f"[{NODE_NAME}] interrupted (Ctrl-C) at step {model.num_timesteps}, checkpointed there ({saved.name}): "
                f"{resume_command(run_dir)} goes on from there",
                file=sys.stderr,
                flush=True,
            )
            return INTERRUPTED
        train_seconds = trained_before + time.monotonic() - started
        trained_steps = model.num_timesteps
        if stop.reached_at is not None:
            log.info(f"{stop.success_stop}: done at step {stop.reached_at}, training ends there")
        model.save(run_dir / "model")

        evaluation = evaluate_policy(env, model, eval_episodes, seed) if eval_episodes else {}
        with open(run_dir / "episodes.csv", "w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=["step", "return", "success", "length"])
            writer.writeheader()
            writer.writerows(steps.episodes)
        plot_learning_curve(
            steps.episodes, run_dir / "learning_curve.png", f"{algorithm.upper()} on the Panda reach task"
        )
        plot_lat_histogram(steps.lats, client.rl_timestep, run_dir / "lat_histogram.png")
        lats = np.array(steps.lats)
        results: dict[str, Any] = {
            "algorithm": algorithm,
            "total_timesteps": trained_steps,
            "step_budget": total_timesteps,
            "stopped_at_success": stop.reached_at,
            "confirming_episodes": stop.confirming_episodes,
            "train_seconds": round(train_seconds, 1),
            "train_steps_per_second": round(trained_steps / train_seconds, 2),
            **evaluation,
            "lat_ms": {
                "median": round(float(np.median(lats)) * 1e3, 3),
                "p99": round(float(np.percentile(lats, 99)) * 1e3, 3),
            }
            if lats.size
            else {},
            "requested_duration_s": client.rl_timestep,
            "num_agents": num_agents,
            "hyperparameters": hyper,
            "train_while_acting": train_while_acting,
            "gradient_step_ms": None if getattr(model, "update_ms", None) is None else round(model.update_ms, 2),
            "seed": seed,
        }
        write_results(run_dir, results)
        said = (
            f"evaluation: success {100 * results['success_rate']:.0f}% over {eval_episodes} episodes, "
            f"mean final distance {100 * results['mean_final_distance_m']:.1f} cm; "
            if eval_episodes
            else ""
        )
        print(f"{said}trained {trained_steps} steps in {train_seconds:.0f} s; run folder {run_dir}", flush=True)
    finally:
        closing.close()
        if recorder is not None:
            recorder.close()
        rl_node.close()
    return 0


def resume_command(run_dir: Path) -> str:
    """How a user goes on with ``run_dir``: as the main job was started, or by launch."""
    if os.environ.get("SPIN_DECOUPLER_COMMAND"):
        return f"{os.environ['SPIN_DECOUPLER_COMMAND']} --resume {run_dir}"
    return f"./ws main --resume {run_dir} (launch: resume:={run_dir})"


if __name__ == "__main__":
    sys.exit(main())
