"""The agent side: ``AgentNode``, a timer-driven control loop serving RL steps."""

from spin_decoupler_ros.agent.agent_node import AgentNode, AgentParameters, AgentSpaces

__all__ = ["AgentNode", "AgentParameters", "AgentSpaces"]
