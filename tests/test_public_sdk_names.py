"""The Pulumi project uses only the SDK's public names, and its Pulumi.yaml declares its config keys.

Public: a name in a module's `__all__` (pulumi.runtime's lists `get_config_env`, `is_config_secret`, ...;
`pulumi.runtime.config.CONFIG` is not in it and may change without notice)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import yaml
from conftest import PROJECT_DIR

from gpushare.stack.loading import _CONFIG_FIELDS

PROGRAM_FILES = sorted([PROJECT_DIR / "__main__.py", *(PROJECT_DIR / "components").glob("*.py")])


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _private_pulumi_names(path: Path) -> list[str]:
    """`from pulumi.x import y` and `pulumi.x.y` where y is not in pulumi.x's `__all__` (submodules of
    the SDK other than its public packages count as private too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pulumi":
            module = importlib.import_module(node.module)
            public = set(getattr(module, "__all__", ()))
            found += [f"{node.module}.{a.name}" for a in node.names if a.name not in public]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("pulumi.")]
        elif isinstance(node, ast.Attribute):
            owner = _dotted(node.value)
            if owner in {"pulumi.runtime", "pulumi.provider"}:
                public = set(getattr(importlib.import_module(owner), "__all__", ()))
                if node.attr not in public:
                    found.append(f"{owner}.{node.attr}")
            elif owner in {"rpc", "pulumi.Output"} and node.attr.startswith("_"):
                found.append(f"{owner}.{node.attr}")
            elif node.attr in _SDK_PRIVATE_ATTRIBUTES:
                found.append(f"<Output>.{node.attr}")
    return found


# An Output's data future: private on every Output, whatever the variable is called.
_SDK_PRIVATE_ATTRIBUTES = {"_data", "_future", "_is_known", "_is_secret", "_resources"}

# Where there is no public way, each private name with its reason. The hosted component must tell, before
# registering anything, which inputs are unknown or secret (the engine sends outputs to Construct, and
# registering children inside an apply loses them at preview: pulumi/pulumi#16140); the Python SDK has no
# public synchronous view of an Output's data (pulumi/pulumi#12104 leaves exposing OutputData for later)
# nor of the wire's secret signature, and builds resolved Outputs only through the private `_from_data`.
ALLOWED_PRIVATE_NAMES = {
    "hosted_gpu_sharing_cluster.py": {
        "pulumi.output.Unknown",
        "pulumi.output._OutputData",
        "rpc._special_sig_key",
        "rpc._special_secret_sig",
        "pulumi.Output._from_data",
        "<Output>._data",
    }
}


def test_the_program_and_its_components_use_only_public_sdk_names() -> None:
    found = {path.name: set(_private_pulumi_names(path)) for path in PROGRAM_FILES}
    assert {name: names for name, names in found.items() if names} == ALLOWED_PRIVATE_NAMES


def test_the_check_sees_a_private_name(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from pulumi.runtime import config as c\nimport pulumi\npulumi.runtime.config.CONFIG\n")
    assert _private_pulumi_names(sample) == ["pulumi.runtime.config", "pulumi.runtime.config"]


def test_pulumi_yaml_declares_every_config_key_with_a_type_and_a_description() -> None:
    project = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())
    declared = project["config"]
    # kubeconfig is optional and secret: declared, it would need a (plain-text) default.
    assert sorted(declared) == sorted(_CONFIG_FIELDS) == ["cluster", "pools", "protectPools", "sharing"]
    assert {key: value["type"] for key, value in declared.items()} == {
        "cluster": "object",
        "pools": "array",
        "sharing": "object",
        "protectPools": "boolean",
    }
    assert declared["pools"]["items"] == {"type": "object"}
    assert all(value["description"] for value in declared.values())
    # Optional keys default to the model's own defaults (a declared key without one is required).
    assert {key: value.get("default", "required") for key, value in declared.items()} == {
        "cluster": "required",
        "pools": "required",
        "sharing": {},
        "protectPools": False,
    }
