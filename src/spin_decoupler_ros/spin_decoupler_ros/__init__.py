"""spin_decoupler_ros: an RL learner and a robot's control loop, run apart over ROS 2.

- ``core``: the pure logic (protocol state machine, timing, action spaces, errors).
- ``agent``: ``AgentNode``, the base of every agent's control loop.
- ``rl``: ``RLClient``, ``DecoupledEnv`` (Gymnasium) and the channel they share.
- ``examples``: the first-order plant and LunarLander, as agent and RL nodes.
- ``skeletons``: minimal agent and env to copy when starting a new robot.
"""
