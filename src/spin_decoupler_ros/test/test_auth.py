"""An episode's key signs its commands: any change to a signed field, another key or a
missing tag fails; a takeover proof needs the running episode's key (core/auth.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spin_decoupler_ros.core.auth import KEY_BYTES, command_tag, new_key, tags_match, takeover_proof
from spin_decoupler_ros.core.protocol import AgentProtocol
from spin_decoupler_ros.core.spaces import ActionSpec

# Pure logic: also run under Python 3.10 without ROS (./ws test-core).
pytestmark = pytest.mark.core

EPISODE = bytes(range(16))
FIELDS = {
    "kind": 0,
    "episode_id": EPISODE,
    "seq": 3,
    "action": np.array([0.5, -1.0]),
    "sec": 0,
    "nanosec": 100,
    "then_action": np.array([0.25, 0.75]),
}


def tag(key: bytes, **changes: object) -> bytes:
    fields = {**FIELDS, **changes}
    return command_tag(
        key,
        fields["kind"],  # type: ignore[arg-type]
        fields["episode_id"],  # type: ignore[arg-type]
        fields["seq"],  # type: ignore[arg-type]
        fields["action"],  # type: ignore[arg-type]
        fields["sec"],  # type: ignore[arg-type]
        fields["nanosec"],  # type: ignore[arg-type]
        fields["then_action"],  # type: ignore[arg-type]
    )


def test_keys_are_fresh_and_tags_are_deterministic() -> None:
    key = new_key()
    assert len(key) == KEY_BYTES and key != new_key()
    assert tags_match(tag(key), tag(key))


@settings(max_examples=50, deadline=None)
@given(
    field=st.sampled_from(["kind", "episode_id", "seq", "action", "sec", "nanosec", "then_action"]),
    bump=st.integers(1, 1000),
)
def test_any_changed_field_breaks_the_tag(field: str, bump: int) -> None:
    key = new_key()
    original = FIELDS[field]
    if field == "episode_id":
        changed: object = bytes([EPISODE[0] ^ (bump % 255 + 1)]) + EPISODE[1:]
    elif field == "action":
        changed = np.array([0.5, -1.0 + bump * 1e-9])
    elif field == "then_action":
        changed = np.array([0.25, 0.75 + bump * 1e-9])
    elif field == "kind":
        changed = bump % 255 + 1  # (a byte)
    else:
        changed = int(original) + bump  # type: ignore[call-overload]
    assert not tags_match(tag(key), tag(key, **{field: changed}))


def test_no_value_moves_between_the_action_and_the_then_action_under_one_tag() -> None:
    key = new_key()
    both = tag(key, action=np.array([0.5, -1.0]), then_action=np.array([0.25]))
    assert not tags_match(both, tag(key, action=np.array([0.5]), then_action=np.array([-1.0, 0.25])))
    assert not tags_match(tag(key, then_action=np.zeros(0)), tag(key))  # none is not the one given


def test_another_key_an_empty_or_short_tag_never_match() -> None:
    key = new_key()
    assert not tags_match(tag(key), tag(new_key()))
    assert not tags_match(tag(key), b"")
    assert not tags_match(tag(key), tag(key)[:16])


def test_a_takeover_needs_the_running_episodes_key() -> None:
    old, new = new_key(), new_key()
    proof = takeover_proof(old, new)
    assert tags_match(takeover_proof(old, new), proof)
    assert not tags_match(takeover_proof(new_key(), new), proof)  # another key
    assert not tags_match(takeover_proof(old, new_key()), proof)  # bound to the new key


def test_a_goal_under_the_running_clients_name_without_its_proof_is_another_clients() -> None:
    protocol = AgentProtocol(
        ActionSpec(np.array([-1.0]), np.array([1.0])),
        rl_timestep_ns=50_000_000,
        control_period_ns=10_000_000,
        watchdog_ns=500_000_000,
        max_duration_ns=10**10,
    )
    protocol.begin_episode(EPISODE, "owner", 0, key=new_key(), owns_running=False)
    reason = protocol.goal_rejection("owner", owns_running=False)
    assert reason is not None and "without the proof of its key" in reason
    assert protocol.goal_rejection("owner", owns_running=True) is None
