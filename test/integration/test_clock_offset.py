"""Two clocks: the agent's wall clock is skewed on purpose (an LD_PRELOAD shim shifts its
CLOCK_REALTIME), as a second host's would be; the RL side's online NTP-style estimate
of the offset must recover the skew within 1 ms, and the per-step log must carry it."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from spin_decoupler_ros.rl import RLClient
from spin_decoupler_ros.tools.processes import NodeProcess, ProcessGroup, ros_args

SHIM_SOURCE = Path(__file__).resolve().parents[1] / "nodes" / "skew_clock.c"
PLANT_AGENT = "spin_decoupler_ros.examples.first_order_plant.agent"


@pytest.fixture(scope="module")
def skew_shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the clock-skew shim")
    library = tmp_path_factory.mktemp("shim") / "skew_clock.so"
    command = [compiler, "-O2", "-shared", "-fPIC", "-o", str(library), str(SHIM_SOURCE), "-ldl", "-lpthread"]
    subprocess.run(command, check=True)
    return library


@pytest.mark.parametrize("skew_s", [2.345678, -0.75, 0.0])
def test_offset_estimate_recovers_a_skewed_agent_clock(
    skew_s: float, skew_shim: Path, processes: ProcessGroup, tmp_path: Path
) -> None:
    agent = processes.start(
        NodeProcess(
            PLANT_AGENT,
            ros_args(params={"rl_timestep": 0.01, "control_rate": 500.0}),
            log_path=tmp_path / "skewed_agent.log",
            env={"LD_PRELOAD": str(skew_shim), "SKEW_CLOCK_NS": str(round(skew_s * 1e9))},
        )
    )
    assert agent.wait_for_log("agent ready", 30), agent.log_text()
    with RLClient(connect_timeout=30) as client:
        sent = time.time()
        answer = client.reset(seed=0)
        returned = time.time()
        # ATO is the agent's clock, read between our sending and our receiving: off from
        # ours by the skew.
        assert sent + skew_s - 1e-6 <= answer.ato <= returned + skew_s + 1e-6, (sent, answer.ato, returned)
        for _ in range(60):
            offset = client.step([0.0]).clock_offset
            assert offset is not None
            estimate: float = offset
            # NTP's bound: an exchange's offset is off by at most half its delay; the
            # estimate is the offset of one of the lowest-delay quarter of the window.
            samples = sorted(client.channel.offsets._samples, key=lambda sample: sample.delay_ns)
            bound_s = samples[max(1, len(samples) // 4) - 1].delay_ns / 2e9
            assert abs(estimate - skew_s) <= bound_s + 1e-9, (estimate, skew_s, bound_s)
        print(
            f"skew {skew_s:+} s: estimate off by {abs(estimate - skew_s) * 1e3:.3f} ms (bound {bound_s * 1e3:.3f} ms)"
        )


def test_the_per_step_log_carries_the_clock_offset() -> None:
    from spin_decoupler_ros.rl.training import STEP_LOG_FIELDS

    assert "clock_offset" in STEP_LOG_FIELDS and "ato" in STEP_LOG_FIELDS
