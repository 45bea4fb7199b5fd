"""gpushare.offline.render's last guard on its own: a secret value found outside its secret path.

The guard looks for each secret value whole, as written and JSON-escaped (a multi-line value reaches
resources.json with `\\n` escapes). Only the whole value counts: a file holding part of a secret (its
tail, say, a value that merely ends like it) is no leak, and refusing it would stop renders for nothing.
tests/test_mutation_guards.py runs the guard on the real program's output; these pin the matching itself.
"""

from __future__ import annotations

import pytest

from gpushare.offline.render import RenderError, _check_no_secret_leaks

ORIGIN = 'kubernetes:core/v1:Secret tls input stringData["token"]'


def test_the_whole_value_is_a_leak() -> None:
    files = {"manifests/configmap_default_copy.yaml": "data:\n  copy: Abcdef-token\n"}
    with pytest.raises(RenderError) as caught:
        _check_no_secret_leaks(files, {"Abcdef-token": ORIGIN})
    assert str(caught.value) == (
        f"manifests/configmap_default_copy.yaml: would contain a secret in clear text ({ORIGIN}); "
        "nothing was written"
    )


def test_a_multi_line_value_is_found_json_escaped() -> None:
    # json.dumps("line-one\nline-two") is "line-one\\nline-two" with its quotes; without them it is in the file
    files = {"resources.json": '{"data": {"copy": "line-one\\nline-two"}}\n'}
    with pytest.raises(RenderError, match=r"^resources\.json: would contain a secret in clear text"):
        _check_no_secret_leaks(files, {"line-one\nline-two": ORIGIN})


def test_part_of_a_value_is_no_leak() -> None:
    # "bcdef-token" is "Abcdef-token" without its first character; "Abcdef-toke" without its last.
    files = {
        "manifests/configmap_default_copy.yaml": "data:\n  copy: bcdef-token\n",
        "resources.json": '{"data": {"copy": "Abcdef-toke"}}\n',
    }
    _check_no_secret_leaks(files, {"Abcdef-token": ORIGIN})
