"""Checkpoints of a training run, and resuming from one, so a crash loses at most the
steps since the last checkpoint.

A checkpoint is a folder ``checkpoints/<step>`` in the run folder: what the trainer's
``save`` writes there (SB3's own ``model.zip``, and ``replay_buffer.pkl`` for an
off-policy algorithm: files only the same trainer reads back), and ``state.json``:
the counters, the random generators' states, how far the run's logs got, and every
file's size and SHA-256. It is written whole under a temporary name, then renamed;
then ``checkpoints/latest`` (one line, written and renamed too) names it. A kill at any
moment leaves the previous checkpoint whole and named. ``read_latest`` refuses a
missing or damaged one with a ``CheckpointError`` naming the file.
test_checkpoint.py holds these rules.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

FOLDER = "checkpoints"
LATEST = "latest"
STATE = "state.json"
KEEP = 2  # checkpoints kept: the latest and the one before


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be resumed from; the text names the file."""


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    state: dict[str, Any]

    @property
    def step(self) -> int:
        return int(self.state["step"])


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


def write_checkpoint(run_dir: Path, step: int, save: Callable[[Path], None], state: dict[str, Any]) -> Path:
    """Write checkpoint ``step``: ``save(folder)`` writes the trainer's files, then the
    state and the manifest; renamed into place, then named latest; older ones pruned."""
    root = run_dir / FOLDER
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(".*.tmp"):  # what a kill left half written
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
    final = root / f"{step:010d}"
    temporary = root / f".{step:010d}.{os.getpid()}.tmp"
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir()
    save(temporary)
    files = {
        item.name: {"bytes": item.stat().st_size, "sha256": _digest(item)}
        for item in sorted(temporary.iterdir())
        if item.is_file()
    }
    _write_atomically(temporary / STATE, json.dumps({**state, "step": step, "files": files}, indent=1))
    if final.exists():  # the same step again (a resumed run's first checkpoint)
        shutil.rmtree(final)
    os.rename(temporary, final)
    _write_atomically(root / LATEST, final.name + "\n")
    for old in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def read_latest(run_dir: Path) -> Checkpoint:
    """The checkpoint ``checkpoints/latest`` names, checked whole; else CheckpointError."""
    pointer = run_dir / FOLDER / LATEST
    if not pointer.is_file():
        raise CheckpointError(f"no checkpoint to resume from: {pointer} does not exist")
    name = pointer.read_text().strip()
    path = run_dir / FOLDER / name
    state_path = path / STATE
    try:
        state = json.loads(state_path.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {path} is incomplete: {state_path} does not exist") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"checkpoint {path} is damaged: {state_path} cannot be read ({exc})") from None
    for file_name, expected in state.get("files", {}).items():
        file = path / file_name
        if not file.is_file():
            raise CheckpointError(f"checkpoint {path} is incomplete: {file} does not exist")
        if file.stat().st_size != expected["bytes"] or _digest(file) != expected["sha256"]:
            raise CheckpointError(f"checkpoint {path} is damaged: {file} is not the file that was saved")
    return Checkpoint(path, state)


# What a run's end writes: a run holding results.json is finished (its evaluation done).
RESULTS = "results.json"
# A finished run's outputs, moved aside (never overwritten) when it is extended.
FINAL_OUTPUTS = ("results.json", "model.zip", "episodes.csv", "learning_curve.png", "lat_histogram.png")


def finished_at(run_dir: Path) -> int | None:
    """The steps a finished run trained (its results.json's ``total_timesteps``), or None
    for a run still under way; CheckpointError if results.json cannot be read."""
    path = run_dir / RESULTS
    if not path.is_file():
        return None
    try:
        return int(json.loads(path.read_text())["total_timesteps"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{path} cannot be read ({exc}): the run may or may not be finished") from None


def refuse_to_rewrite(run_dir: Path, latest_step: int, total_timesteps: int) -> str | None:
    """Why resuming ``run_dir`` to ``total_timesteps`` would rewrite a finished run, or
    None: a finished run is extended only to more steps than it trained."""
    finished = finished_at(run_dir)
    if finished is None or total_timesteps > max(finished, latest_step):
        return None
    return (
        f"the run is finished ({finished} steps; {run_dir / RESULTS}) and nothing was changed; to train it "
        f"further, extend it to more steps: --extend-to N (launch: total_timesteps:=N), N above {finished}"
    )


def checkpoint_to_resume(resume: str, algorithm: str, total_timesteps: int) -> Checkpoint:
    """The latest checkpoint of run folder ``resume``, checked for going on with to
    ``total_timesteps`` steps of ``algorithm``; else ParameterError saying what is wrong
    (test_checkpoint.py)."""
    from spin_decoupler_ros.core.errors import ParameterError

    said = f"parameter 'resume' = '{resume}'"
    try:
        checkpoint = read_latest(Path(resume))
        if checkpoint.state.get("algorithm") != algorithm:
            raise CheckpointError(f"the run trained {checkpoint.state.get('algorithm')}, not {algorithm}")
        check_log(Path(resume) / "steps.csv", checkpoint)
        rewrite = refuse_to_rewrite(Path(resume), checkpoint.step, total_timesteps)
    except CheckpointError as exc:
        raise ParameterError(f"{said}: {exc}") from None
    if rewrite is not None:
        raise ParameterError(f"{said}: {rewrite}")
    return checkpoint


def keep_final_outputs(run_dir: Path) -> Path | None:
    """Before a finished run is extended: move its final outputs (FINAL_OUTPUTS) into
    ``<run_dir>/finished_at_<steps>/``, where they stay beside the extension's."""
    finished = finished_at(run_dir)
    if finished is None:
        return None
    kept = run_dir / f"finished_at_{finished}"
    kept.mkdir(exist_ok=True)
    for name in FINAL_OUTPUTS:
        if (run_dir / name).exists():
            (run_dir / name).replace(kept / name)
    return kept


def rng_states() -> dict[str, Any]:
    """The process-wide generators SB3 seeds (Python's, NumPy's legacy, torch's), as JSON."""
    import torch

    kind, keys, position, has_gauss, cached = np.random.get_state()  # type: ignore[misc]
    version, internal, gauss = random.getstate()
    return {
        "python": [version, list(internal), gauss],
        "numpy": [kind, [int(k) for k in keys], int(position), int(has_gauss), float(cached)],
        "torch": [int(b) for b in torch.get_rng_state().tolist()],
    }


def restore_rng_states(states: dict[str, Any]) -> None:
    import torch

    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, position, has_gauss, cached = states["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), position, has_gauss, cached))
    torch.set_rng_state(torch.tensor(states["torch"], dtype=torch.uint8))


def check_log(path: Path, checkpoint: Checkpoint) -> None:
    """CheckpointError naming ``path`` if it holds less than the checkpoint recorded (a
    step log cut down or lost since): a resume would lose steps."""
    length = int(checkpoint.state.get("log", {}).get("log_bytes", 0))
    size = path.stat().st_size if path.exists() else -1
    if size < length:
        held = f"has {size} bytes" if size >= 0 else "does not exist"
        recorded = f"the {length} the checkpoint at step {checkpoint.step} recorded"
        raise CheckpointError(f"{path} {held}, less than {recorded}: restore it, or start a new run")


def truncate_log(path: Path, length: int) -> None:
    """Cut a log back to ``length`` bytes, what it held at the checkpoint (the rows after
    it are done again); a log shorter than that is refused, naming it."""
    size = path.stat().st_size if path.exists() else -1
    if size < length:
        raise CheckpointError(f"{path} has {max(size, 0)} bytes, less than the {length} the checkpoint recorded")
    with open(path, "r+b") as file:
        file.truncate(length)


class CheckpointCallback(BaseCallback):
    """Writes a checkpoint every ``every`` steps (0: none on the way) and when training
    ends; ``save_now`` writes one at once (a clean stop on a signal). The state holds the
    step log's position (``StepLogCallback.state``) and what ``extra_state`` adds.

    A checkpoint due at step N is written when the next rollout starts: SB3 calls
    ``_on_step`` before it stores step N's transition and trains on it, so only then
    do the model and the replay buffer hold exactly N steps
    (test_resume.py checks the buffer holds each step once)."""

    def __init__(
        self,
        run_dir: Path,
        every: int,
        log: Any,
        extra_state: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.every = every
        self.log = log
        self.extra_state = extra_state
        self._next = 0
        self._due = False

    def _on_training_start(self) -> None:
        steps = self.model.num_timesteps
        self._next = (steps // self.every + 1) * self.every if self.every else 0

    def _on_step(self) -> bool:
        steps = self.model.num_timesteps
        if self.every and steps >= self._next:
            self._due = True
            self._next = (steps // self.every + 1) * self.every
        return True

    def _on_rollout_start(self) -> None:
        if self._due:
            self.save_now()
            self._due = False

    def _on_training_end(self) -> None:
        self.save_now()

    def save_now(self) -> Path:
        model = self.model

        def save_files(folder: Path) -> None:
            model.save(folder / "model.zip")
            if getattr(model, "replay_buffer", None) is not None:
                model.save_replay_buffer(folder / "replay_buffer.pkl")  # type: ignore[attr-defined]

        state = {"log": self.log.state(), "rng": rng_states(), **self.extra_state()}
        return write_checkpoint(self.run_dir, model.num_timesteps, save_files, state)
