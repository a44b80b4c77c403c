"""The agent's action space and the check every action passes before it can move anything."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from spin_decoupler_ros.core.errors import ActionSpaceError


def _format(x: float) -> str:
    return f"{x:.6g}"


@dataclass(frozen=True)
class ActionSpec:
    """A box of actions: ``low <= a <= high`` element-wise, every element finite.

    :param low: lower bounds, one per action element.
    :param high: upper bounds, same length as ``low``.
    :param clip: what to do with finite values outside the box: clip them (True) or
        reject the whole action (False). NaN, inf and a wrong length are always rejected.
    """

    low: np.ndarray
    high: np.ndarray
    clip: bool = True
    size: int = field(init=False)

    def __post_init__(self) -> None:
        low = np.asarray(self.low, dtype=np.float64).reshape(-1)
        high = np.asarray(self.high, dtype=np.float64).reshape(-1)
        if low.shape != high.shape:
            raise ValueError(f"action bounds differ in length: low has {low.size}, high has {high.size}")
        if low.size == 0:
            raise ValueError("the action space is empty: give at least one bound")
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError("action bounds must be finite")
        if np.any(low > high):
            i = int(np.argmax(low > high))
            raise ValueError(f"action bound {i}: low {_format(low[i])} > high {_format(high[i])}")
        low.setflags(write=False)
        high.setflags(write=False)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "size", int(low.size))

    @classmethod
    def symmetric(cls, size: int, bound: float = 1.0, clip: bool = True) -> ActionSpec:
        """The usual normalised box ``[-bound, bound]^size``."""
        return cls(np.full(size, -bound), np.full(size, bound), clip)

    def check(self, values: Sequence[float] | np.ndarray) -> np.ndarray:
        """Return ``values`` as a fresh float64 array inside the box, or raise.

        :raises ActionSpaceError: naming the first problem found.
        """
        try:
            action = np.array(values, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise ActionSpaceError(f"action is not a vector of numbers: {exc}") from None
        if action.size != self.size:
            raise ActionSpaceError(f"action has {action.size} values, the agent expects {self.size}")
        bad = ~np.isfinite(action)
        if bad.any():
            i = int(np.argmax(bad))
            raise ActionSpaceError(f"action[{i}] is {action[i]}: actions must be finite")
        outside = (action < self.low) | (action > self.high)
        if outside.any():
            if not self.clip:
                i = int(np.argmax(outside))
                raise ActionSpaceError(
                    f"action[{i}] = {_format(action[i])} is outside "
                    f"[{_format(self.low[i])}, {_format(self.high[i])}] and clip_actions is false"
                )
            np.clip(action, self.low, self.high, out=action)
        return action
