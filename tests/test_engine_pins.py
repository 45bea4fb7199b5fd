"""engine/versions.env is the one place the real engine's versions are pinned: each wrapper module under
engine/ requires exactly them (make test, no Go needed)."""

from __future__ import annotations

import re

import pytest
from conftest import PROJECT_DIR

ENGINE = PROJECT_DIR / "engine"


def pins() -> dict[str, str]:
    lines = (ENGINE / "versions.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def requires(module_dir: str) -> dict[str, str]:
    text = (ENGINE / module_dir / "go.mod").read_text()
    return {
        m[0]: m[1]
        for m in re.findall(r"^\s*(?:require\s+)?(\S+)\s+(v\S+)(?:\s*//.*)?$", text, flags=re.MULTILINE)
    }


def replaced_to(module_dir: str) -> dict[str, str]:
    text = (ENGINE / module_dir / "go.mod").read_text()
    return dict(re.findall(r"^replace\s+(\S+)\s+=>\s+\S+\s+(v\S+)\s*$", text, flags=re.MULTILINE))


@pytest.mark.parametrize(
    ("module_dir", "module", "pin"),
    [
        ("pulumi", "github.com/pulumi/pulumi/pkg/v3", "PULUMI_VERSION"),
        ("pulumi", "github.com/pulumi/pulumi/sdk/v3", "PULUMI_VERSION"),
        (
            "kubernetes-provider",
            "github.com/pulumi/pulumi-kubernetes/provider/v4",
            "KUBERNETES_PROVIDER_MODULE_VERSION",
        ),
        ("python-language-host", "github.com/pulumi/pulumi/sdk/v3", "PULUMI_VERSION"),
        ("tencentcloud-provider", "github.com/pulumi/pulumi/sdk/v3", "PULUMI_VERSION"),
        ("yaml-language-host", "github.com/pulumi/pulumi-yaml", "PULUMI_YAML_VERSION"),
        ("yaml-language-host", "github.com/pulumi/pulumi/pkg/v3", "PULUMI_YAML_PKG_VERSION"),
        ("yaml-language-host", "github.com/pulumi/pulumi/sdk/v3", "PULUMI_YAML_PKG_VERSION"),
        ("kube-apiserver", "k8s.io/kubernetes", "KUBERNETES_VERSION"),
        ("etcd", "go.etcd.io/etcd/server/v3", "ETCD_VERSION"),
        ("etcd", "go.etcd.io/etcd/api/v3", "ETCD_VERSION"),
        ("etcd", "go.etcd.io/etcd/client/v3", "ETCD_VERSION"),
        ("etcd", "go.etcd.io/etcd/pkg/v3", "ETCD_VERSION"),
    ],
)
def test_each_wrapper_module_requires_the_pinned_version(module_dir: str, module: str, pin: str) -> None:
    assert requires(module_dir)[module] == pins()[pin]


def test_every_kubernetes_staging_module_is_replaced_by_the_pinned_release() -> None:
    replaced = replaced_to("kube-apiserver")
    assert replaced, "engine/kube-apiserver/go.mod replaces no staging module"
    assert set(replaced.values()) == {pins()["KUBERNETES_STAGING_VERSION"]}
    # v1.37.2 pairs with v0.37.2: the same minor.
    assert pins()["KUBERNETES_VERSION"].split(".")[1] == pins()["KUBERNETES_STAGING_VERSION"].split(".")[1]


def test_the_tencentcloud_stand_in_is_registered_under_the_sdks_version() -> None:
    # The program's SDK asks the engine for this plugin version (pyproject.toml's pin).
    version = pins()["TENCENTCLOUD_PLUGIN_VERSION"]
    assert f'"tencentcloud-iac-pulumi=={version}"' in (PROJECT_DIR / "pyproject.toml").read_text()
