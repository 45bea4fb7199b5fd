"""gpushare.offline.render's reading of engine property paths (where a resource's secret inputs are), on
its own: `a.b`, `data["x.y"]` (a key holding a dot, quoted, `\\"` and `\\\\` escaped), `items[0]`, as
gpushare.offline.wire_codec writes them (the engine's resource.PropertyPath spelling).
"""

from __future__ import annotations

import pytest

from gpushare.offline.render import _parse_property_path


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("kubeconfig", ["kubeconfig"]),
        ('stringData["tls.key"]', ["stringData", "tls.key"]),
        (
            "spec.template.spec.containers[1].env[0].value",
            ["spec", "template", "spec", "containers", 1, "env", 0, "value"],
        ),
        ('data["say \\"hi\\""]', ["data", 'say "hi"']),
        ('data["back\\\\slash"][12]', ["data", "back\\slash", 12]),
    ],
)
def test_each_kind_of_path_part(path: str, parts: list[str | int]) -> None:
    assert _parse_property_path(path) == parts


@pytest.mark.parametrize("path", ["data[x]", 'data["open', "a..b", "a[-1]"])
def test_a_path_that_does_not_parse_is_refused(path: str) -> None:
    with pytest.raises(ValueError) as caught:
        _parse_property_path(path)
    assert str(caught.value) == f"cannot parse property path {path!r}"
