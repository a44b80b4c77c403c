"""Where agents live in the ROS graph: their namespaces and the names under them."""

from __future__ import annotations


def agent_namespaces(count: int, prefix: str = "/panda") -> list[str]:
    """The namespaces of ``count`` agents: ``/panda0`` ... (the launch files' convention)."""
    return [f"{prefix}{index}" for index in range(count)]


def join_name(namespace: str, name: str) -> str:
    """``name`` under ``namespace``; relative (resolved in the node's own namespace) when
    the namespace is empty."""
    namespace = namespace.rstrip("/")
    if not namespace:
        return name
    return f"{namespace}/{name}" if namespace.startswith("/") else f"/{namespace}/{name}"
