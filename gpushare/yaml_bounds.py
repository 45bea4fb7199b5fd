"""Bounded YAML reading for the validators: the aliasing limit the Go tools apply, and nesting limits.

NVIDIA's device plugin and mig-parted read YAML with go-yaml v2 (through sigs.k8s.io/yaml), which refuses
a document whose decoding is mostly alias expansion ("document contains excessive aliasing", decode.go
`allowedAliasRatio`) and an anchor whose value refers to itself. PyYAML shares aliased nodes instead of
copying them, so it loads a 600-byte alias bomb instantly, but every later walk over the data (our decoders,
JSON conversion) would then expand it exponentially. `load_first_document` composes the first document,
counts decode steps exactly as go-yaml does, and refuses the same documents go-yaml refuses before anything
walks them. Nesting deeper than Python's recursion allows (go-yaml itself allows 10000 levels) is refused as
too deep to check, which is not a verdict on the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml

from gpushare.errors import GpushareError

# go-yaml v2 decode.go: the share of decode steps that may come from alias expansion, by document size.
_ALIAS_RATIO_RANGE_LOW = 400_000
_ALIAS_RATIO_RANGE_HIGH = 4_000_000


class YamlBoundError(Exception):
    """A document go-yaml refuses for its aliasing (`reason` is go-yaml's own message)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class YamlTooDeepError(GpushareError):
    """A document nested more deeply than this checker can follow: no verdict either way."""

    def __init__(self) -> None:
        super().__init__(
            "nested too deeply to check (go-yaml allows 10000 levels; this checker follows fewer)"
        )


def _allowed_alias_ratio(decodes: int) -> float:
    if decodes <= _ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decodes >= _ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    span = _ALIAS_RATIO_RANGE_HIGH - _ALIAS_RATIO_RANGE_LOW
    return 0.99 - 0.89 * ((decodes - _ALIAS_RATIO_RANGE_LOW) / span)


class AliasRecordingComposer:
    """Mixed into a PyYAML loader: remembers which child slots were written as aliases (`*name`).

    PyYAML returns the anchored node itself for an alias, so the composed graph alone cannot tell a
    definition from a reference; go-yaml's accounting needs to."""

    alias_slots: dict[tuple[int, object], str]

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        loader: Any = self
        if not hasattr(self, "alias_slots"):
            self.alias_slots = {}
        anchor = loader.peek_event().anchor if loader.check_event(yaml.AliasEvent) else None
        node: yaml.Node = super().compose_node(parent, index)  # type: ignore[misc]
        if anchor is not None:
            self.alias_slots[(id(parent), _slot(parent, index))] = anchor
        return node


def _slot(parent: yaml.Node | None, index: object) -> object:
    """Where a child being composed will land in `parent.value`: (position, 0 key / 1 value) in a mapping,
    the position in a sequence. The composer appends the child after composing it."""
    if parent is None:
        return None
    position = len(parent.value)
    if isinstance(parent, yaml.MappingNode):
        return (position, 0 if index is None else 1)
    return position


def _children(node: yaml.Node) -> list[tuple[object, yaml.Node]]:
    if isinstance(node, yaml.MappingNode):
        children: list[tuple[object, yaml.Node]] = []
        for position, (key, value) in enumerate(node.value):
            if not (isinstance(key, yaml.ScalarNode) and key.tag == "tag:yaml.org,2002:merge"):
                children.append(((position, 0), key))  # go-yaml never decodes a merge key itself
            children.append(((position, 1), value))
        return children
    if isinstance(node, yaml.SequenceNode):
        return list(enumerate(node.value))
    return []


def check_aliasing(root: yaml.Node, alias_slots: dict[tuple[int, object], str]) -> None:
    """Walk the document as go-yaml's decoder does and fail where it fails. Iterative, and it stops as soon
    as the aliasing limit is crossed, so a bomb costs at most a few thousand steps."""
    decodes, alias_decodes = 1, 0  # the document node
    # (node, alias depth, the alias slots being expanded above it)
    stack: list[tuple[yaml.Node, int, frozenset[tuple[int, object]]]] = [(root, 0, frozenset())]
    while stack:
        node, depth, expanding = stack.pop()
        decodes += 1
        alias_decodes += depth > 0
        if alias_decodes > 100 and decodes > 1000 and alias_decodes / decodes > _allowed_alias_ratio(decodes):
            raise YamlBoundError("document contains excessive aliasing")
        for slot, child in reversed(_children(node)):
            key = (id(node), slot)
            anchor = alias_slots.get(key)
            if anchor is None:
                stack.append((child, depth, expanding))
                continue
            if key in expanding:
                raise YamlBoundError(f"anchor '{anchor}' value contains itself")
            # The alias node is one decode step, its target is decoded one alias level deeper.
            decodes += 1
            alias_decodes += depth > 0
            stack.append((child, depth + 1, expanding | {key}))


GO_YAML_MAX_DEPTH = 10_000  # go-yaml scannerc.go max_flow_level / max_indents
# Flow collections nested deeper than this are refused before PyYAML sees them: its scanner looks ahead
# over every open `[`/`{` for a possible key (quadratic: 50 000 levels took a minute), and its composer
# recurses per level anyway.
MAX_FOLLOWED_FLOW_DEPTH = 200


def check_flow_depth(text: str) -> None:
    """A linear pre-scan of `[`/`{` nesting (quoted scalars and comments skipped). Raises YamlBoundError
    where go-yaml stops ("exceeded max depth of 10000"), YamlTooDeepError above what is followed here."""
    if text.count("[") + text.count("{") <= MAX_FOLLOWED_FLOW_DEPTH:
        return  # cannot nest deeper than it has brackets: the usual file costs two counts, not a scan
    depth = deepest = 0
    quote = ""
    previous = "\n"  # the last character outside a quoted scalar
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if quote:
            if char == quote:
                if quote == "'" and text[index + 1 : index + 2] == "'":
                    index += 1  # '' inside a single-quoted scalar
                else:
                    quote = ""
            elif char == "\\" and quote == '"':
                index += 1
        elif char == "#" and previous in " \t\n":
            newline = text.find("\n", index)
            index = length if newline < 0 else newline
            continue
        elif char in "'\"" and (depth or previous in " \t\n:-,[{?"):
            quote = char
        elif char in "[{" and (depth or previous in " \t\n:-,[{?"):
            depth += 1
            deepest = max(deepest, depth)
            if depth > GO_YAML_MAX_DEPTH:
                raise YamlBoundError(f"exceeded max depth of {GO_YAML_MAX_DEPTH}")
        elif char in "]}" and depth:
            depth -= 1
        if char not in " \t" or previous == "\n":
            previous = char
        index += 1
    if deepest > MAX_FOLLOWED_FLOW_DEPTH:
        raise YamlTooDeepError()


def load_first_document(loader_class: type[yaml.SafeLoader], text: str) -> object:
    """The first YAML document of `text` (go-yaml's Unmarshal never looks further), constructed by
    `loader_class` (which must mix in AliasRecordingComposer) after the aliasing check.

    Raises yaml.YAMLError for syntax errors, YamlBoundError, or YamlTooDeepError."""
    check_flow_depth(text)
    loader: Any = loader_class(text)
    try:
        if not loader.check_node():
            return None
        loader.get_event()  # DocumentStartEvent (what compose_document does, minus forgetting the anchors)
        node = loader.compose_node(None, None)
        loader.get_event()  # DocumentEndEvent: syntax errors right after the first document still count
        check_aliasing(node, getattr(loader, "alias_slots", {}))
        return loader.construct_document(node)
    except RecursionError:
        raise YamlTooDeepError() from None
    finally:
        loader.dispose()


def iter_documents(loader_class: type[yaml.SafeLoader], text: str) -> Iterator[object]:
    """Every document of `text`, each checked like `load_first_document` before it is constructed."""
    check_flow_depth(text)
    loader: Any = loader_class(text)
    try:
        while loader.check_node():
            loader.alias_slots = {}
            loader.get_event()
            node = loader.compose_node(None, None)
            loader.get_event()
            check_aliasing(node, getattr(loader, "alias_slots", {}))
            loader.anchors = {}
            yield loader.construct_document(node)
    except RecursionError:
        raise YamlTooDeepError() from None
    finally:
        loader.dispose()


class _SafeBoundedLoader(AliasRecordingComposer, yaml.SafeLoader):
    pass


# YAML types with no JSON form. A config file (stack, fleet, policy config) holds strings, numbers,
# booleans, null, lists and mappings; `!!binary` (bytes), `!!set`, `!!timestamp`, `!!omap` and `!!pairs`
# would reach JSON conversion or the models as Python types nothing downstream expects.
_NON_JSON_TAGS = ("binary", "set", "timestamp", "omap", "pairs")


def _refuse_non_json(loader: yaml.BaseLoader | yaml.SafeLoader, node: yaml.Node) -> None:
    tag = node.tag.rsplit(":", 1)[-1]
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"the tag !!{tag} is not allowed here (only strings, numbers, booleans, null, lists and mappings)",
        node.start_mark,
    )


def refuse_non_json_tags(loader_class: type[Any]) -> None:
    """Make `loader_class` refuse the tags of `_NON_JSON_TAGS` (explicit ones too: implicit timestamps
    are a separate resolver choice) with a ConstructorError at the tag's line."""
    for name in _NON_JSON_TAGS:
        loader_class.add_constructor(f"tag:yaml.org,2002:{name}", _refuse_non_json)


def _explicitly_tagged(node: yaml.Node) -> bool:
    """Whether the node's text starts with a tag (`!!timestamp 2025-06-01`), not a plain scalar that the
    resolver typed (`2025-06-01`): a tagged node's mark points at its tag."""
    mark = node.start_mark
    buffer = mark.buffer if isinstance(mark.buffer, str) else ""
    return buffer[mark.pointer : mark.pointer + 1] == "!"


def _implicit_timestamp(loader: yaml.SafeLoader, node: yaml.Node) -> object:
    if _explicitly_tagged(node):
        _refuse_non_json(loader, node)
    return loader.construct_yaml_timestamp(node)  # type: ignore[arg-type]


def accept_plain_dates(loader_class: type[yaml.SafeLoader]) -> None:
    """Let `loader_class` (after `refuse_non_json_tags`) read a plain `2025-06-01` as YAML does, a date,
    while an explicit `!!timestamp` tag stays refused: a user's unquoted date is not an attack."""
    loader_class.add_constructor("tag:yaml.org,2002:timestamp", _implicit_timestamp)


def shape_problem(document: Any, *, max_values: int, max_depth: int) -> str | None:
    """Why `document` (parsed YAML or JSON, aliases shared) is too large to walk, or None: more than
    `max_values` values with every alias expanded, a container that contains itself, or nesting deeper
    than `max_depth`. Iterative, and shared containers are sized once, so it costs what the file holds,
    not what it expands to; JSON conversion, validation and every later walk recurse per level."""
    sizes: dict[int, int] = {}
    open_containers: set[int] = set()
    pending: list[tuple[Any, bool, int]] = [(document, False, 1)]
    while pending:
        node, children_sized, depth = pending.pop()
        if not isinstance(node, dict | list) or id(node) in sizes:
            continue
        if depth > max_depth:
            return f"nested more than {max_depth} levels deep"
        children = list(node.values()) if isinstance(node, dict) else node
        if children_sized:
            open_containers.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes.get(id(child), 1) for child in children)
            if sizes[id(node)] > max_values:
                return f"expands to more than {max_values} values (YAML aliases referring to aliases)"
            continue
        if id(node) in open_containers:
            # reached again before it was sized: it contains itself and expands forever
            return f"expands to more than {max_values} values (YAML aliases referring to aliases)"
        open_containers.add(id(node))
        pending.append((node, True, depth))
        pending.extend((child, False, depth + 1) for child in children)
    return None


def safe_load_bounded(text: str) -> object:
    """`yaml.safe_load` for text from a cluster object (a ConfigMap value): the first document, refused like
    go-yaml refuses it (YamlBoundError) or when too deep to follow (YamlTooDeepError)."""
    return load_first_document(_SafeBoundedLoader, text)


def yaml_problem(err: yaml.YAMLError) -> str:
    """One line: where and what (PyYAML's own message spans several lines with a code excerpt)."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = " ".join(part for part in (err.problem, err.context) if part) or "cannot parse"
        return where + " ".join(what.split())
    return " ".join(str(err).split())


# A Kubernetes object, a Prometheus answer or a Status nests a few dozen levels; Python's `json` recurses
# per level (RecursionError near 1000).
MAX_JSON_DEPTH = 100


def loads_json_bounded(body: bytes | str) -> Any:
    """JSON decoded only once a linear scan found it nested at most MAX_JSON_DEPTH deep; ValueError (as
    for malformed JSON) when deeper, or not UTF-8."""
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        depth = 0
        quoted = escaped = False
        for char in text:
            if quoted:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    quoted = False
            elif char == '"':
                quoted = True
            elif char in "[{":
                depth += 1
                if depth > MAX_JSON_DEPTH:
                    raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
            elif char in "]}":
                depth -= 1
    return json.loads(text)
