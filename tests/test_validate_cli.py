"""gpushare/cli/validate.py: `gpushare validate device-plugin-config` over a Kubernetes manifest, as a user
runs it on `kubectl get configmap -o yaml` output. Exit codes: 0 valid, 1 a key is invalid, 2 nothing to
validate or the file cannot be read."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gpushare.cli.main import main

VALID = "version: v1\\nsharing:\\n  timeSlicing:\\n    resources:\\n    - name: nvidia.com/gpu\\n      replicas: 8\\n"


def manifest(data: str) -> str:
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: time-slicing-config\n  namespace: kube-system\n"
        f"data:\n{data}"
    )


def validate(tmp_path: Path, text: str) -> tuple[int, str]:
    path = tmp_path / "cm.yaml"
    path.write_text(text)
    out = io.StringIO()
    code = main(["validate", "device-plugin-config", str(path)], out)
    return code, out.getvalue().replace(str(path), "FILE")


def test_a_valid_key_passes(tmp_path: Path) -> None:
    code, text = validate(tmp_path, manifest(f'  l20: "{VALID}"\n'))
    assert code == 0 and text.startswith("FILE: data.l20: valid")


@pytest.mark.parametrize("value", ["8", "true", "{replicas: 8}"])
def test_a_data_value_that_is_no_string_fails_the_file(tmp_path: Path, value: str) -> None:
    # kubectl refuses such a ConfigMap too: data values are strings.
    code, text = validate(tmp_path, manifest(f"  l20: {value}\n"))
    assert (code, text) == (1, "FILE: data.l20: invalid: not a string (ConfigMap data values are strings)\n")


def test_one_bad_key_beside_a_valid_one_fails_the_file(tmp_path: Path) -> None:
    code, text = validate(tmp_path, manifest(f'  l20: "{VALID}"\n  t4: 3\n'))
    assert code == 1
    assert "FILE: data.t4: invalid: not a string (ConfigMap data values are strings)\n" in text
