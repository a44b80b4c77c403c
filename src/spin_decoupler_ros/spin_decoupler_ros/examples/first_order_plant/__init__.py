"""The ancestor's first-order plant, decoupled: an agent node integrates
dx/dt = (K u - x) / tau at its control rate; the RL side learns to drive x to a setpoint."""
