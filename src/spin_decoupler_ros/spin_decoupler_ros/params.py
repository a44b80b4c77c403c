"""Declaring node parameters with descriptors, and turning a bad value into a clear error.

rclpy checks a declared range itself, but its exception text differs between distros
and does not say what the parameter is for; these helpers raise ParameterError with
the name, the value, the allowed range and the unit, which ``run_node`` prints before
the node exits.
"""

from __future__ import annotations

import difflib
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node
from rclpy.parameter import Parameter

from spin_decoupler_ros.core.errors import ParameterError


def _describe(low: float, high: float, unit: str) -> str:
    span = f"[{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
    return f"{span}{' ' + unit if unit else ''}"


def _describe_int(low: int, high: int) -> str:
    """An integer range as a user would write it: an unbounded side left out."""
    if high == 2**63 - 1:
        return f">= {low}" if low != -(2**63) else "any whole number"
    return f"<= {high}" if low == -(2**63) else f"[{low}, {high}]"


def refuse_bad_parameters(node_name: str, main: Callable[[], int]) -> int:
    """Run an entry point's ``main``; a bad parameter (a user's mistake, ParameterError)
    ends it with one line naming the parameter, exit code 2, no traceback
    (test_examples.py::test_an_examples_trainer_refuses_a_bad_parameter_in_one_line)."""
    try:
        return main()
    except ParameterError as exc:
        print(f"[{node_name}] fatal: {exc}", file=sys.stderr, flush=True)
        return 2


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
            out_of_range=f"allowed range {_describe_int(low, high)}: {description}",
        )
    )
    if not low <= value <= high:
        allowed = _describe_int(low, high)
        raise ParameterError(f"parameter '{name}' = {value} is outside the allowed range {allowed}: {description}")
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
    if choices:
        descriptor.additional_constraints = f"one of: {', '.join(choices)}"
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
    if isinstance(default, float) or (isinstance(default, list) and default and isinstance(default[0], float)):
        _integer_override_as_float(node, name)
    try:
        return node.declare_parameter(name, default, descriptor).value
    except InvalidParameterTypeException as exc:
        raise ParameterError(f"parameter '{name}' has the wrong type, expected {expected}: {exc}") from None
    except InvalidParameterValueException as exc:
        given = (_overrides(node) or {}).get(name)
        if given is None:  # (rclpy's own text, which names the value)
            why = out_of_range or descriptor.description
            raise ParameterError(f"parameter '{name}' is invalid ({exc}); {why}") from None
        shown = f"{given.value:g}" if isinstance(given.value, float) else repr(given.value)
        reason = f"is outside the {out_of_range}" if out_of_range else f"is refused: {descriptor.description}"
        raise ParameterError(f"parameter '{name}' = {shown} {reason}") from None


def _overrides(node: Node) -> dict[str, Parameter] | None:
    """The values given to the node (params files, ``-p``), by name. rclpy keeps them in
    ``Node._parameter_overrides`` (Humble to Rolling) with no public accessor; None if a
    release does not."""
    overrides = getattr(node, "_parameter_overrides", None)
    return overrides if isinstance(overrides, dict) else None


def _integer_override_as_float(node: Node, name: str) -> None:
    """People write ``control_rate: 100``: an integer given for a float parameter is
    taken as the float it means (rclpy would refuse its type;
    test_node_runner.py::test_an_integer_is_taken_where_a_float_is_declared)."""
    overrides = _overrides(node)
    given = overrides.get(name) if overrides is not None else None
    if given is None or overrides is None:
        return
    if given.type_ == Parameter.Type.INTEGER:
        overrides[name] = Parameter(name, Parameter.Type.DOUBLE, float(given.value))
    elif given.type_ == Parameter.Type.INTEGER_ARRAY:
        overrides[name] = Parameter(name, Parameter.Type.DOUBLE_ARRAY, [float(x) for x in given.value])


def check_no_unknown_parameters(node: Node, ignore_prefixes: Iterable[str] = ()) -> None:
    """Raise ParameterError naming every value given to ``node`` that it never declared
    (a typo in a params file or a ``-p``), with the nearest declared name. Call it once
    the node has declared all it reads."""
    overrides = _overrides(node)
    if not overrides:
        return
    ignored = ("qos_overrides.", *ignore_prefixes)
    unknown = sorted(n for n in overrides if not node.has_parameter(n) and not n.startswith(ignored))
    if not unknown:
        return
    declared = list(node._parameters)  # (the names rclpy holds; list_parameters needs a spin)
    hints = []
    for name in unknown:
        nearest = difflib.get_close_matches(name, declared, n=1, cutoff=0.6)
        hints.append(f"'{name}'" + (f" (did you mean '{nearest[0]}'?)" if nearest else ""))
    raise ParameterError(
        f"{node.get_fully_qualified_name()} has no parameter {', '.join(hints)}: "
        "check the params file and the -p arguments"
    )


def check_params_files(args: Sequence[str]) -> None:
    """Raise ParameterError naming a ``--params-file`` of ``args`` that is missing,
    unreadable, not YAML, or empty (rcl would raise its own traceback, or run the node on
    its defaults without a word)."""
    files = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--params-file"]
    for name in files:
        path = Path(name)
        try:
            text = path.read_text()
        except OSError as exc:
            raise ParameterError(f"params file '{name}' cannot be read: {exc.strerror or exc}") from None
        try:
            content = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or exc
            raise ParameterError(f"params file '{name}' is not valid YAML{where}: {problem}") from None
        if not content:
            raise ParameterError(f"params file '{name}' is empty (or holds only comments): it sets nothing")
        if not isinstance(content, dict):
            raise ParameterError(
                f"params file '{name}' must map node names to 'ros__parameters', not a {type(content).__name__}"
            )
        for node, entry in content.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("ros__parameters"), dict):
                raise ParameterError(
                    f"params file '{name}': node '{node}' holds no 'ros__parameters' mapping (each node's "
                    "parameters go under '<node name>: ros__parameters:')"
                )
