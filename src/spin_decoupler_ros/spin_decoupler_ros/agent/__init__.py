"""The agent side: ``AgentNode``, a timer-driven control loop serving RL steps."""

from spin_decoupler_ros.agent.agent_node import AgentNode
from spin_decoupler_ros.agent.latest_message import LatestMessage, sensor_qos
from spin_decoupler_ros.agent.parameters import AgentParameters, AgentSpaces

__all__ = ["AgentNode", "AgentParameters", "AgentSpaces", "LatestMessage", "sensor_qos"]
