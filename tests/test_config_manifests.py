"""gpushare/cli/config_manifests.py: a ConfigMap manifest's verdict is its worst key's, whichever key comes
first. Run as a user runs it: `gpushare validate device-plugin-config` on `kubectl get configmap -o yaml`.

`replicas: 1` under timeSlicing is refused by every recorded plugin version ("number of replicas must
be >= 2": tests/fixtures/device_plugin/upstream_vectors.json); `replicas: 8` is the seed's L20 config.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gpushare.cli.main import main


def config(replicas: int) -> str:
    text = f"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: {replicas}\n"
    return '"' + text.replace("\n", "\\n") + '"'


MANIFEST = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: time-slicing-config\n  namespace: kube-system\ndata:\n"
INVALID = (
    "FILE: data.t4: invalid: sharing.timeSlicing.resources[0].replicas: number of replicas must be >= 2\n"
)
VALID = "FILE: data.l20: valid\n"


@pytest.mark.parametrize("invalid_first", [True, False], ids=["invalid-first", "valid-first"])
def test_one_invalid_config_fails_the_configmap_beside_a_valid_one(
    tmp_path: Path, invalid_first: bool
) -> None:
    keys = [f"  t4: {config(1)}\n", f"  l20: {config(8)}\n"]
    if not invalid_first:
        keys.reverse()
    path = tmp_path / "cm.yaml"
    path.write_text(MANIFEST + "".join(keys))
    out = io.StringIO()
    code = main(["validate", "device-plugin-config", str(path)], out)
    expected = INVALID + VALID if invalid_first else VALID + INVALID
    assert (code, out.getvalue().replace(str(path), "FILE")) == (1, expected)
