"""run.mcap's schemas: each type's complete ros2msg definition, as rosbag2 writes it
(rosbag2 docs/message_definition_encoding.md), without rclpy."""

from __future__ import annotations

from pathlib import Path

import pytest

from spin_decoupler_ros.rl.recording import SCHEMA_SEPARATOR, message_definition, next_recording_path, used_types

DEFINITIONS = {
    "demo_msgs/msg/Outer": (
        "# a comment naming other_msgs/Nothing\n"
        "uint8 KIND_A=1\n"
        "string<=16 name\n"
        "Inner[] inners\n"
        "builtin_interfaces/Time stamp\n"
        "float64[3] xyz\n"
        "other_msgs/Pair[<=4] pairs\n"
    ),
    "demo_msgs/msg/Inner": "builtin_interfaces/Duration wait\nint32 count 5\n",
    "other_msgs/msg/Pair": "builtin_interfaces/Time a\nbuiltin_interfaces/Time b\n",
    "builtin_interfaces/msg/Time": "int32 sec\nuint32 nanosec\n",
    "builtin_interfaces/msg/Duration": "int32 sec\nuint32 nanosec\n",
}


def test_the_types_a_definition_uses_skip_primitives_constants_bounds_and_comments() -> None:
    assert used_types(DEFINITIONS["demo_msgs/msg/Outer"], "demo_msgs") == [
        "demo_msgs/msg/Inner",
        "builtin_interfaces/msg/Time",
        "other_msgs/msg/Pair",
    ]


def test_a_complete_definition_lists_every_type_used_at_any_depth_once() -> None:
    text = message_definition("demo_msgs/msg/Outer", read=DEFINITIONS.__getitem__)
    sections = text.split(SCHEMA_SEPARATOR + "\n")
    assert sections[0] == DEFINITIONS["demo_msgs/msg/Outer"]
    headers = [section.splitlines()[0] for section in sections[1:]]
    assert headers == [
        "MSG: demo_msgs/msg/Inner",
        "MSG: builtin_interfaces/msg/Time",
        "MSG: other_msgs/msg/Pair",
        "MSG: builtin_interfaces/msg/Duration",
    ]
    assert sections[-1] == "MSG: builtin_interfaces/msg/Duration\n" + DEFINITIONS["builtin_interfaces/msg/Duration"]


def test_a_resumed_run_records_to_the_next_file(tmp_path: Path) -> None:
    assert next_recording_path(tmp_path) == tmp_path / "run.mcap"
    (tmp_path / "run.mcap").touch()
    assert next_recording_path(tmp_path) == tmp_path / "run.2.mcap"
    (tmp_path / "run.2.mcap").touch()
    assert next_recording_path(tmp_path) == tmp_path / "run.3.mcap"


def test_a_recording_cut_short_by_a_kill_reads_up_to_its_last_whole_chunk(tmp_path: Path) -> None:
    """A killed trainer never finishes its file: what reached the disk stays readable."""
    import shutil

    from mcap.exceptions import EndOfFile
    from mcap.reader import NonSeekingReader
    from mcap_ros2.decoder import DecoderFactory

    from spin_decoupler_msgs.msg import StepResult
    from spin_decoupler_ros.rl.recording import RunRecorder

    recorder = RunRecorder(tmp_path / "run.mcap")
    for seq in range(1, 5001):
        recorder.write("/step_result", StepResult(seq=seq, observation=[float(seq)] * 23))
        recorder.flush()  # as the client does each step
    recorder._file.flush()  # what a kill leaves: the whole chunks written so far, no summary
    shutil.copy(tmp_path / "run.mcap", tmp_path / "killed.mcap")
    recorder.close()
    seqs = []
    with open(tmp_path / "killed.mcap", "rb") as file, pytest.raises(EndOfFile):
        reader = NonSeekingReader(file, decoder_factories=[DecoderFactory()])
        for _, _, _, decoded in reader.iter_decoded_messages(log_time_order=False):
            seqs.append(decoded.seq)
    assert 2000 < len(seqs) < 5000 and seqs == list(range(1, len(seqs) + 1))
    # Recovered, it opens as a finished file does, with every message that reached the disk.
    from mcap.reader import make_reader

    from spin_decoupler_ros.rl.recording import is_finished, recover, recover_unfinished

    killed = (tmp_path / "killed.mcap").rename(tmp_path / "run.2.mcap")  # as a resumed run names it
    assert not is_finished(killed) and is_finished(tmp_path / "run.mcap")
    assert recover_unfinished(tmp_path) == [(killed, len(seqs))]
    assert is_finished(killed) and recover_unfinished(tmp_path) == []
    with open(killed, "rb") as file:
        recovered = make_reader(file, decoder_factories=[DecoderFactory()])
        summary = recovered.get_summary()
        assert summary is not None and summary.statistics is not None
        assert summary.statistics.message_count == len(seqs)
        assert [decoded.seq for _, _, _, decoded in recovered.iter_decoded_messages()] == seqs
    assert recover(tmp_path / "run.mcap") == 5000  # (a finished file loses nothing either)


def test_a_finished_recording_holds_what_rosbag2s_mcap_reader_reads(tmp_path: Path) -> None:
    """rosbag2's MCAP plugin (rosbag2_storage_mcap 0.32.0, Kilted: src/mcap_storage.cpp,
    ``read_metadata``) takes a bag's counts and times from the summary's Statistics record,
    each topic's type from its schema's name and its serialization format from the
    channel's message encoding: all of them must be there, as ros2 bag writes them."""
    import re

    from builtin_interfaces.msg import Duration
    from mcap.reader import make_reader

    from spin_decoupler_msgs.msg import StepCommand, StepResult
    from spin_decoupler_ros.rl.recording import RunRecorder

    recorder = RunRecorder(tmp_path / "run.mcap")
    for seq in range(1, 4):
        recorder.write("/panda/step_command", StepCommand(seq=seq, action=[0.1] * 3, duration=Duration(nanosec=10**8)))
        recorder.write("/panda/step_result", StepResult(seq=seq, observation=[float(seq)] * 17))
    recorder.write("/panda/step_command", StepCommand(seq=4, kind=StepCommand.FINISH))
    recorder.close()

    with open(tmp_path / "run.mcap", "rb") as file:
        reader = make_reader(file)
        assert reader.get_header().profile == "ros2"
        summary = reader.get_summary()
    assert summary is not None and summary.statistics is not None
    statistics = summary.statistics
    counts = {summary.channels[channel].topic: count for channel, count in statistics.channel_message_counts.items()}
    assert counts == {"/panda/step_command": 4, "/panda/step_result": 3}
    assert statistics.message_count == 7
    assert statistics.message_start_time <= statistics.message_end_time
    types = {}
    for channel in summary.channels.values():
        schema = summary.schemas[channel.schema_id]
        assert channel.message_encoding == "cdr" and schema.encoding == "ros2msg"
        assert re.fullmatch(r"\w+/msg/\w+", schema.name)
        types[channel.topic] = schema.name
    assert types == {
        "/panda/step_command": "spin_decoupler_msgs/msg/StepCommand",
        "/panda/step_result": "spin_decoupler_msgs/msg/StepResult",
    }
