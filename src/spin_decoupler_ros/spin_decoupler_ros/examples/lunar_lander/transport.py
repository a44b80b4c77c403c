"""What the LunarLander agent transports, and how the RL side turns it back into
Gymnasium's reward and termination. Pure numpy: both sides and the tests use it.

The agent's observation (22 numbers), per its last physics frame:

==========  ========================================================================
[0:8]       Gymnasium's observation (x, y, vx, vy, angle, angular velocity, legs)
[8:16]      the same, one frame earlier
[16]        crashed: the lander's body touched the ground (Gymnasium's ``game_over``)
[17]        asleep: Box2D put the lander to rest (Gymnasium's "not awake": landed)
[18], [19]  frames fired so far this episode: main engine, side engines (a fuel gauge)
[20]        the discrete action of the last frame
[21]        frames so far this episode (Gymnasium's time limit is 1000)
==========  ========================================================================

Gymnasium's reward, per frame: ``shaping(now) - shaping(frame before)`` minus 0.30 for
a frame with the main engine and 0.03 with a side engine, where ``shaping(s) = -100
|(x, y)| - 100 |(vx, vy)| - 100 |angle| + 10 leg1 + 10 leg2``; the episode terminates,
and that frame's reward is replaced by -100, when the body touches the ground or |x| >=
1, and by +100 (checked last, so it wins) when the lander falls asleep. An RL step
spans several frames, so its reward is the sum over them. Shaping telescopes:
``shaping(end) - shaping(start)``; the fuel terms come from the counters; on a terminal
step the last frame's shaping and fuel are dropped (its reward is the +-100), which is
what the frame before and the last frame's action are there for.
"""

from __future__ import annotations

import numpy as np

OBSERVATION = slice(0, 8)
PREVIOUS = slice(8, 16)
CRASHED, ASLEEP, MAIN_FRAMES, SIDE_FRAMES, LAST_ACTION, FRAMES = 16, 17, 18, 19, 20, 21
SIZE = 22
FRAMES_PER_EPISODE = 1000  # Gymnasium's LunarLander-v3 time limit
MAIN_ENGINE_COST = 0.30
SIDE_ENGINE_COST = 0.03


def shaping(state: np.ndarray) -> float:
    return float(
        -100.0 * np.hypot(state[0], state[1])
        - 100.0 * np.hypot(state[2], state[3])
        - 100.0 * abs(state[4])
        + 10.0 * state[6]
        + 10.0 * state[7]
    )


def engines(action: int) -> tuple[int, int]:
    """(main, side) engine frames an action fires."""
    return int(action == 2), int(action in (1, 3))


def ended(observation: np.ndarray) -> bool:
    """Whether the lander's episode is over: crashed, out of the screen, or landed."""
    return bool(observation[CRASHED] or abs(observation[0]) >= 1.0 or observation[ASLEEP])


def out_of_time(observation: np.ndarray) -> bool:
    """Whether the episode has run Gymnasium's 1000 frames (think-time frames count)."""
    return bool(observation[FRAMES] >= FRAMES_PER_EPISODE)


def step_reward(start: np.ndarray, end: np.ndarray) -> tuple[float, bool]:
    """Gymnasium's summed reward over the frames from ``start`` to ``end`` (two agent
    observations), and whether the episode terminated."""
    main = end[MAIN_FRAMES] - start[MAIN_FRAMES]
    side = end[SIDE_FRAMES] - start[SIDE_FRAMES]
    if not ended(end):
        reward = shaping(end[OBSERVATION]) - shaping(start[OBSERVATION])
        return reward - MAIN_ENGINE_COST * main - SIDE_ENGINE_COST * side, False
    last_main, last_side = engines(int(end[LAST_ACTION]))
    reward = shaping(end[PREVIOUS]) - shaping(start[OBSERVATION])
    reward -= MAIN_ENGINE_COST * (main - last_main) + SIDE_ENGINE_COST * (side - last_side)
    reward += 100.0 if end[ASLEEP] else -100.0
    return reward, True


class LanderPlant:
    """Gymnasium's LunarLander stepped one frame at a time, reporting the 22 numbers.

    Once the episode is over the lander is left as it is: frames stop.
    """

    def __init__(self) -> None:
        from gymnasium.envs.box2d.lunar_lander import LunarLander

        self.env = LunarLander()
        self.observation = np.zeros(8)
        self.previous = np.zeros(8)
        self.main_frames = 0
        self.side_frames = 0
        self.last_action = 0
        self.frames = 0
        self.over = True

    def reset(self, seed: int | None) -> None:
        observation, _ = self.env.reset(seed=seed)
        self.observation = observation.astype(np.float64)
        self.previous = self.observation.copy()
        self.main_frames = self.side_frames = 0
        self.last_action = 0
        self.frames = 0
        self.over = False

    def frame(self, action: int) -> None:
        """One physics frame (1/50 s of lander time) with ``action``; none once it is over."""
        if self.over:
            return
        observation, _, terminated, _, _ = self.env.step(action)  # Gymnasium's reward is not used
        main, side = engines(action)
        self.main_frames += main
        self.side_frames += side
        self.last_action = action
        self.frames += 1
        self.previous, self.observation = self.observation, observation.astype(np.float64)
        self.over = bool(terminated)

    def transported(self) -> np.ndarray:
        lander = self.env.lander
        crashed = float(self.env.game_over)
        asleep = float(lander is not None and not lander.awake)
        return np.concatenate(
            [
                self.observation,
                self.previous,
                [crashed, asleep, self.main_frames, self.side_frames, self.last_action, self.frames],
            ]
        )
