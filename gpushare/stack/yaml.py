"""YAML as the Pulumi CLI (gopkg.in/yaml.v3) reads a stack file: one reader for every command.

`plan`, `render`, `check` (and the program run under the mocks) must see the same values, so the
stack file is parsed by this loader everywhere: YAML 1.2 core-schema scalars, duplicate keys refused.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Final

import yaml

from gpushare.yaml_bounds import refuse_non_json_tags

__all__ = ["StackFileLoader", "load_cli_yaml"]


class StackFileLoader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
    """YAML 1.2 core-schema scalars like gopkg.in/yaml.v3: only true/True/TRUE/false/... are booleans
    (`yes`, `on` stay strings), dates stay strings, `0o17`/`0x1F` are ints; duplicate keys are errors."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            with contextlib.suppress(TypeError):  # unhashable keys are reported by the base class
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"mapping key {key!r} already defined",
                        key_node.start_mark,
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_YAML_BOOL: Final = "tag:yaml.org,2002:bool"
_YAML_INT: Final = "tag:yaml.org,2002:int"
_YAML_FLOAT: Final = "tag:yaml.org,2002:float"
_YAML_NULL: Final = "tag:yaml.org,2002:null"
_YAML_TIMESTAMP: Final = "tag:yaml.org,2002:timestamp"

StackFileLoader.yaml_implicit_resolvers = {
    first: [
        (tag, pattern)
        for tag, pattern in resolvers
        if tag not in {_YAML_BOOL, _YAML_INT, _YAML_FLOAT, _YAML_NULL, _YAML_TIMESTAMP}
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
StackFileLoader.add_implicit_resolver(
    _YAML_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
StackFileLoader.add_implicit_resolver(_YAML_NULL, re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
StackFileLoader.add_implicit_resolver(
    _YAML_INT,
    re.compile(r"^[-+]?(?:0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)$"),
    list("-+0123456789"),
)
StackFileLoader.add_implicit_resolver(
    _YAML_FLOAT,
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def _construct_bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float | str:
    text = str(loader.construct_scalar(node))
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-").replace("_", "")
    try:
        if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
            return sign * int(digits, 8)  # Go's strconv.ParseInt(s, 0, 64): a leading 0 means octal
        return sign * int(digits, 0)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    text = str(loader.construct_scalar(node))
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return float("-inf") if lowered.startswith("-") else float("inf")
    if lowered == ".nan":
        return float("nan")
    return float(text)


refuse_non_json_tags(StackFileLoader)
StackFileLoader.add_constructor(_YAML_BOOL, _construct_bool)
StackFileLoader.add_constructor(_YAML_INT, _construct_int)
StackFileLoader.add_constructor(_YAML_FLOAT, _construct_float)


def load_cli_yaml(text: str) -> Any:
    """Parse `text` as the CLI would; `yaml.YAMLError` if it would refuse it."""
    return yaml.load(text, Loader=StackFileLoader)  # a SafeLoader subclass: no arbitrary objects
