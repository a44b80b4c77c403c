"""Minimal agent and env to copy when starting with a new robot or task."""
