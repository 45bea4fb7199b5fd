"""Bad stack files through `plan`, `render`, `check` (and `verify`): one verdict, one first line,
nothing written.

Every case is a stack file a new user or an adversary could write. Each runs through the CLI's own
entry point (`gpushare.cli.main.main`) as every command; a few run as real subprocesses. The expected
first line is written down here, not taken from the code: it names the file, the exact key path (as
`pulumi config set --path` writes it) and what is wrong.
"""

from __future__ import annotations

import copy
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import write_project_file

from gpushare.cli.main import main
from gpushare.stack import fields as stack_fields
from gpushare.stack import loading as stack_loading

PROJECT_DIR = Path(__file__).resolve().parent.parent
PROD = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
STAGING = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text())
# The device-plugin chart with a MIG pool (staging runs the GPU Operator, where migStrategy is refused).
HELM_MIG = yaml.safe_load(
    (PROJECT_DIR / "tests" / "fixtures" / "stacks" / "Pulumi.helm-mig.yaml").read_text()
)
# The stacks' measurements are dated 2025-06-01; "today" is fixed so the future-date case never ages.
TODAY = date(2026, 1, 15)
SECRET_ID = "AKID" + "Ab3" * 10 + "xy"  # the shape of a TencentCloud SecretId: AKID + 32 alphanumerics
F = "Pulumi.bad.yaml"


@dataclass(frozen=True)
class Bad:
    id: str
    expected: str
    """The first line of stderr; `{path}` stands for the stack file's absolute path."""
    edit: Callable[[dict[str, Any]], None] | None = None
    text: bytes | None = None
    """The file's raw bytes, when the case is about the file itself rather than a value in it."""
    base: dict[str, Any] | None = None


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set `config.<key>.<a>.<0>...` (dots between parts; digits index lists)."""

    def edit(doc: dict[str, Any]) -> None:
        key, *parts = path.split("|")
        node: Any = doc["config"]
        steps: list[str | int] = [key, *(int(p) if p.isdigit() else p for p in parts)]
        for step in steps[:-1]:
            node = node[step]
        node[steps[-1]] = value

    return edit


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        key, *parts = path.split("|")
        node: Any = doc["config"]
        steps: list[str | int] = [key, *(int(p) if p.isdigit() else p for p in parts)]
        for step in steps[:-1]:
            node = node[step]
        del node[steps[-1]]

    return edit


def _both(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        for one in edits:
            one(doc)

    return edit


P0 = "gpushare:pools|0"
PLUGIN = "gpushare:sharing|devicePlugin"
PROD_TEXT = (PROJECT_DIR / "Pulumi.prod.yaml").read_bytes()
LABEL_RULE = "letters, digits, '-', '_' and '.', alphanumeric at both ends)"
QUALIFIED_RULE = (
    "is not a qualified name ([prefix/]name, name at most 63 characters of letters, digits, '-', '_' and '.', "
    "alphanumeric at both ends)"
)

CASES = [
    # --- the file itself
    Bad(
        "missing-file",
        f"{F}: no such stack file ({{path}}); no Pulumi.<stack>.yaml in {{dir}} (--dir names the project "
        "directory)",
    ),
    Bad("directory", f"{F}: is a directory, not a stack file"),
    Bad(
        "not-utf8",
        f"{F}: not UTF-8 text (byte 0xff at offset 15); save it as UTF-8",
        text=b"config:\n  # caf\xff\n",
    ),
    Bad(
        "latin1-value",
        f"{F}: not UTF-8 text (byte 0xe9 at offset 34); save it as UTF-8",
        text=b"config:\n  tencentcloud:region: caf\xe9\n",
    ),
    Bad(
        "unclosed-bracket",
        f"{F}: not valid YAML: line 3, column 1: did not find expected node content while parsing a flow node",
        text=b"config:\n  gpushare:pools: [\n",
    ),
    Bad(
        "duplicate-key",
        f"{F}: not valid YAML: line 3, column 3: mapping key 'tencentcloud:region' already defined while constructing a mapping",
        text=b"config:\n  tencentcloud:region: ap-singapore\n  tencentcloud:region: ap-beijing\n",
    ),
    Bad(
        "tab-indent",
        f"{F}: not valid YAML: line 2, column 1: found character that cannot start any token while scanning for the next token",
        text=b"config:\n\tgpushare:pools: []\n",
    ),
    Bad(
        "alias-bomb",
        f"{F}: expands to more than 1000000 values (YAML aliases referring to aliases)",
        text=b"config:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        + b"".join(
            b"  a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n"
            % ((i, i) + (i - 1,) * 10)
            for i in range(1, 9)
        ),
    ),
    Bad(
        "alias-cycle",
        f"{F}: expands to more than 1000000 values (YAML aliases referring to aliases)",
        text=b"config:\n  gpushare:pools: &loop [*loop]\n",
    ),
    Bad(
        "huge-file",
        f"{F}: larger than 4 MiB; not a stack file",
        text=b"config:\n" + b"  # padding\n" * 400_000,
    ),
    Bad("top-level-list", f"{F}: expected a mapping with a `config:` mapping", text=b"- config\n"),
    Bad("config-list", f"{F}: expected a mapping with a `config:` mapping", text=b"config: [a, b]\n"),
    Bad(
        "empty-file",
        f"{F}: gpushare:cluster: missing (set the TKE cluster: {{id, vpcId, subnetIds, kubernetesVersion}})",
        text=b"",
    ),
    # --- credentials and the tencentcloud namespace
    Bad(
        "secure-not-a-string",
        f"{F}: tencentcloud:secretKey: `secure:` must be the one ciphertext string `pulumi config set --secret` writes",
        _set("tencentcloud:secretKey", {"secure": 12345678}),
    ),
    Bad(
        "secret-key-in-plain-text",
        f"{F}: tencentcloud:secretKey: must be a secret (pulumi config set --secret tencentcloud:secretKey ...)",
        _set("tencentcloud:secretKey", "abcdefabcdefabcdefabcdefabcdefab"),
    ),
    Bad(
        "misspelled-secret-key",
        f"{F}: tencentcloud:secretkey: looks like a credential in plain text under a key the provider does not "
        "read; probably meant tencentcloud:secretKey (pulumi config rm tencentcloud:secretkey; pulumi config set "
        "--secret tencentcloud:secretKey ...)",
        _set("tencentcloud:secretkey", "abcdefabcdefabcdefabcdefabcdefab"),
    ),
    Bad(
        "snake-case-secret-id",
        f"{F}: tencentcloud:secret_id: looks like a credential in plain text under a key the provider does not "
        "read; probably meant tencentcloud:secretId (pulumi config rm tencentcloud:secret_id; pulumi config set "
        "--secret tencentcloud:secretId ...)",
        _set("tencentcloud:secret_id", SECRET_ID),
    ),
    Bad(
        "misspelled-token-even-if-secure",
        f"{F}: tencentcloud:security_token: looks like a secret under a key the provider does not read; probably "
        "meant tencentcloud:securityToken (pulumi config rm tencentcloud:security_token; pulumi config set "
        "--secret tencentcloud:securityToken ...)",
        _set("tencentcloud:security_token", {"secure": "v1:abc:def"}),
    ),
    Bad(
        "secret-id-under-another-key",
        f"{F}: tencentcloud:profile: looks like a credential in plain text under a key the provider does not "
        "read; probably meant tencentcloud:secretId (pulumi config rm tencentcloud:profile; pulumi config set "
        "--secret tencentcloud:secretId ...)",
        _set("tencentcloud:profile", SECRET_ID),
    ),
    Bad(
        "kubeconfig-in-plain-text",
        f"{F}: gpushare:kubeconfig: must be a secret (pulumi config set --secret gpushare:kubeconfig ...)",
        _set("gpushare:kubeconfig", "apiVersion: v1"),
    ),
    Bad(
        "region-a-number",
        f"{F}: tencentcloud:region: '123' is not a TencentCloud region (like ap-singapore or na-siliconvalley)",
        _set("tencentcloud:region", 123),
    ),
    Bad(
        "region-a-name",
        f"{F}: tencentcloud:region: 'Singapore' is not a TencentCloud region (like ap-singapore or na-siliconvalley)",
        _set("tencentcloud:region", "Singapore"),
    ),
    # --- top-level keys
    Bad(
        "unknown-gpushare-key",
        f"{F}: gpushare:pool: unknown key; did you mean 'gpushare:pools'? (known: gpushare:cluster, "
        "gpushare:sharing, gpushare:pools, "
        "gpushare:protectPools)",
        _set("gpushare:pool", []),
    ),
    Bad(
        "missing-cluster",
        f"{F}: gpushare:cluster: missing (set the TKE cluster: {{id, vpcId, subnetIds, kubernetesVersion}})",
        _delete("gpushare:cluster"),
    ),
    Bad(
        "protect-pools-yes",
        f"{F}: gpushare:protectPools: must be true or false",
        _set("gpushare:protectPools", "yes"),
    ),
    # --- cluster
    Bad(
        "cluster-id",
        f"{F}: gpushare:cluster.id: does not match ^cls-[a-z0-9]+$",
        _set("gpushare:cluster|id", "CLS 1"),
    ),
    Bad(
        "kubernetes-version-unknown",
        f"{F}: gpushare:cluster.kubernetesVersion: no Kubernetes 1.99 schema to check the manifests against "
        "(kubernetes-validate has 1.25 to 1.37)",
        _set("gpushare:cluster|kubernetesVersion", "1.99"),
    ),
    Bad(
        "kubernetes-version-a-float",
        f"{F}: gpushare:cluster.kubernetesVersion: must be a string",
        _set("gpushare:cluster|kubernetesVersion", 1.3),
    ),
    Bad(
        "no-subnets",
        f"{F}: gpushare:cluster.subnetIds: needs at least 1 item(s)",
        _set("gpushare:cluster|subnetIds", []),
    ),
    Bad(
        "bad-subnet",
        f"{F}: gpushare:cluster.subnetIds: 'sn-1' is not a subnet id (subnet-...)",
        _set("gpushare:cluster|subnetIds", ["sn-1"]),
    ),
    # --- pools
    Bad("no-pools", f"{F}: gpushare:pools: needs at least 1 item(s)", _set("gpushare:pools", [])),
    Bad(
        "two-bad-pools-no-false-too-short",
        f"{F}: gpushare:pools[0].nodes.min: must be >= 0",
        _both(_set(f"{P0}|nodes|min", -1), _set("gpushare:pools|1|nodes|min", -1)),
    ),
    Bad(
        "pool-name-uppercase",
        f"{F}: gpushare:pools[0].name: 'L20' must be a lowercase RFC 1123 label (it becomes a ConfigMap key and a "
        "label value) and not 'any' (the fallback key)",
        _set(f"{P0}|name", "L20"),
    ),
    Bad(
        "pool-name-any",
        f"{F}: gpushare:pools[0].name: 'any' must be a lowercase RFC 1123 label (it becomes a ConfigMap key and a "
        "label value) and not 'any' (the fallback key)",
        _set(f"{P0}|name", "any"),
    ),
    Bad(
        "pool-name-too-long",
        f"{F}: gpushare:pools[0].name: the TKE node pool name gpushare-{'a' * 26} is 35 characters; TKE allows at "
        "most 25 (pool names of up to 16 characters fit)",
        _set(f"{P0}|name", "a" * 26),
    ),
    Bad(
        "duplicate-pool-names",
        f"{F}: gpushare:pools[1].name: duplicate pool name 'l20'",
        _set("gpushare:pools|1|name", "l20"),
    ),
    Bad("unknown-pool-key", f"{F}: gpushare:pools[0].replicas: unknown key", _set(f"{P0}|replicas", 8)),
    Bad(
        "delete-before-replace-yes",
        f"{F}: gpushare:pools[0].deleteBeforeReplace: must be true or false",
        _set(f"{P0}|deleteBeforeReplace", "yes"),
    ),
    Bad(
        "unknown-gpu",
        f"{F}: gpushare:pools[0].gpu: unknown GPU model 'L40'; did you mean 'L40S'? (known: L20, T4, H20, "
        "A10, A30, A100-40GB, "
        "A100-80GB, H100-80GB, H100-94GB, H200, L4, L40S, V100)",
        _set(f"{P0}|gpu", "L40"),
    ),
    Bad(
        "instance-type-of-another-gpu",
        f"{F}: gpushare:pools[0].instanceType: GN7.2XLARGE32 carries T4, not L20",
        _set(f"{P0}|instanceType", "GN7.2XLARGE32"),
    ),
    Bad(
        "unknown-instance-type-without-gpus-per-node",
        f"{F}: gpushare:pools[0].gpusPerNode: required: instanceType PNV9.HUGE is not in the catalog",
        _set(f"{P0}|instanceType", "PNV9.HUGE"),
    ),
    Bad(
        "gpus-per-node-absurd",
        f"{F}: gpushare:pools[0].gpusPerNode: must be <= 16",
        _set(f"{P0}|gpusPerNode", 1_000_000_000_000),
    ),
    Bad(
        "gpus-per-node-zero", f"{F}: gpushare:pools[0].gpusPerNode: must be > 0", _set(f"{P0}|gpusPerNode", 0)
    ),
    Bad(
        "gpus-per-node-against-catalog",
        f"{F}: gpushare:pools[0].gpusPerNode: PNV5b.8XLARGE96 has 1 GPU(s) per node",
        _set(f"{P0}|gpusPerNode", 2),
    ),
    Bad(
        "node-os-empty",
        f"{F}: gpushare:pools[0].nodeOs: does not match ^\\S(.*\\S)?$",
        _set(f"{P0}|nodeOs", ""),
    ),
    Bad(
        "node-os-blank",
        f"{F}: gpushare:pools[0].nodeOs: does not match ^\\S(.*\\S)?$",
        _set(f"{P0}|nodeOs", "   "),
    ),
    Bad(
        "nodes-out-of-order",
        f"{F}: gpushare:pools[0].nodes: need min <= desired <= max, got 2 <= 1 <= 1",
        _set(f"{P0}|nodes|min", 2),
    ),
    Bad(
        "nodes-too-many", f"{F}: gpushare:pools[0].nodes.max: must be <= 2000", _set(f"{P0}|nodes|max", 5000)
    ),
    Bad(
        "nodes-a-string",
        f"{F}: gpushare:pools[0].nodes.desired: must be an integer",
        _set(f"{P0}|nodes|desired", "1"),
    ),
    # --- sharing
    Bad(
        "sharing-mode-unknown",
        f"{F}: gpushare:pools[0].sharing.mode: must be one of 'time-slicing', 'mps', 'mig', 'exclusive', 'qgpu', got "
        "'timeslicing'; did you mean 'time-slicing'?",
        _set(f"{P0}|sharing|mode", "timeslicing"),
    ),
    Bad(
        "sharing-mode-missing",
        f"{F}: gpushare:pools[0].sharing.mode: needs `mode` (time-slicing, mps, mig, exclusive or qgpu)",
        _delete(f"{P0}|sharing|mode"),
    ),
    Bad(
        "measured-zero",
        f"{F}: gpushare:pools[0].sharing.measuredMiB: must be > 0",
        _set(f"{P0}|sharing|measuredMiB", 0),
    ),
    Bad(
        "measured-above-memory",
        f"{F}: gpushare:pools[0].sharing.measuredMiB: 50000 MiB is more than L20's 46068 MiB",
        _set(f"{P0}|sharing|measuredMiB", 50000),
    ),
    Bad(
        "measured-a-string",
        f"{F}: gpushare:pools[0].sharing.measuredMiB: must be an integer",
        _set(f"{P0}|sharing|measuredMiB", "4621"),
    ),
    Bad(
        "measured-at-impossible-date",
        f"{F}: gpushare:pools[0].sharing.measuredAt: '2025-13-45' is not a date (YYYY-MM-DD, or an ISO 8601 date "
        "and time)",
        _set(f"{P0}|sharing|measuredAt", "2025-13-45"),
    ),
    Bad(
        "measured-at-feb-30",
        f"{F}: gpushare:pools[0].sharing.measuredAt: '2025-02-30' is not a date (YYYY-MM-DD, or an ISO 8601 date "
        "and time)",
        _set(f"{P0}|sharing|measuredAt", "2025-02-30"),
    ),
    Bad(
        "measured-at-a-word",
        f"{F}: gpushare:pools[0].sharing.measuredAt: 'yesterday' is not a date (YYYY-MM-DD, or an ISO 8601 date "
        "and time)",
        _set(f"{P0}|sharing|measuredAt", "yesterday"),
    ),
    Bad(
        "measured-at-tomorrow",
        f"{F}: gpushare:pools[0].sharing.measuredAt: 2026-01-16 is in the future (today is 2026-01-15)",
        _set(f"{P0}|sharing|measuredAt", "2026-01-16"),
    ),
    Bad(
        "measured-at-future-timestamp",
        f"{F}: gpushare:pools[0].sharing.measuredAt: 2030-01-01T08:00:00+08:00 is in the future (today is "
        "2026-01-15)",
        _set(f"{P0}|sharing|measuredAt", "2030-01-01T08:00:00+08:00"),
    ),
    Bad(
        "ceiling-above-one",
        f"{F}: gpushare:sharing.utilizationCeiling: must be <= 1",
        _set("gpushare:sharing|utilizationCeiling", 1.5),
    ),
    Bad(
        "ceiling-zero",
        f"{F}: gpushare:sharing.utilizationCeiling: must be > 0",
        _set("gpushare:sharing|utilizationCeiling", 0),
    ),
    Bad(
        "max-age-zero",
        f"{F}: gpushare:sharing.maxMeasurementAgeDays: must be > 0",
        _set("gpushare:sharing|maxMeasurementAgeDays", 0),
    ),
    # --- MIG (staging's H20 pool)
    Bad(
        "mig-on-t4",
        f"{F}: gpushare:pools[1].sharing.mode: mig: T4 does not support MIG",
        _set("gpushare:pools|1|sharing", {"mode": "mig", "migLayout": {"1g.5gb": 7}}),
    ),
    Bad(
        "layout-name-with-spaces",
        f"{F}: gpushare:pools[0].sharing.layoutName: 'all 1g 12gb' is not a layout name (at most 63 lowercase "
        "letters, digits, '-', '_' and '.', alphanumeric at both ends: it becomes the node label value of "
        "nvidia.com/mig.config)",
        _set(f"{P0}|sharing|layoutName", "all 1g 12gb"),
        base=STAGING,
    ),
    Bad(
        "layout-name-uppercase",
        f"{F}: gpushare:pools[0].sharing.layoutName: 'All-1g.12gb' is not a layout name (at most 63 lowercase "
        "letters, digits, '-', '_' and '.', alphanumeric at both ends: it becomes the node label value of "
        "nvidia.com/mig.config)",
        _set(f"{P0}|sharing|layoutName", "All-1g.12gb"),
        base=STAGING,
    ),
    Bad(
        "layout-name-64-characters",
        f"{F}: gpushare:pools[0].sharing.layoutName: '{'a' * 64}' is not a layout name (at most 63 lowercase "
        "letters, digits, '-', '_' and '.', alphanumeric at both ends: it becomes the node label value of "
        "nvidia.com/mig.config)",
        _set(f"{P0}|sharing|layoutName", "a" * 64),
        base=STAGING,
    ),
    Bad(
        "layout-name-shell",
        f"{F}: gpushare:pools[0].sharing.layoutName: 'x$(reboot)' is not a layout name (at most 63 lowercase "
        "letters, digits, '-', '_' and '.', alphanumeric at both ends: it becomes the node label value of "
        "nvidia.com/mig.config)",
        _set(f"{P0}|sharing|layoutName", "x$(reboot)"),
        base=STAGING,
    ),
    Bad(
        "mig-time-sliced-above-instance",
        f"{F}: gpushare:pools[0].sharing.timeSlicing.measuredMiB: 13000 MiB is more than the smallest MIG "
        "instance's 11264 MiB",
        _set(f"{P0}|sharing|timeSlicing|measuredMiB", 13000),
        base=STAGING,
    ),
    Bad(
        "mig-strategy-overrides-pools",
        f"{F}: gpushare:sharing.devicePlugin.migStrategy: single would override pool h20's mixed (the chart "
        "passes it as MIG_STRATEGY env, which beats every per-node config file); leave it unset",
        _set(f"{PLUGIN}|migStrategy", "single"),
        base=HELM_MIG,
    ),
    # --- node labels and taints
    Bad(
        "label-key-not-qualified",
        f"{F}: gpushare:pools[0].labels[\"Bad Key!\"]: 'Bad Key!' {QUALIFIED_RULE}",
        _set(f"{P0}|labels", {"Bad Key!": "v"}),
    ),
    Bad(
        "label-key-bad-prefix",
        f"{F}: gpushare:pools[0].labels[\"Example.COM/team\"]: 'Example.COM/team' is not a qualified name: the "
        "prefix before '/' must be a DNS-1123 subdomain",
        _set(f"{P0}|labels", {"Example.COM/team": "ml"}),
    ),
    Bad(
        "label-value-with-spaces",
        f"{F}: gpushare:pools[0].labels.team: 'v a l' is not a label value (at most 63 characters of {LABEL_RULE}",
        _set(f"{P0}|labels", {"team": "v a l"}),
    ),
    Bad(
        "label-value-a-number",
        f"{F}: gpushare:pools[0].labels.tier: must be a string",
        _set(f"{P0}|labels", {"tier": 1}),
    ),
    Bad(
        "label-gpushare-overwrites",
        f'{F}: gpushare:pools[0].labels["nvidia.com/device-plugin.config"]: gpushare sets '
        "nvidia.com/device-plugin.config on this pool's nodes itself; a value here would be overwritten",
        _set(f"{P0}|labels", {"nvidia.com/device-plugin.config": "t4"}),
    ),
    Bad(
        "taint-effect",
        f"{F}: gpushare:pools[0].taints[0].effect: 'Nope' is not one of NoSchedule, PreferNoSchedule, NoExecute",
        _set(f"{P0}|taints", [{"key": "gpu", "value": "true", "effect": "Nope"}]),
    ),
    Bad(
        "taint-without-key",
        f"{F}: gpushare:pools[0].taints[1].key: required: TKE's provider takes a taint only with key, value and "
        "effect",
        _set(
            f"{P0}|taints",
            [{"key": "gpu", "value": "", "effect": "NoSchedule"}, {"value": "", "effect": "NoSchedule"}],
        ),
    ),
    Bad(
        "taint-bad-key",
        f"{F}: gpushare:pools[0].taints[0].key: 'gpu only' {QUALIFIED_RULE}",
        _set(f"{P0}|taints", [{"key": "gpu only", "effect": "NoSchedule"}]),
    ),
    Bad(
        "taint-bad-value",
        f"{F}: gpushare:pools[0].taints[0].value: 'a/b' is not a label value (at most 63 characters of {LABEL_RULE}",
        _set(f"{P0}|taints", [{"key": "gpu", "value": "a/b", "effect": "NoSchedule"}]),
    ),
    Bad(
        "taint-unknown-field",
        f"{F}: gpushare:pools[0].taints[0].operator: unknown taint field (TKE takes key, value, effect)",
        _set(f"{P0}|taints", [{"key": "gpu", "value": "x", "operator": "Exists", "effect": "NoSchedule"}]),
    ),
    # --- device plugin, Helm and TKE's managed plugin
    Bad(
        "helm-namespace-underscore",
        f"{F}: gpushare:sharing.devicePlugin.namespace: 'Bad_NS' is not a DNS-1123 label (lowercase letters, "
        "digits and '-', alphanumeric at both ends)",
        _set(f"{PLUGIN}|namespace", "Bad_NS"),
        base=STAGING,
    ),
    Bad(
        "helm-namespace-path",
        f"{F}: gpushare:sharing.devicePlugin.namespace: '../../x' is not a DNS-1123 label (lowercase letters, "
        "digits and '-', alphanumeric at both ends)",
        _set(f"{PLUGIN}|namespace", "../../x"),
        base=STAGING,
    ),
    Bad(
        "chart-repository-not-a-url",
        f"{F}: gpushare:sharing.devicePlugin.chartRepository: 'not a url' is not a chart repository URL "
        "(https://..., http://... or oci://...)",
        _set(f"{PLUGIN}|chartRepository", "not a url"),
        base=STAGING,
    ),
    Bad(
        "chart-repository-file-url",
        f"{F}: gpushare:sharing.devicePlugin.chartRepository: 'file:///etc' is not a chart repository URL "
        "(https://..., http://... or oci://...)",
        _set(f"{PLUGIN}|chartRepository", "file:///etc"),
        base=STAGING,
    ),
    Bad(
        "image-garbage",
        f"{F}: gpushare:sharing.devicePlugin.image: 'NOT AN IMAGE@@' is not an image reference "
        "(registry/repository:tag, repository@sha256:<64 hex> or repository:tag@sha256:<64 hex>; repository "
        "path in lowercase)",
        _set(f"{PLUGIN}|image", "NOT AN IMAGE@@"),
    ),
    Bad(
        "image-unpinned",
        f"{F}: gpushare:sharing.devicePlugin.image: 'nvcr.io/nvidia/k8s-device-plugin' names no tag or digest "
        "(an unpinned image is whatever `latest` is on the day)",
        _set(f"{PLUGIN}|image", "nvcr.io/nvidia/k8s-device-plugin"),
    ),
    Bad(
        "image-short-digest",
        f"{F}: gpushare:sharing.devicePlugin.image: 'nvcr.io/nvidia/k8s-device-plugin@sha256:abc' is not an image "
        "reference (registry/repository:tag, repository@sha256:<64 hex> or repository:tag@sha256:<64 hex>; "
        "repository path in lowercase)",
        _set(f"{PLUGIN}|image", "nvcr.io/nvidia/k8s-device-plugin@sha256:abc"),
    ),
    Bad(
        "managed-plugin-name-path",
        f"{F}: gpushare:sharing.devicePlugin.managedPlugin.name: '../../x' is not a DNS-1123 subdomain (lowercase "
        "letters, digits, '-' and '.', alphanumeric at both ends)",
        _set(f"{PLUGIN}|managedPlugin|name", "../../x"),
    ),
    Bad(
        "managed-plugin-namespace",
        f"{F}: gpushare:sharing.devicePlugin.managedPlugin.namespace: 'Kube System' is not a DNS-1123 label "
        "(lowercase letters, digits and '-', alphanumeric at both ends)",
        _set(f"{PLUGIN}|managedPlugin|namespace", "Kube System"),
    ),
    Bad(
        "managed-plugin-container-name",
        f"{F}: gpushare:sharing.devicePlugin.managedPlugin.containerName: '{'c' * 64}' is longer than 63 "
        "characters (a DNS-1123 label)",
        _set(f"{PLUGIN}|managedPlugin|containerName", "c" * 64),
    ),
    Bad(
        "adopt-unknown-pool",
        f"{F}: gpushare:sharing.devicePlugin.managedPlugin.pool: no pool named 'h100'",
        _set(f"{PLUGIN}|managedPlugin|pool", "h100"),
    ),
    Bad(
        "unknown-plugin-key",
        f"{F}: gpushare:sharing.devicePlugin.replicas: unknown key",
        _set(f"{PLUGIN}|replicas", 2),
    ),
]


def _write_case(case: Bad, project: Path) -> Path:
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", project / "Pulumi.yaml")
    path = project / F
    if case.id == "missing-file":
        return path
    if case.id == "directory":
        path.mkdir()
        return path
    if case.text is not None:
        path.write_bytes(case.text)
        return path
    document = copy.deepcopy(case.base or PROD)
    assert case.edit is not None
    case.edit(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    return path


def _listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


COMMANDS = {
    "plan": ["plan", "--stack", "bad"],
    "render": ["render", "--stack", "bad", "--out", "out/bad"],
    "check": ["check", "--stack", "bad"],
    # Refused at load, before any cluster is contacted (the kubeconfig named here does not exist).
    "verify": ["verify", "--stack", "bad", "--kubeconfig", "/nonexistent/kubeconfig"],
    "measure": ["measure", "--stack", "bad", "--kubeconfig", "/nonexistent/kubeconfig", "--write"],
}


@pytest.fixture(autouse=True)
def _fixed_today(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stack_fields, "latest_date_on_earth", lambda: TODAY)


def test_the_table_is_large_and_its_ids_unique() -> None:
    assert len(CASES) >= 60
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_command_refuses_a_bad_stack_alike(
    case: Bad, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write_case(case, tmp_path)
    before = _listing(tmp_path)
    expected = case.expected.replace("{path}", str(path)).replace("{dir}", str(tmp_path))
    for command, argv in COMMANDS.items():
        argv = [str(tmp_path / part) if part.startswith("out/") else part for part in argv]
        code = main([*argv, "--dir", str(tmp_path)], io.StringIO())
        err = capsys.readouterr().err
        assert code != 0, command
        assert "Traceback" not in err, command
        assert err.splitlines()[0] == expected, command
        assert _listing(tmp_path) == before, f"{command} wrote something"


def test_the_fixed_today_is_what_decides(tmp_path: Path) -> None:
    # The day itself is not the future: the same stack passes when measuredAt is TODAY.
    document = copy.deepcopy(PROD)
    document["config"]["gpushare:pools"][0]["sharing"]["measuredAt"] = TODAY.isoformat()
    (tmp_path / F).write_text(yaml.safe_dump(document))
    assert stack_loading.load_stack(tmp_path, "bad").pools[0].measurement is not None


# One real process per command (each already checked in-process above against the same line).
SUBPROCESS_CASES = {"duplicate-key": "plan", "not-utf8": "render", "label-key-not-qualified": "check"}


@pytest.mark.e2e
def test_a_few_as_real_subprocesses(tmp_path: Path) -> None:
    """Without the in-process fixture: the real clock, the real entry point, the real exit codes."""
    runs = {}
    for case in (c for c in CASES if c.id in SUBPROCESS_CASES):
        project = tmp_path / case.id
        project.mkdir()
        _write_case(case, project)
        command = SUBPROCESS_CASES[case.id]
        runs[case, command, project] = subprocess.Popen(
            [sys.executable, "-m", "gpushare", *COMMANDS[command], "--dir", str(project)],
            cwd=project,
            env={**os.environ, "PYTHONPATH": str(PROJECT_DIR)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert len(runs) == len(SUBPROCESS_CASES)
    for (case, command, project), process in runs.items():
        _, err = process.communicate(timeout=120)
        # A stack that cannot be read as text exits 2 (unreadable input), one that does not validate 1.
        assert process.returncode == (2 if case.id == "not-utf8" else 1), (case.id, command, err)
        assert err.splitlines()[0] == case.expected, (case.id, command)
        assert "Traceback" not in err
        assert not (project / "out").exists()


def _stack_with_pools(count: int) -> dict[str, Any]:
    """prod with `count` L20 pools, each with a 2000-character `source` note (few pools, large config:
    the size is what counts, and planning few pools is quick)."""
    document = copy.deepcopy(PROD)
    config = document["config"]
    config["gpushare:sharing"]["devicePlugin"]["managedPlugin"] = {"action": "park"}
    template = config["gpushare:pools"][0]
    template["sharing"]["source"] = "x" * 2000
    config["gpushare:pools"] = [{**copy.deepcopy(template), "name": f"l20-{index}"} for index in range(count)]
    return document


def test_a_stack_too_large_for_the_policy_pack_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI hands a pack the config in PULUMI_CONFIG; Linux caps one variable at 131072 bytes. Each of
    these pools takes a little over 2000 + 250 bytes of it: 60 pools (> 135 000 bytes) do not fit, 45
    (~101 000 bytes, above the 98 304-byte warning mark) fit but get a warning from plan (and render)."""
    write_project_file(tmp_path)
    (tmp_path / "Pulumi.big.yaml").write_text(yaml.safe_dump(_stack_with_pools(60)))
    (tmp_path / "Pulumi.near.yaml").write_text(yaml.safe_dump(_stack_with_pools(45)))
    assert main(["check", "--stack", "big", "--dir", str(tmp_path)], io.StringIO()) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("Pulumi.big.yaml: the stack config is 1")
    assert "Linux caps one at 128 KiB (MAX_ARG_STRLEN)" in line
    assert main(["plan", "--stack", "near", "--dir", str(tmp_path)], io.StringIO()) == 0
    # The size warning, then the ForceNew note: the 45 pools share the cluster's subnets.
    warning, note = capsys.readouterr().err.splitlines()
    assert note.startswith("note: Pulumi.near.yaml: gpushare:cluster.subnetIds: every pool (l20-0, l20-1, ")
    assert warning.startswith("warning: Pulumi.near.yaml: the stack config is 9")
    assert main(["plan", "--stack", "prod", "--dir", str(PROJECT_DIR)], io.StringIO()) == 0
    # prod is ~1 KiB: no size warning, only the note that l20 and t4 share one subnet list.
    assert capsys.readouterr().err.startswith(
        "note: Pulumi.prod.yaml: gpushare:cluster.subnetIds: every pool (l20, t4)"
    )


def test_an_all_exclusive_stack_prints_no_fallback_replicas(tmp_path: Path) -> None:
    document = copy.deepcopy(PROD)
    config = document["config"]
    config["gpushare:sharing"]["devicePlugin"]["managedPlugin"] = {"action": "park"}
    for pool in config["gpushare:pools"]:
        pool["sharing"] = {"mode": "exclusive"}
    write_project_file(tmp_path)
    (tmp_path / "Pulumi.whole.yaml").write_text(yaml.safe_dump(document))
    out = io.StringIO()
    assert main(["plan", "--stack", "whole", "--dir", str(tmp_path)], out) == 0
    assert "2 schedulable GPU slots against 2 before sharing." in out.getvalue()
    assert "0 replicas" not in out.getvalue()


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.1",
        "nvcr.io/nvidia/k8s-device-plugin@sha256:" + "0123456789abcdef" * 4,
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.1@sha256:" + "0123456789abcdef" * 4,
        "localhost:5000/nvidia/k8s-device-plugin:v0.17.1",
    ],
)
def test_pinned_image_references_are_accepted(image: str, tmp_path: Path) -> None:
    document = copy.deepcopy(PROD)
    document["config"]["gpushare:sharing"]["devicePlugin"]["image"] = image
    write_project_file(tmp_path)
    (tmp_path / "Pulumi.img.yaml").write_text(yaml.safe_dump(document))
    assert stack_loading.load_stack(tmp_path, "img").plugin.plugin_image == image


def test_valid_labels_taints_and_secure_credentials_are_accepted(tmp_path: Path) -> None:
    document = copy.deepcopy(PROD)
    config = document["config"]
    config["tencentcloud:secretId"] = {"secure": "v1:abc:def"}
    config["tencentcloud:region"] = "ap-shanghai-fsi"
    pool = config["gpushare:pools"][0]
    pool["labels"] = {"example.com/team": "nlp", "tier": "", "a_b.c-d": "A_b.C-9"}
    pool["taints"] = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "gpu", "value": "", "effect": "NoExecute"},
    ]
    pool["sharing"]["measuredAt"] = "2025-06-01T10:00:00+08:00"
    write_project_file(tmp_path)
    (tmp_path / "Pulumi.ok.yaml").write_text(yaml.safe_dump(document))
    stack = stack_loading.load_stack(tmp_path, "ok")
    assert stack.pools[0].labels["a_b.c-d"] == "A_b.C-9"
    assert stack.region == "ap-shanghai-fsi"


def test_invalid_pools_bring_no_false_too_short(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """When every pool is invalid, pydantic also reports the pools list as too short (it counts the valid
    ones): only the pools' own errors are shown."""
    document = copy.deepcopy(PROD)
    document["config"]["gpushare:pools"][0]["nodes"]["min"] = -1
    document["config"]["gpushare:pools"][1]["sharing"]["mode"] = "bogus"
    write_project_file(tmp_path)
    (tmp_path / F).write_text(yaml.safe_dump(document))
    assert main(["plan", "--stack", "bad", "--dir", str(tmp_path)], io.StringIO()) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{F}: gpushare:pools[0].nodes.min: must be >= 0",
        f"{F}: gpushare:pools[1].sharing.mode: must be one of 'time-slicing', 'mps', 'mig', 'exclusive', 'qgpu', got 'bogus'",
    ]


@pytest.mark.parametrize("name", ["../prod", "a/b", "prod yaml", ""])
def test_a_path_is_not_a_stack_name_for_any_command(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    for command, argv in COMMANDS.items():
        argv = [name if part == "bad" else part for part in argv]
        assert main([*argv, "--dir", str(PROJECT_DIR)], io.StringIO()) != 0, command
        assert capsys.readouterr().err.splitlines() == [
            f"not a stack name: {name!r} (letters, digits, '_', '.' and '-')"
        ], command
