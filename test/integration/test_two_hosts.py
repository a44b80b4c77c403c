"""RL side and agent side on two "hosts": two network namespaces joined by a veth pair,
each with its own network stack, as two machines on one Ethernet link would be.

The agent (first-order plant) runs in one, the trainer in the other; DDS discovers
across the link by multicast, as on a LAN, and Fast DDS is limited to UDP so no
shared-memory shortcut can carry the data. The trainer trains a few hundred steps, and
the link's byte counters prove the traffic crossed it. Needs root and iproute2 (skips
without them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from spin_decoupler_ros.dds_profile import dds_environment
from spin_decoupler_ros.tools.paths import find_config
from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup, ros_args

PLANT = "spin_decoupler_ros.examples.first_order_plant"
CONFIG = find_config("first_order_plant.yaml")


@dataclass
class Host:
    netns: str
    interface: str
    address: str

    def exec_prefix(self) -> list[str]:
        # Its own network stack, and its own host name (DDS tells hosts apart by it).
        rename = f'hostname {self.netns.replace("_", "-")} && exec "$0" "$@"'
        return ["ip", "netns", "exec", self.netns, "unshare", "--uts", "sh", "-c", rename]

    def received_bytes(self) -> int:
        path = f"/sys/class/net/{self.interface}/statistics/rx_bytes"
        command = ["ip", "netns", "exec", self.netns, "cat", path]
        return int(subprocess.run(command, capture_output=True, text=True).stdout)


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def two_hosts() -> Iterator[tuple[Host, Host]]:
    if shutil.which("ip") is None or shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root, iproute2 (ip netns) and util-linux (unshare) to build two hosts")
    tag = f"{os.getpid() % 100000}"
    rl = Host(f"sd_rl_{tag}", f"sdr{tag}", "10.231.0.1")
    agent = Host(f"sd_agent_{tag}", f"sda{tag}", "10.231.0.2")
    try:
        for host in (rl, agent):
            ip("netns", "add", host.netns)
        ip("link", "add", rl.interface, "type", "veth", "peer", "name", agent.interface)
        for host in (rl, agent):
            ip("link", "set", host.interface, "netns", host.netns)
            ip("-n", host.netns, "addr", "add", f"{host.address}/24", "dev", host.interface)
            ip("-n", host.netns, "link", "set", host.interface, "up")
            ip("-n", host.netns, "link", "set", "lo", "up")
            # DDS discovery is multicast (239.255.0.1): route it onto the link.
            ip("-n", host.netns, "route", "add", "224.0.0.0/4", "dev", host.interface)
    except subprocess.CalledProcessError as exc:
        for host in (rl, agent):
            subprocess.run(["ip", "netns", "del", host.netns], capture_output=True)
        pytest.skip(f"cannot build network namespaces here: {exc.stderr.strip()}")
    yield rl, agent
    for host in (rl, agent):
        subprocess.run(["ip", "netns", "del", host.netns], capture_output=True)  # takes the veth pair along


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_training_across_two_hosts(two_hosts: tuple[Host, Host], ros_domain: dict[str, str], tmp_path: Path) -> None:
    rl_host, agent_host = two_hosts
    # Across machines: discovery on the subnet (not localhost only), UDP only.
    network = {
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET",
        "ROS_LOCALHOST_ONLY": "0",
        "FASTDDS_BUILTIN_TRANSPORTS": "UDPv4",
        **dds_environment({}),  # the decoupler's profile for a network, not the tests' localhost one
    }
    run_dir = tmp_path / "run"
    before = agent_host.received_bytes()
    with ProcessGroup() as group:
        agent = group.start(
            NodeProcess(
                f"{PLANT}.agent",
                ros_args(namespace="/plant", params_files=[CONFIG]),
                log_path=tmp_path / "agent.log",
                env=network,
                prefix=agent_host.exec_prefix(),
            )
        )
        assert agent.wait_for_log("agent ready", 30), agent.log_text()
        trainer = subprocess.run(
            [
                *rl_host.exec_prefix(),
                sys.executable,
                "-m",
                f"{PLANT}.train",
                *ros_args(
                    namespace="/plant",
                    params_files=[CONFIG],
                    params={"total_timesteps": 300, "eval_episodes": 3, "run_dir": str(run_dir)},
                ),
            ],
            env={**os.environ, **network},
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert trainer.returncode == 0, trainer.stdout + trainer.stderr + agent.log_text()
    results = json.loads((run_dir / "results.json").read_text())
    assert results["total_timesteps"] == 300
    assert results["mean_tracking_error"] < results["zero_action_tracking_error"]
    # 300 steps and the evaluations' thousand more, every one a command in and an answer
    # out: all of it over the link.
    crossed = agent_host.received_bytes() - before
    assert crossed > 100_000, f"only {crossed} bytes crossed the link"
