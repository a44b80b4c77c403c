"""Who may drive an episode: its client, proved by a key only it and the agent hold.

rclpy hands a subscription callback no publisher identity (its message info holds
timestamps and sequence numbers only: ``rclpy/src/rclpy/subscription.cpp``, Humble to
Rolling), so an episode is bound to a secret instead. The client draws a fresh key for
every Episode goal and sends it in the goal; every StepCommand then carries an
HMAC-SHA256 tag of its fields under that key. Steps travel on a topic any process can
read, but a tag proves nothing about another command, so a process that has read every
step still cannot forge one, and a copy of a past one is told by its number. A new goal
that replaces a running episode proves it comes from the same client with a tag of its
new key under the old one.

Against a process that reads the DDS traffic of the goal itself (the key travels in it,
in clear) only DDS security helps (docs/security.md). test_auth.py and
test_faults.py::test_an_episode_belongs_to_its_client hold these rules.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import struct

import numpy as np

KEY_BYTES = 32
TAG_BYTES = 32
_STEP = struct.Struct("<B16sIiII")  # kind, episode id, seq, duration sec and nanosec, action length


def new_key() -> bytes:
    """A fresh episode key."""
    return secrets.token_bytes(KEY_BYTES)


def command_tag(
    key: bytes,
    kind: int,
    episode_id: bytes,
    seq: int,
    action: np.ndarray,
    duration_sec: int,
    duration_nanosec: int,
    then_action: np.ndarray | None = None,
) -> bytes:
    """The tag of a StepCommand's fields (all but ``sent_at``, which only times it).
    ``action``'s length is signed too, so that no value can move between the two actions."""
    then = np.zeros(0) if then_action is None else then_action
    head = _STEP.pack(kind, episode_id, seq, duration_sec, duration_nanosec, np.size(action))
    body = np.ascontiguousarray(action, dtype="<f8").tobytes() + np.ascontiguousarray(then, dtype="<f8").tobytes()
    return hmac.new(key, head + body, hashlib.sha256).digest()


def takeover_proof(previous_key: bytes, key: bytes) -> bytes:
    """A goal's proof that the client that opened the episode under ``previous_key``
    sends it (the new goal carries ``key``)."""
    return hmac.new(previous_key, b"takeover" + key, hashlib.sha256).digest()


def tags_match(expected: bytes, given: bytes) -> bool:
    return len(given) == len(expected) and hmac.compare_digest(expected, given)
