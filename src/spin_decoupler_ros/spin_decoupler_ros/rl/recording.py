"""Every run is a recording: what crosses between the learner and its agents, and
chosen robot topics, in ``run.mcap`` in the run folder.

The file follows ros2 bag's MCAP storage layout: profile ``ros2``, CDR messages (the
bytes DDS carries, serialized by rclpy), and ``ros2msg`` schemas holding each type's
complete definition (rosbag2's docs/message_definition_encoding.md), so ``ros2 bag
info``/``play``, Foxglove and PlotJuggler open it. The ``mcap`` package writes it.

Topics: ``<agent>/step_command`` (StepCommand, as sent), ``<agent>/step_result`` (the
StepResult of each Episode feedback), ``<agent>/step_timing`` (the StepTiming the same
feedback carries), ``<agent>/status`` (AgentStatus), and any topic given to
``record_topic`` (e.g. the joint states, one in ``every``, and the trajectories sent to
the controller).

What passes through the client is stamped when it passes and written a few steps later,
right after a command is sent, while the agent runs it: recording then adds nothing
measurable to a step (bench step_overhead).

A resumed run writes the next file, ``run.2.mcap``, beside the first. A run killed
mid-write keeps what reached the disk, all but the chunk being filled and the last few
steps not yet written; the file then lacks its summary. ``recover`` rewrites such a file
whole (every message that reached the disk, then a summary), so that any MCAP reader
opens it; a resume recovers the run's files before it records again, and
``python -m spin_decoupler_ros.rl.recording recover FILE`` does it by hand.

Tests: ``test_recording_schema.py`` (schemas, a file cut short by a kill and recovered),
``test_timing_models.py::test_a_seeded_run_repeats_through_terminations_resets_and_a_resume``
(the files of SIGKILLed trainers, opened with ``make_reader`` after the resume), and
``test_panda.py::test_short_training_run_starts_the_mock_set_and_writes_its_artifacts``
(a real run read back: every step once, in order).
"""

from __future__ import annotations

import importlib
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the schema functions work without rclpy (unit-tested so)
    from rclpy.node import Node
    from rclpy.qos import QoSProfile

SCHEMA_SEPARATOR = "=" * 80
PRIMITIVE_TYPES = frozenset(
    [
        "bool",
        "byte",
        "char",
        "float32",
        "float64",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "string",
        "wstring",
    ]
)
_FIELD_TYPE = re.compile(r"^\s*([A-Za-z][\w/]*)")


def type_name_of(message_class: type) -> str:
    """``pkg/msg/Type`` of a generated rclpy message class."""
    package = message_class.__module__.split(".")[0]
    return f"{package}/msg/{message_class.__name__}"


def message_class(type_name: str) -> type:
    """The rclpy message class of ``pkg/msg/Type`` (or ``pkg/Type``)."""
    package, *_, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)  # type: ignore[no-any-return]


def _msg_file(type_name: str) -> Path:
    from ament_index_python.packages import get_package_share_directory

    package, *_, name = type_name.split("/")
    return Path(get_package_share_directory(package)) / "msg" / f"{name}.msg"


def used_types(definition: str, package: str) -> list[str]:
    """The message types a .msg text's fields use, as ``pkg/msg/Type``, in order."""
    used: list[str] = []
    for line in definition.splitlines():
        line = line.split("#", 1)[0]
        match = _FIELD_TYPE.match(line)
        if not match:
            continue  # blank or a comment (constants have primitive types: skipped below)
        base = match.group(1)  # "pkg/Type", "Type" or a primitive; bounds and arrays follow it
        if base in PRIMITIVE_TYPES:
            continue
        pkg, _, name = base.rpartition("/")
        full = f"{pkg or package}/msg/{name}" if "/msg/" not in base else base
        if full not in used:
            used.append(full)
    return used


def message_definition(type_name: str, read: Callable[[str], str] | None = None) -> str:
    """The complete ``ros2msg`` definition of ``pkg/msg/Type``: its .msg text, then each type
    it uses, at any depth, once, after a line of 80 '=' and ``MSG: pkg/msg/Type``."""
    read = read or (lambda name: _msg_file(name).read_text())
    texts: dict[str, str] = {}
    pending = [type_name]
    while pending:
        name = pending.pop(0)
        if name in texts:
            continue
        texts[name] = read(name)
        pending.extend(used_types(texts[name], name.split("/")[0]))
    parts = [texts.pop(type_name).rstrip("\n")]
    parts += [f"{SCHEMA_SEPARATOR}\nMSG: {name}\n{text.rstrip(chr(10))}" for name, text in texts.items()]
    return "\n".join(parts) + "\n"


def next_recording_path(run_dir: Path) -> Path:
    """``run.mcap``, or for a run that already has one (a resumed run) the next ``run.N.mcap``."""
    path = run_dir / "run.mcap"
    index = 2
    while path.exists():
        path = run_dir / f"run.{index}.mcap"
        index += 1
    return path


MCAP_MAGIC = b"\x89MCAP0\r\n"  # a file's first and last 8 bytes, once finished


def is_finished(path: Path) -> bool:
    """Whether an MCAP file ends as a finished one does (its footer, then the magic): a
    file whose writer was killed does not."""
    with open(path, "rb") as file:
        if file.seek(0, 2) < 2 * len(MCAP_MAGIC):
            return False
        file.seek(-len(MCAP_MAGIC), 2)
        return file.read() == MCAP_MAGIC


def recover(path: Path) -> int:
    """Rewrite an unfinished MCAP file (a killed writer's) whole: every message that
    reached the disk, in the order written, with its schema and channel, then the summary
    a finished file has. Written beside it and renamed over it, so a kill meanwhile leaves
    the file as it was. Returns the number of messages kept."""
    from mcap.exceptions import McapError
    from mcap.reader import NonSeekingReader
    from mcap.writer import CompressionType, Writer

    recovered = path.with_name(f".{path.name}.recovering")
    kept = 0
    with open(path, "rb") as source, open(recovered, "wb") as target:
        writer = Writer(target, chunk_size=256 * 1024, compression=CompressionType.ZSTD)
        writer.start(profile="ros2", library="spin_decoupler")
        schemas: dict[int, int] = {}
        channels: dict[int, int] = {}
        try:
            for schema, channel, message in NonSeekingReader(source).iter_messages(log_time_order=False):
                if schema is not None and schema.id not in schemas:
                    schemas[schema.id] = writer.register_schema(schema.name, schema.encoding, schema.data)
                if channel.id not in channels:
                    channels[channel.id] = writer.register_channel(
                        channel.topic, channel.message_encoding, schemas.get(channel.schema_id, 0), channel.metadata
                    )
                writer.add_message(
                    channel_id=channels[channel.id],
                    log_time=message.log_time,
                    publish_time=message.publish_time,
                    data=message.data,
                    sequence=message.sequence,
                )
                kept += 1
        except (McapError, EOFError, ValueError):
            pass  # the chunk being written when the writer died: not on the disk whole
        writer.finish()
    recovered.replace(path)
    return kept


def recover_unfinished(run_dir: Path) -> list[tuple[Path, int]]:
    """Recover every unfinished recording of a run (``recover``): what a resume does first."""
    return [(path, recover(path)) for path in sorted(run_dir.glob("run*.mcap")) if not is_finished(path)]


def record_clients(run_dir: Path, clients: list[Any]) -> RunRecorder:
    """run.mcap (run.N.mcap for a resumed run) holding each client's traffic with its agent:
    commands, answers, timing and status. Close it when the run ends. The run's earlier
    files that a kill left unfinished (a resumed run's) are recovered first (``recover``)."""
    recover_unfinished(run_dir)
    recorder = RunRecorder(next_recording_path(run_dir))
    for client in clients:
        client.channel.record_to(recorder)
    return recorder


class RunRecorder:
    """Writes serialized messages to one MCAP file; safe to call from executor callbacks."""

    def __init__(self, path: Path) -> None:
        from mcap.writer import CompressionType, Writer

        self.path = path
        self._file = open(path, "wb")  # noqa: SIM115 - closed in close()
        # Chunks of 256 kB: a killed run loses at most the last one.
        self._writer = Writer(self._file, chunk_size=256 * 1024, compression=CompressionType.ZSTD)
        self._writer.start(profile="ros2", library="spin_decoupler")
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self._sequence: dict[str, int] = {}
        self._lock = threading.Lock()
        self._subscriptions: list[Any] = []
        self._pending: list[tuple[str, Any, int]] = []
        self.messages = 0
        self.closed = False

    def _channel(self, topic: str, type_name: str) -> int:
        channel = self._channels.get(topic)
        if channel is None:
            schema = self._schemas.get(type_name)
            if schema is None:
                schema = self._writer.register_schema(type_name, "ros2msg", message_definition(type_name).encode())
                self._schemas[type_name] = schema
            channel = self._writer.register_channel(topic=topic, message_encoding="cdr", schema_id=schema)
            self._channels[topic] = channel
            self._sequence[topic] = 0
        return channel

    def write_serialized(self, topic: str, type_name: str, data: bytes, log_time_ns: int | None = None) -> None:
        """Record CDR bytes of ``type_name`` on ``topic`` at ``log_time_ns`` (now: wall clock, as ros2 bag)."""
        stamp = time.time_ns() if log_time_ns is None else log_time_ns
        with self._lock:
            if self.closed:
                return
            channel = self._channel(topic, type_name)
            self._sequence[topic] += 1
            self._writer.add_message(
                channel_id=channel, log_time=stamp, publish_time=stamp, data=data, sequence=self._sequence[topic]
            )
            self.messages += 1

    def write(self, topic: str, message: Any, log_time_ns: int | None = None) -> None:
        """Record an rclpy message on ``topic``, stamped now; it is serialized and written at
        the next ``flush`` (the client flushes while its agent runs the step it just sent:
        recording then costs the step's path only this append). The message must not
        change until then: the client records messages it makes or receives anew."""
        stamp = time.time_ns() if log_time_ns is None else log_time_ns
        with self._lock:
            if not self.closed:
                self._pending.append((topic, message, stamp))

    @property
    def pending(self) -> int:
        """Messages given to ``write`` and not written yet."""
        return len(self._pending)

    def flush(self) -> None:
        """Serialize and write what ``write`` was given so far."""
        from rclpy.serialization import serialize_message

        with self._lock:
            pending, self._pending = self._pending, []
        for topic, message, stamp in pending:
            self.write_serialized(topic, type_name_of(type(message)), serialize_message(message), stamp)

    def record_topic(
        self, node: Node, topic: str, type_name: str, every: int = 1, qos: QoSProfile | None = None
    ) -> None:
        """Subscribe ``node`` to ``topic`` without deserializing and record one message in ``every``
        (best effort by default, which matches any publisher)."""
        from rclpy.qos import qos_profile_sensor_data

        if every < 1:
            raise ValueError(f"record every {every}th message of {topic}: must be at least 1")
        counter = [0]

        def on_message(data: bytes) -> None:
            counter[0] += 1
            if (counter[0] - 1) % every == 0:
                self.write_serialized(topic, type_name, data)

        self._subscriptions.append(
            (
                node,
                node.create_subscription(
                    message_class(type_name), topic, on_message, qos or qos_profile_sensor_data, raw=True
                ),
            )
        )

    def close(self) -> None:
        """Stop recording and write the file's summary (a file ros2 bag can index)."""
        self.flush()
        with self._lock:
            if self.closed:
                return
            self.closed = True
            for node, subscription in self._subscriptions:
                node.destroy_subscription(subscription)
            self._subscriptions.clear()
            self._writer.finish()
            self._file.close()


def main(argv: list[str] | None = None) -> int:
    """``recover FILE...``: rewrite killed runs' recordings whole (see ``recover``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m spin_decoupler_ros.rl.recording", description=main.__doc__)
    parser.add_argument("command", choices=("recover",))
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.files:
        if not path.is_file():
            parser.exit(2, f"{parser.prog}: {path}: no such file\n")
        if is_finished(path):
            print(f"{path}: finished already, left as it is")
        else:
            print(f"{path}: recovered, {recover(path)} messages kept")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
