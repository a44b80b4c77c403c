"""TransitionTable: a state machine's table, the one check every state machine of the
project makes before it moves (homing, a stop's handling, the agent's episode, what the
joint controller follows). Each machine's own tests walk every pair of its states."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Generic, TypeVar

State = TypeVar("State", bound=enum.Enum)


class TransitionTable(Generic[State]):
    """Where each state may go: ``nexts[state]``, and the ``always`` states any state may go to.

    :param name: the table's name, for the error (``HOMING_NEXT``).
    :param subject: what moves, for the error (``homing``).
    """

    def __init__(
        self, name: str, subject: str, nexts: Mapping[State, frozenset[State]], always: frozenset[State]
    ) -> None:
        self.name, self.subject, self.nexts, self.always = name, subject, nexts, always

    def allows(self, state: State, to: State) -> bool:
        return to in self.always or to in self.nexts[state]

    def check(self, state: State, to: State) -> None:
        """Nothing if the table lets ``state`` go to ``to``; else RuntimeError (a defect)."""
        if not self.allows(state, to):
            raise RuntimeError(f"{self.subject} cannot go from {state.name} to {to.name} ({self.name})")
