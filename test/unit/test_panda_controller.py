"""PandaController (the agent's per-period logic) and the in-process reach env, without ROS."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from franka_agent.core import panda
from franka_agent.core.controller import PandaController
from franka_agent.core.motion import MotionLimits, WorkspaceBox
from franka_agent.core.sim import PandaSim
from franka_agent.inprocess_env import InProcessPandaReachEnv

BOX = WorkspaceBox(np.array([0.2, -0.45, 0.05]), np.array([0.75, 0.45, 0.8]))
PERIOD = 10_000_000  # 100 Hz


def controller(**kwargs: object) -> PandaController:
    return PandaController("ee_delta", MotionLimits(acceleration_fraction=1.0), BOX, PERIOD, **kwargs)  # type: ignore[arg-type]


def test_nothing_is_commanded_before_a_measured_state() -> None:
    assert controller().command(0) is None


def test_a_new_action_never_changes_the_point_already_promised() -> None:
    c = controller()
    c.start(panda.HOME, 0)
    c.act(np.array([1.0, 0.0, 0.0]))
    commands = [c.command(k * PERIOD) for k in range(15)]
    promised = commands[-1].points[1]  # the reference one period after the next tick
    c.act(np.array([-1.0, 0.0, 0.0]))  # a change of course arrives between ticks
    following = c.command(15 * PERIOD)
    assert following is not None
    np.testing.assert_allclose(following.points[0][0], promised[0], atol=1e-12)
    np.testing.assert_allclose(following.points[0][1], promised[1], atol=1e-12)
    # ... and from there on the new course: the hand comes back.
    x_before = c.kinematics.tcp(following.points[0][0])[0]
    later = [c.command((16 + k) * PERIOD) for k in range(80)][-1]
    assert later is not None and c.kinematics.tcp(later.points[0][0])[0] < x_before - 0.01


def test_two_commands_at_one_clock_reading_plan_the_same() -> None:
    """A simulated clock can stand still between two ticks (the simulator waiting in
    lockstep): the second command sees no time pass, so it must repeat the plan, not
    divide by the zero interval (which once sent the mock accelerations of 70 rad/s^2)."""
    c = controller()
    c.start(panda.HOME, 0)
    c.act(np.array([1.0, -1.0, 1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a division by zero is a failure here
        for k in range(20):
            first, second = c.command(k * PERIOD), c.command(k * PERIOD)
            assert first is not None and second is not None
            for (q1, v1), (q2, v2) in zip(first.points, second.points, strict=True):
                assert np.isfinite(q2).all() and np.isfinite(v2).all()
                np.testing.assert_allclose(q2, q1, atol=1e-12)
                np.testing.assert_allclose(v2, v1, atol=1e-12)


def test_commands_are_stamped_now_with_points_a_period_apart() -> None:
    c = controller(trajectory_points=4)
    c.start(panda.HOME, 0)
    command = c.command(123 * PERIOD)
    assert command is not None and command.stamp_ns == 123 * PERIOD and command.period_ns == PERIOD
    assert len(command.points) == 4


def test_reset_goes_to_the_seeded_start_pose_and_reports_reaching_it() -> None:
    sim = PandaSim()
    c = controller(reset_noise=0.1)
    c.start(sim.q, 0)
    c.begin_reset(5, np.zeros(0), sim.q, sim.dq)
    expected = panda.HOME + np.random.default_rng(5).uniform(-0.1, 0.1, 7)
    np.testing.assert_allclose(c.reset_goal, expected)
    now = 0
    for _ in range(500):
        if c.reset_reached(sim.q, sim.dq):
            break
        command = c.command(now)
        assert command is not None
        from franka_agent.inprocess_env import _points

        sim.command(_points(command), now / 1e9)
        sim.step(10)
        now += PERIOD
    else:
        pytest.fail("the reset never completed")
    np.testing.assert_allclose(sim.q, expected, atol=5e-3)


def test_reset_options_give_the_start_pose() -> None:
    c = controller()
    c.begin_reset(None, panda.HOME + 0.2, None, np.zeros(7))
    np.testing.assert_allclose(c.reset_goal, np.clip(panda.HOME + 0.2, c.limits.lower, c.limits.upper))


def test_inprocess_env_runs_the_task_and_a_proportional_policy_solves_it() -> None:
    env = InProcessPandaReachEnv()
    successes = 0
    for episode in range(3):
        observation, _ = env.reset(seed=episode)
        assert observation.shape == (23,)
        for _ in range(50):
            error_dm = observation[20:23]  # target - TCP, decimetres
            observation, reward, terminated, truncated, info = env.step(np.clip(error_dm / 0.3, -1, 1))
            assert reward == pytest.approx(-10.0 * info["distance"])
            if terminated or truncated:
                break
        successes += info["is_success"]
    assert successes == 3
