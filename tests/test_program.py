"""The whole Pulumi program, per stack file, under Pulumi's mocks with the real SDKs."""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from conftest import HELM_MIG, PROJECT_DIR, STACKS, stack_file

from gpushare.offline.mock_run import run_program
from gpushare.offline.program_mocks import program_mocks
from gpushare.offline.recorded import ProgramRun, RecordedResource
from gpushare.offline.stack_files import load_stack_config
from gpushare.resource_types import (
    CONFIG_MAP,
    DAEMON_SET,
    DAEMON_SET_PATCH,
    HELM_RELEASE,
    KUBERNETES_PROVIDER,
    NODE_POOL,
)

# The seed's ConfigMap (shared/seed, "配置参考"), parsed.
SEED_CONFIG_MAP = {
    key: {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": replicas}],
            }
        },
    }
    for key, replicas in (("any", 2), ("l20", 8), ("t4", 3))
}

# The seed's L20 DaemonSet, as written there.
SEED_L20_DAEMONSET = yaml.safe_load(
    """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nvidia-device-plugin-daemonset-l20
  namespace: kube-system
spec:
  selector:
    matchLabels:
      name: nvidia-device-plugin-ds-l20
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
        name: nvidia-device-plugin-ds-l20
    spec:
      nodeSelector:
        nvidia-device-enable: enable
        nvidia.com/device-plugin.config: l20
      tolerations:
      - operator: Exists
      priorityClassName: system-node-critical
      containers:
      - name: nvidia-device-plugin-ctr
        image: sgccr.ccs.tencentyun.com/tkeimages/nvidia-device-plugin:v0.14.5
        command: [nvidia-device-plugin]
        args:
        - --fail-on-init-error=false
        - --mig-strategy=single
        - --pass-device-specs=true
        - --config-file=/etc/nvidia/time-slicing-config/l20
        env:
        - name: NVIDIA_DRIVER_CAPABILITIES
          value: utility,compute
        resources:
          limits:
            cpu: 100m
            memory: 100Mi
          requests:
            cpu: 100m
            memory: 100Mi
        securityContext:
          capabilities:
            drop: [ALL]
        volumeMounts:
        - name: device-plugin
          mountPath: /var/lib/kubelet/device-plugins
        - name: time-slicing-config
          mountPath: /etc/nvidia/time-slicing-config
      volumes:
      - name: device-plugin
        hostPath:
          path: /var/lib/kubelet/device-plugins
      - name: time-slicing-config
        configMap:
          name: time-slicing-config
"""
)


def run_stack(stack: str, project_dir: Path = PROJECT_DIR) -> ProgramRun:
    config, secret_keys = load_stack_config(project_dir, stack)
    return run_program(
        project_dir, stack=stack, config=config, secret_keys=secret_keys, mocks=program_mocks()
    )


def run_document(document: dict[str, Any], tmp_path: Path, stack: str = "test") -> ProgramRun:
    """Run the real program with a modified stack file (the program files are linked, not copied)."""
    for entry in ("Pulumi.yaml", "__main__.py", "components", "gpushare"):
        (tmp_path / entry).symlink_to(PROJECT_DIR / entry)
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return run_stack(stack, tmp_path)


def only(
    run: ProgramRun, type_: str, predicate: Callable[[RecordedResource], bool] = lambda r: True
) -> RecordedResource:
    found = [r for r in run.resources if r.type == type_ and predicate(r)]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def named(name: str) -> Callable[[RecordedResource], bool]:
    return lambda r: r.inputs.get("metadata", {}).get("name") == name


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    return run_stack("prod")


@pytest.fixture(scope="module")
def staging() -> ProgramRun:
    return run_stack("staging")


@pytest.fixture(scope="module")
def helm_mig(tmp_path_factory: pytest.TempPathFactory) -> ProgramRun:
    """The device-plugin chart with a time-sliced H20 MIG pool (tests/fixtures/stacks)."""
    document = yaml.safe_load(stack_file(HELM_MIG).read_text())
    return run_document(document, tmp_path_factory.mktemp("helm-mig"))


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_in_the_repo_runs_and_exports_its_capacity(stack: str) -> None:
    run = run_stack(stack)
    capacity = run.stack_outputs["capacity"]
    assert capacity["totalSlots"] == run.stack_outputs["totalSlots"] > capacity["slotsBefore"]
    # Every resource but the root stack and the providers has a gpushare component above it.
    for resource in run.resources:
        if resource.type.startswith("pulumi:"):
            continue
        assert resource.parent is not None, resource.urn


def test_prod_config_map_equals_the_seed_config_map(prod: ProgramRun) -> None:
    config_map = only(prod, CONFIG_MAP, named("time-slicing-config"))
    assert config_map.inputs["metadata"]["namespace"] == "kube-system"
    parsed = {key: yaml.safe_load(text) for key, text in config_map.inputs["data"].items()}
    assert parsed == SEED_CONFIG_MAP


def test_prod_config_map_records_tuning_provenance(prod: ProgramRun) -> None:
    annotations = only(prod, CONFIG_MAP, named("time-slicing-config")).inputs["metadata"]["annotations"]
    l20 = yaml.safe_load(annotations["gpushare.io/tuning-l20"])
    assert l20["gpu"] == "L20"
    assert l20["measuredMiB"] == 4621
    assert l20["resources"][0] == {
        "resource": "nvidia.com/gpu",
        "migProfile": None,
        "memoryMiB": 46068,
        "measuredMiB": 4621,
        "ceiling": 0.9,
        "replicas": 8,
    }
    # Prod opts in to the seed's `any`: T4's memory over the L20's process, floor(0.9 x 15360 / 4621) = 2.
    fallback = yaml.safe_load(annotations["gpushare.io/tuning-any"])
    assert (fallback["gpu"], fallback["mode"], fallback["measuredMiB"]) == ("T4", "time-slicing", 4621)
    assert fallback["resources"] == [
        {
            "resource": "nvidia.com/gpu",
            "migProfile": None,
            "memoryMiB": 15360,
            "measuredMiB": 4621,
            "ceiling": 0.9,
            "replicas": 2,
        }
    ]


def test_prod_l20_daemonset_equals_the_seed_apart_from_deliberate_additions(prod: ProgramRun) -> None:
    ours = copy.deepcopy(only(prod, DAEMON_SET, named("nvidia-device-plugin-daemonset-l20")).inputs)
    seed = copy.deepcopy(SEED_L20_DAEMONSET)
    config_text = only(prod, CONFIG_MAP, named("time-slicing-config")).inputs["data"]["l20"]

    # What we add or change on purpose, each for a reason:
    # 1. labels saying who manages the object and which pool it serves;
    assert ours["metadata"].pop("labels") == {
        "app.kubernetes.io/managed-by": "pulumi",
        "gpushare.io/pool": "l20",
    }
    # 2. the checksum of the key the plugin reads, so a changed key rolls the pods (seed pitfall 1);
    template_meta = ours["spec"]["template"]["metadata"]
    assert template_meta.pop("annotations") == {
        "gpushare.io/config-sha256": hashlib.sha256(config_text.encode()).hexdigest()
    }
    # 3. no `--mig-strategy=single`: a CLI flag overrides the file's `migStrategy: none`.
    seed_args = seed["spec"]["template"]["spec"]["containers"][0]["args"]
    seed_args.remove("--mig-strategy=single")
    # 4. hardening (issue #17): no privilege escalation, read-only root, RuntimeDefault seccomp, no
    #    service-account token — on top of the seed's dropped capabilities.
    pod = ours["spec"]["template"]["spec"]
    assert pod.pop("automountServiceAccountToken") is False
    assert pod.pop("securityContext") == {"seccompProfile": {"type": "RuntimeDefault"}}
    container_security = pod["containers"][0]["securityContext"]
    assert container_security.pop("allowPrivilegeEscalation") is False
    assert container_security.pop("readOnlyRootFilesystem") is True
    # 5. checkov's skip annotations, each with its reason: the checks that do not apply to a device
    #    plugin (no probes, root for the hostPath socket, ...) and the tag-only image TKE ships.
    annotations = ours["metadata"].pop("annotations")
    # 6. the stack and cluster the DaemonSet belongs to, which verify and measure read (issue 34).
    assert (annotations.pop("gpushare.io/stack"), annotations.pop("gpushare.io/cluster")) == (
        "prod",
        "cls-prod0001",
    )
    skipped = {value.partition("=")[0] for value in annotations.values()}
    assert skipped == {
        "CKV_K8S_8",
        "CKV_K8S_9",
        "CKV_K8S_23",
        "CKV_K8S_40",
        "CKV_K8S_15",
        "CKV2_K8S_6",
        "CKV_K8S_43",
    }
    assert ours == seed


def test_prod_t4_is_served_by_the_adopted_tke_daemonset(prod: ProgramRun) -> None:
    daemonsets = [r.inputs["metadata"]["name"] for r in prod.resources if r.type == DAEMON_SET]
    assert daemonsets == ["nvidia-device-plugin-daemonset-l20"]
    patch = only(prod, DAEMON_SET_PATCH).inputs
    assert patch["metadata"]["name"] == "nvidia-device-plugin-daemonset"
    assert patch["metadata"]["namespace"] == "kube-system"
    pod = patch["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia-device-enable": "enable", "nvidia.com/device-plugin.config": "t4"}
    assert pod["containers"][0]["args"][-1] == "--config-file=/etc/nvidia/time-slicing-config/t4"
    t4_text = only(prod, CONFIG_MAP, named("time-slicing-config")).inputs["data"]["t4"]
    assert patch["spec"]["template"]["metadata"]["annotations"] == {
        "gpushare.io/config-sha256": hashlib.sha256(t4_text.encode()).hexdigest()
    }


def test_prod_plugin_workloads_wait_for_the_config_map_they_mount(prod: ProgramRun) -> None:
    """Both plugins mount time-slicing-config; the adopted TKE DaemonSet started before it exists would
    fail its mount. Pulumi does not pass a component's depends_on to its children, so the wait comes from
    the ConfigMap's name wired into each workload."""
    config_map = only(prod, CONFIG_MAP, named("time-slicing-config"))
    for workload in (only(prod, DAEMON_SET_PATCH), only(prod, DAEMON_SET)):
        assert config_map.urn in workload.dependencies, workload.urn
        assert workload.property_dependencies["spec"] == [config_map.urn], workload.urn


def test_prod_node_pools_are_protected_and_labelled(prod: ProgramRun) -> None:
    pools = {r.inputs["name"]: r for r in prod.resources if r.type == NODE_POOL}
    assert set(pools) == {"gpushare-l20", "gpushare-t4"}
    l20 = pools["gpushare-l20"]
    assert l20.protect
    assert l20.inputs["deletionProtection"] is True
    assert l20.inputs["deleteKeepInstance"] is False
    assert l20.inputs["autoScalingConfig"]["instanceType"] == "PNV5b.8XLARGE96"
    assert (l20.inputs["minSize"], l20.inputs["maxSize"], l20.inputs["desiredCapacity"]) == (1, 1, 1)
    assert l20.inputs["labels"] == {
        "gpushare.io/gpu-model": "L20",
        "gpushare.io/pool": "l20",
        "nvidia-device-enable": "enable",
        "nvidia.com/device-plugin.config": "l20",
    }
    assert l20.inputs["nodeConfig"]["gpuArgs"]["migEnable"] is False
    assert l20.inputs["clusterId"] == "cls-prod0001"


def test_resources_use_the_explicit_providers(prod: ProgramRun) -> None:
    pool = only(prod, NODE_POOL, lambda r: r.inputs["name"] == "gpushare-l20")
    config_map = only(prod, CONFIG_MAP, named("time-slicing-config"))
    assert pool.provider is not None and "pulumi:providers:tencentcloud::tencentcloud" in pool.provider
    assert (
        config_map.provider is not None and "pulumi:providers:kubernetes::kubernetes" in config_map.provider
    )
    kubernetes = only(prod, KUBERNETES_PROVIDER)
    assert "kubeconfig" in kubernetes.secret_input_paths


def test_helm_mig_h20_pool_is_partitioned_and_time_sliced(helm_mig: ProgramRun) -> None:
    h20 = only(helm_mig, NODE_POOL, lambda r: r.inputs["name"] == "gpushare-h20")
    assert h20.inputs["nodeConfig"]["gpuArgs"]["migEnable"] is True
    assert h20.inputs["labels"]["nvidia.com/mig.config"] == "h20-6x1g.12gb-1x1g.24gb"
    assert h20.inputs["labels"]["nvidia.com/gpu.present"] == "true"  # chart >= 0.15 without NFD
    script = base64.b64decode(h20.inputs["nodeConfig"]["preStartUserScript"]).decode()
    # The script installs the boot-time unit; the layout goes by profile name (tests/test_mig_setup.py).
    assert "MIG_PROFILES=" + ",".join(["1g.24gb"] + ["1g.12gb"] * 6) + "\n" in script
    assert "systemctl enable gpushare-mig.service" in script
    mig_parted = only(helm_mig, CONFIG_MAP, named("gpushare-mig-parted-config-h20")).inputs["data"][
        "config.yaml"
    ]
    assert yaml.safe_load(mig_parted) == {
        "version": "v1",
        "mig-configs": {
            "h20-6x1g.12gb-1x1g.24gb": [
                {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.24gb": 1, "1g.12gb": 6}}
            ]
        },
    }


def test_helm_mig_uses_the_helm_release_with_per_pool_configs(helm_mig: ProgramRun) -> None:
    release = only(helm_mig, HELM_RELEASE).inputs
    assert (release["chart"], release["version"], release["namespace"]) == (
        "nvidia-device-plugin",
        "0.17.1",
        "nvidia-device-plugin",
    )
    assert release["repositoryOpts"]["repo"] == "https://nvidia.github.io/k8s-device-plugin"
    values = release["values"]
    assert set(values["config"]["map"]) == {"h20", "l20", "any"}
    assert values["config"]["default"] == "any"
    h20 = yaml.safe_load(values["config"]["map"]["h20"])
    assert h20["flags"]["migStrategy"] == "mixed"
    assert h20["sharing"]["timeSlicing"]["resources"][0]["name"] == "nvidia.com/mig-1g.12gb"
    assert "migStrategy" not in values  # as env it would override every per-node file
    # TKE's own plugin must not run beside the chart's: every pool opts out of it, and nothing of TKE's
    # is patched.
    assert not [r for r in helm_mig.resources if r.type in (DAEMON_SET, DAEMON_SET_PATCH)]
    pools = [r.inputs["labels"] for r in helm_mig.resources if r.type == NODE_POOL]
    assert [labels["nvidia-device-enable"] for labels in pools] == ["disable", "disable"]
    assert "nodeSelector" not in values and "affinity" not in values  # the chart's own affinity


def test_helm_mig_fallback_shares_nothing(helm_mig: ProgramRun) -> None:
    values = only(helm_mig, HELM_RELEASE).inputs["values"]
    assert yaml.safe_load(values["config"]["map"]["any"]) == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
    }
    provenance = yaml.safe_load(values["podAnnotations"]["gpushare.io/tuning-any"])
    assert provenance == {
        "pool": None,
        "gpu": None,
        "mode": "exclusive",
        "migStrategy": "none",
        "resources": [],
    }


def test_changing_one_measurement_changes_exactly_that_pools_checksum(tmp_path: Path) -> None:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    document["config"]["gpushare:pools"][0]["sharing"]["measuredMiB"] = 3000  # l20: 8 -> 13 replicas
    changed = run_document(document, tmp_path)
    before = run_stack("prod")

    def checksums(run: ProgramRun) -> dict[str, str]:
        found = {
            r.inputs["metadata"]["name"]: r.inputs["spec"]["template"]["metadata"]["annotations"][
                "gpushare.io/config-sha256"
            ]
            for r in run.resources
            if r.type in (DAEMON_SET, DAEMON_SET_PATCH)
        }
        return found

    old, new = checksums(before), checksums(changed)
    assert (
        old.keys() == new.keys() == {"nvidia-device-plugin-daemonset-l20", "nvidia-device-plugin-daemonset"}
    )
    assert old["nvidia-device-plugin-daemonset-l20"] != new["nvidia-device-plugin-daemonset-l20"]
    assert old["nvidia-device-plugin-daemonset"] == new["nvidia-device-plugin-daemonset"]  # t4 untouched


def test_a_bad_stack_file_fails_with_the_validators_message(tmp_path: Path) -> None:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    document["config"]["gpushare:pools"][1]["sharing"]["measuredMiB"] = 0
    with pytest.raises(pulumi.RunError) as caught:
        run_document(document, tmp_path)
    assert str(caught.value) == "Pulumi.test.yaml: gpushare:pools[1].sharing.measuredMiB: must be > 0"


def test_a_misspelled_top_level_key_fails_the_program(tmp_path: Path) -> None:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    document["config"]["gpushare:pool"] = document["config"].pop("gpushare:pools")
    with pytest.raises(pulumi.RunError, match="gpushare:pool: unknown key"):
        run_document(document, tmp_path)


# --------------------------------------------------------------------------------------------------------
# GPU Operator mode (staging)


def _operator_release(run: ProgramRun) -> dict[str, Any]:
    release: dict[str, Any] = only(run, HELM_RELEASE).inputs
    return release


def _config_map_in(run: ProgramRun, namespace: str, name: str) -> dict[str, Any]:
    found = only(
        run,
        CONFIG_MAP,
        lambda r: (r.inputs["metadata"].get("namespace"), r.inputs["metadata"]["name"]) == (namespace, name),
    )
    return found.inputs


def test_staging_installs_the_pinned_gpu_operator_with_tke_values(staging: ProgramRun) -> None:
    release = _operator_release(staging)
    assert (release["chart"], release["version"], release["namespace"], release["name"]) == (
        "gpu-operator",
        "v26.7.0",
        "gpu-operator",
        "gpu-operator",
    )
    assert release["repositoryOpts"]["repo"] == "https://helm.ngc.nvidia.com/nvidia"
    values = release["values"]
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}
    assert values["cdi"] == {"enabled": False}
    assert values["operator"] == {"runtimeClass": "runc"}
    assert values["nfd"] == {"enabled": True} and values["gfd"] == {"enabled": True}
    # Staging time-slices its L20s: per-pod series need both (issue 34; tests/test_gpu_operator.py).
    assert values["dcgmExporter"] == {
        "enabled": True,
        "serviceMonitor": {"enabled": False},
        "hostPID": True,
        "env": [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}],
    }
    # h20's file says mixed, l20's none: an env override would be wrong for one of them.
    assert values["mig"] == {"strategy": ""}
    assert values["migManager"]["env"] == [{"name": "WITH_REBOOT", "value": "true"}]
    assert values["migManager"]["enabled"] is True
    # TKE's own plugin is kept off the operator's pools by their label (optOut), nothing of TKE's patched.
    assert not [r for r in staging.resources if r.type in (DAEMON_SET, DAEMON_SET_PATCH)]
    pools = [r.inputs["labels"] for r in staging.resources if r.type == NODE_POOL]
    assert [labels["nvidia-device-enable"] for labels in pools] == ["disable", "disable"]


def test_staging_device_plugin_config_map_exists_and_tunes_every_pool(staging: ProgramRun) -> None:
    config = _operator_release(staging)["values"]["devicePlugin"]["config"]
    assert config["default"] == "any" and config["create"] is False
    config_map = _config_map_in(staging, "gpu-operator", config["name"])
    assert config_map["immutable"] is True
    parsed = {key: yaml.safe_load(text) for key, text in config_map["data"].items()}
    assert set(parsed) == {"h20", "l20", "any"}

    def replicas(key: str) -> dict[str, int]:
        resources = parsed[key]["sharing"]["timeSlicing"]["resources"]
        return {r["name"]: r["replicas"] for r in resources}

    assert replicas("l20") == {"nvidia.com/gpu": 8}  # floor(0.9 x 46068 / 4621) = floor(8.97)
    # H20 1g.12gb 11264 MiB: floor(0.9 x 11264 / 4621) = floor(2.19) = 2;
    # H20 1g.24gb 22138 MiB: floor(0.9 x 22138 / 4621) = floor(4.31) = 4.
    assert replicas("h20") == {"nvidia.com/mig-1g.12gb": 2, "nvidia.com/mig-1g.24gb": 4}
    assert parsed["h20"]["flags"]["migStrategy"] == "mixed"
    assert parsed["l20"]["flags"]["migStrategy"] == "none"
    provenance = yaml.safe_load(config_map["metadata"]["annotations"]["gpushare.io/tuning-h20"])
    assert provenance["measuredMiB"] == 4621


def test_staging_mig_manager_reads_one_config_map_with_every_layout(staging: ProgramRun) -> None:
    config = _operator_release(staging)["values"]["migManager"]["config"]
    assert config["default"] == "all-disabled" and config["create"] is False
    config_map = _config_map_in(staging, "gpu-operator", config["name"])
    assert yaml.safe_load(config_map["data"]["config.yaml"]) == {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "h20-6x1g.12gb-1x1g.24gb": [
                {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.24gb": 1, "1g.12gb": 6}}
            ],
        },
    }
    # No per-pool mig-parted ConfigMaps in kube-system: the operator reads only its own namespace.
    assert not [
        r
        for r in staging.resources
        if r.type == CONFIG_MAP and r.inputs["metadata"]["namespace"] != "gpu-operator"
    ]


def test_staging_mig_pool_is_labelled_not_scripted(staging: ProgramRun) -> None:
    h20 = only(staging, NODE_POOL, lambda r: r.inputs["name"] == "gpushare-h20")
    assert h20.inputs["labels"]["nvidia.com/mig.config"] == "h20-6x1g.12gb-1x1g.24gb"
    assert "preStartUserScript" not in h20.inputs["nodeConfig"]
    # gpuOperator.tkeMigEnable defaults to false: the MIG manager alone owns MIG mode and layout.
    assert h20.inputs["nodeConfig"]["gpuArgs"]["migEnable"] is False
    assert h20.inputs["autoScalingConfig"]["instanceType"] == "PNV6.16XLARGE640"
    assert "nvidia.com/gpu.present" not in h20.inputs["labels"]  # NFD labels GPU nodes for the operator


def test_changing_one_measurement_changes_what_the_operator_sees(staging: ProgramRun, tmp_path: Path) -> None:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text())
    document["config"]["gpushare:pools"][1]["sharing"]["measuredMiB"] = 3000  # l20: 8 -> 13 replicas
    changed = run_document(document, tmp_path)
    before, after = _operator_release(staging)["values"], _operator_release(changed)["values"]
    old_name = before["devicePlugin"]["config"]["name"]
    new_name = after["devicePlugin"]["config"]["name"]
    # A new ConfigMap name in the Release values: the ClusterPolicy changes and the operator rolls its plugin.
    assert old_name != new_name
    new_data = _config_map_in(changed, "gpu-operator", new_name)["data"]
    old_data = _config_map_in(staging, "gpu-operator", old_name)["data"]
    assert yaml.safe_load(new_data["l20"])["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 13
    assert new_data["h20"] == old_data["h20"]
    # The MIG layouts did not change: the MIG manager is left alone.
    assert before["migManager"] == after["migManager"]


def test_a_measurement_that_changes_no_replicas_rolls_nothing(staging: ProgramRun, tmp_path: Path) -> None:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text())
    document["config"]["gpushare:pools"][1]["sharing"]["measuredMiB"] = 4700  # floor(0.9 x 46068 / 4700) = 8
    changed = run_document(document, tmp_path)
    name = _operator_release(staging)["values"]["devicePlugin"]["config"]["name"]
    assert _operator_release(changed)["values"]["devicePlugin"]["config"]["name"] == name
    annotations = _config_map_in(changed, "gpu-operator", name)["metadata"]["annotations"]
    assert yaml.safe_load(annotations["gpushare.io/tuning-l20"])["measuredMiB"] == 4700
