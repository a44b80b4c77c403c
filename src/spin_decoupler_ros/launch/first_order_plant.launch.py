"""The first-order plant example: an agent node and an RL (training) node.

    ros2 launch spin_decoupler_ros first_order_plant.launch.py [total_timesteps:=3000]

Both nodes run in one namespace; the trainer's Episode client resolves the agent's
relative names (episode, step_command, ...) in it. Launch shuts down when training ends.
Where ``ros2 launch`` is not installed, ``python -m
spin_decoupler_ros.examples.first_order_plant.run`` starts the same two processes.
"""

from launch import LaunchDescription

from spin_decoupler_ros.example_launch import example_launch_description


def generate_launch_description() -> LaunchDescription:
    return example_launch_description("first_order_plant", namespace="/plant", total_timesteps=3000, algorithm="SAC")
