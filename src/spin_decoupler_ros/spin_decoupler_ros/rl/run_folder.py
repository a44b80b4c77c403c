"""What a training run leaves in its folder: a README, results.json, TensorBoard's
series, the evaluation episodes, and the plots (learning curve, LAT histogram)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

EXAMPLE_RUN_README = """\
# {title}

- results.json: the evaluation; model.zip: the trained policy
- run.mcap: the run's messages (commands, answers, timing, agent status), ros2 bag's MCAP
  layout: ros2 bag info run.mcap, ros2 bag play run.mcap, or open it in Foxglove or PlotJuggler
- tensorboard/: SB3's scalars and the timing ones (timing/*): tensorboard --logdir tensorboard
- *.log: each node's log
"""


def describe_run_folder(run_dir: Path, title: str) -> None:
    """A README.md in an example's run folder: what each file is and how to open it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    readme = run_dir / "README.md"
    if not readme.exists():
        readme.write_text(EXAMPLE_RUN_README.format(title=title))


def tensorboard_folder(run_dir: Path) -> str | None:
    """Where SB3 writes TensorBoard scalars: ``<run>/tensorboard``, where tensorboard is installed."""
    import importlib.util

    return str(run_dir / "tensorboard") if importlib.util.find_spec("tensorboard") else None


def purge_tensorboard_after(run_dir: Path, tb_log_name: str, step: int) -> Path | None:
    """Before a resumed run logs again from its checkpoint at ``step``: have TensorBoard
    drop what the run's series holds after ``step`` (steps the killed run logged and the
    resumed one does again), so that each step shows once. SB3 goes on in the latest
    ``<tb_log_name>_<id>`` folder; a ``SessionLog.START`` at ``step + 1`` there is
    TensorBoard's purge mark (``SummaryWriter(purge_step=...)``). Returns that folder, or
    None where nothing was logged. test_training_helpers.py holds it."""
    folder = tensorboard_folder(run_dir)
    if folder is None:
        return None
    from stable_baselines3.common.utils import get_latest_run_id
    from torch.utils.tensorboard import SummaryWriter

    run_id = get_latest_run_id(folder, tb_log_name)
    if run_id == 0:
        return None
    series = Path(folder) / f"{tb_log_name}_{run_id}"
    SummaryWriter(log_dir=str(series), purge_step=step + 1).close()
    return series


def write_results(run_dir: Path, results: dict[str, Any]) -> Path:
    """``<run_dir>/results.json``: the run's figures, for people and for tests."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "results.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    return path


def run_episodes(
    env: Any, policy: Callable[[np.ndarray], np.ndarray], episodes: int, seed: int
) -> list[dict[str, float]]:
    """Run whole episodes with ``policy``; per episode: return, length, success, the last
    and the closest distance to the goal (a task whose info says ``distance``; else NaN)."""
    results = []
    for episode in range(episodes):
        observation, _ = env.reset(seed=seed + episode)
        total, length, done, info, closest = 0.0, 0, False, {}, math.inf
        while not done:
            observation, reward, terminated, truncated, info = env.step(policy(observation))
            total += float(reward)
            length += 1
            done = terminated or truncated
            closest = min(closest, float(info.get("distance", math.nan)))
        results.append(
            {
                "return": total,
                "length": float(length),
                "success": float(bool(info.get("is_success", False))),
                "final_distance": float(info.get("distance", math.nan)),
                "closest_distance": closest if math.isfinite(closest) else math.nan,
            }
        )
    return results


def plot_learning_curve(episodes: list[dict[str, float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax_return = plt.subplots(figsize=(8, 4.5))
    if episodes:
        steps = np.array([e["step"] for e in episodes])
        returns = np.array([e["return"] for e in episodes])
        success = np.array([e["success"] for e in episodes])
        window = max(1, min(50, len(episodes) // 10))
        kernel = np.ones(window) / window
        ax_return.plot(steps, returns, color="tab:blue", alpha=0.25, lw=0.8)
        ax_return.plot(steps[window - 1 :], np.convolve(returns, kernel, "valid"), color="tab:blue", label="return")
        ax_return.set_ylabel("episode return", color="tab:blue")
        ax_success = ax_return.twinx()
        ax_success.plot(
            steps[window - 1 :], 100 * np.convolve(success, kernel, "valid"), color="tab:green", label="success"
        )
        ax_success.set_ylabel(f"success rate, last {window} episodes (%)", color="tab:green")
        ax_success.set_ylim(-2, 102)
    ax_return.set_xlabel("environment steps")
    ax_return.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_lat_histogram(lats: list[float], requested: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    values = np.array(lats) * 1e3
    if values.size:
        high = np.percentile(values, 99.5)
        ax.hist(values[values <= high], bins=80, color="tab:purple")
        ax.axvline(requested * 1e3, color="black", ls="--", lw=1, label=f"requested {requested * 1e3:g} ms")
        ax.set_title(
            f"LAT over {values.size} steps: median {np.median(values):.1f} ms, p99 {np.percentile(values, 99):.1f} ms\n"
            f"({np.sum(values > high)} above {high:.0f} ms not shown)",
            fontsize=10,
        )
        ax.legend()
    ax.set_xlabel("LAT: measured duration of the previous action (ms, agent clock)")
    ax.set_ylabel("steps")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
