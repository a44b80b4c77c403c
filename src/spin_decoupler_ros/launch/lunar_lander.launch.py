"""The LunarLander example: an agent node running the lander, and a PPO training node
that rebuilds Gymnasium's reward and termination from what the agent transports.

    ros2 launch spin_decoupler_ros lunar_lander.launch.py [total_timesteps:=100000]

Both nodes run in one namespace; launch shuts down when training ends. Where ``ros2
launch`` is not installed, ``python -m spin_decoupler_ros.examples.lunar_lander.run``
starts the same two processes.
"""

from launch import LaunchDescription

from spin_decoupler_ros.example_launch import example_launch_description


def generate_launch_description() -> LaunchDescription:
    return example_launch_description("lunar_lander", namespace="/lander", total_timesteps=100_000, algorithm="PPO")
