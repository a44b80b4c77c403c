"""The ancestor's LunarLander example, decoupled: the agent only runs the lander and
transports what it sees; the RL side computes Gymnasium's reward and termination."""
