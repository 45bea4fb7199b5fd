"""TKE's documented limits on a node pool's name, label keys and taints, and the TKE name of a pool.

Source: the TencentCloud provider's documentation of `tencentcloud_kubernetes_node_pool`
(shared/reference/tke-provider.md):
- `name`: at most 25 characters of Chinese, English, digits, `_`, `-` and `.`;
- `labels`: a key has at most 63 characters and does not begin with `/`;
- `taints`: `key` (the label-key rule), `value` and `effect` are all required; `effect` is one of
  NoSchedule, PreferNoSchedule, NoExecute.
The provider's text lists only English, digits, `/` and `-` for keys, yet TKE's own documents put dotted
keys (`tke.cloud.tencent.com/qgpu-schedule-policy`) on node pools and the provider checks nothing, so
dots are accepted (UNVERIFIED against the live API). Kubernetes' own label and taint syntax is a
separate check; these are only the limits TKE adds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from gpushare.stack.kube_syntax import anchored

NODE_POOL_NAME_PREFIX: Final = "gpushare-"
NODE_POOL_NAME_MAX: Final = 25
_is_node_pool_name: Final = anchored(r"[\w.\-]+", unicode=True)  # \w: letters (Chinese too), digits, `_`
KEY_MAX: Final = 63
TAINT_FIELDS: Final = ("key", "value", "effect")
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def node_pool_name(pool_name: str) -> str:
    """The TKE node pool's name for a gpushare pool."""
    return NODE_POOL_NAME_PREFIX + pool_name


def node_pool_name_problem(pool_name: str) -> str | None:
    derived = node_pool_name(pool_name)
    if len(derived) > NODE_POOL_NAME_MAX:
        fits = NODE_POOL_NAME_MAX - len(NODE_POOL_NAME_PREFIX)
        return (
            f"the TKE node pool name {derived} is {len(derived)} characters; TKE allows at most "
            f"{NODE_POOL_NAME_MAX} (pool names of up to {fits} characters fit)"
        )
    if not _is_node_pool_name(derived):
        return f"the TKE node pool name {derived} may only hold letters, digits, `_`, `-` and `.`"
    return None


def key_problem(key: str) -> str | None:
    """TKE's limit on a node-pool label key or taint key."""
    if len(key) > KEY_MAX:
        return f"key {key!r} is {len(key)} characters; TKE allows at most {KEY_MAX}"
    if key.startswith("/"):
        return f"key {key!r} begins with '/', which TKE refuses"
    return None


def taint_problems(taint: Mapping[str, object]) -> list[tuple[str, str]]:
    """(field, message) for every TKE limit one taint breaks."""
    problems: list[tuple[str, str]] = []
    for field in TAINT_FIELDS:
        if not isinstance(taint.get(field), str) or (field != "value" and not taint.get(field)):
            problems.append((field, "required: TKE's provider takes a taint only with key, value and effect"))
    for field in sorted(set(taint) - set(TAINT_FIELDS)):
        problems.append((field, f"unknown taint field (TKE takes {', '.join(TAINT_FIELDS)})"))
    key, effect = taint.get("key"), taint.get("effect")
    if isinstance(key, str) and key and (problem := key_problem(key)):
        problems.append(("key", problem))
    if isinstance(effect, str) and effect and effect not in TAINT_EFFECTS:
        problems.append(("effect", f"{effect!r} is not one of {', '.join(TAINT_EFFECTS)}"))
    return problems
