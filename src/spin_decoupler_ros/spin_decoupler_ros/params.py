"""Declaring node parameters with descriptors, and turning a bad value into a clear error.

rclpy checks a declared range itself, but its exception text differs between distros
and does not say what the parameter is for; these helpers raise ParameterError with
the name, the value, the allowed range and the unit, which ``run_node`` prints before
the node exits.
"""

from __future__ import annotations

import math
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node

from spin_decoupler_ros.core.errors import ParameterError


def _describe(low: float, high: float, unit: str) -> str:
    span = f"[{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
    return f"{span}{' ' + unit if unit else ''}"


def declare_float(
    node: Node,
    name: str,
    default: float,
    description: str,
    *,
    unit: str = "",
    low: float = -math.inf,
    high: float = math.inf,
    read_only: bool = True,
) -> float:
    """Declare a double parameter with a range; return its value or raise ParameterError."""
    descriptor = ParameterDescriptor(
        description=f"{description} ({unit})" if unit else description,
        read_only=read_only,
    )
    if math.isfinite(low) and math.isfinite(high):
        descriptor.floating_point_range = [FloatingPointRange(from_value=low, to_value=high, step=0.0)]
    value = _declare(
        node,
        name,
        float(default),
        descriptor,
        f"a number (e.g. {float(default)!r})",
        out_of_range=f"allowed range {_describe(low, high, unit)}: {description}",
    )
    value = float(value)
    if not (low <= value <= high) or math.isnan(value):
        raise ParameterError(
            f"parameter '{name}' = {value:g} is outside the allowed range {_describe(low, high, unit)}: {description}"
        )
    return value


def declare_int(
    node: Node,
    name: str,
    default: int,
    description: str,
    *,
    low: int = -(2**63),
    high: int = 2**63 - 1,
    read_only: bool = True,
) -> int:
    descriptor = ParameterDescriptor(description=description, read_only=read_only)
    descriptor.integer_range = [IntegerRange(from_value=low, to_value=high, step=1)]
    value = int(
        _declare(
            node,
            name,
            int(default),
            descriptor,
            "a whole number",
            out_of_range=f"allowed range [{low}, {high}]: {description}",
        )
    )
    if not low <= value <= high:
        raise ParameterError(f"parameter '{name}' = {value} is outside [{low}, {high}]: {description}")
    return value


def declare_bool(node: Node, name: str, default: bool, description: str, *, read_only: bool = True) -> bool:
    descriptor = ParameterDescriptor(description=description, read_only=read_only)
    return bool(_declare(node, name, bool(default), descriptor, "true or false"))


def declare_str(
    node: Node,
    name: str,
    default: str,
    description: str,
    *,
    choices: tuple[str, ...] = (),
    read_only: bool = True,
) -> str:
    descriptor = ParameterDescriptor(description=description, read_only=read_only)
    value = str(_declare(node, name, str(default), descriptor, "a string"))
    if choices and value not in choices:
        raise ParameterError(f"parameter '{name}' = '{value}' is not one of {', '.join(choices)}: {description}")
    return value


def declare_float_list(node: Node, name: str, default: list[float], description: str) -> list[float]:
    descriptor = ParameterDescriptor(description=description, read_only=True)
    value = _declare(node, name, [float(x) for x in default], descriptor, "a list of numbers like [0.1, 0.2]")
    return [float(x) for x in value]


def _declare(
    node: Node,
    name: str,
    default: object,
    descriptor: ParameterDescriptor,
    expected: str,
    out_of_range: str = "",
) -> Any:
    """The parameter's value as declared (its type follows ``default``). Declared
    before (a managed node configured again after cleanup): the value it has."""
    if node.has_parameter(name):
        return node.get_parameter(name).value
    try:
        return node.declare_parameter(name, default, descriptor).value
    except InvalidParameterTypeException as exc:
        raise ParameterError(f"parameter '{name}' has the wrong type, expected {expected}: {exc}") from None
    except InvalidParameterValueException as exc:
        reason = out_of_range or descriptor.description
        raise ParameterError(f"parameter '{name}' is invalid ({exc}); {reason}") from None
