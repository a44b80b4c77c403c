"""The RL side: a synchronous client, a Gymnasium env over it, and the channel beneath both."""

from spin_decoupler_ros.rl.channel import AgentChannel
from spin_decoupler_ros.rl.client import RLClient
from spin_decoupler_ros.rl.env import DecoupledEnv, StepRequest
from spin_decoupler_ros.rl.step_answer import StepAnswer

__all__ = ["AgentChannel", "DecoupledEnv", "RLClient", "StepAnswer", "StepRequest"]
