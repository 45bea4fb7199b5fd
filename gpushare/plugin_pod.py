"""What a device-plugin pod looks like in DaemonSet mode (the seed's L20 DaemonSet, made per pool).

Pure data: the components turn it into manifests, the policy pack reads it back.
"""

from __future__ import annotations

from gpushare import kube_names

# NVIDIA's plugin image repository: the device-plugin chart's default `image.repository` (values.yaml of the
# pinned 0.17.1) and what the program runs when no image is given outside TKE's v0.14.5.
NVIDIA_PLUGIN_REPOSITORY = "nvcr.io/nvidia/k8s-device-plugin"
COMMAND = ("nvidia-device-plugin",)
# `--mig-strategy` is deliberately absent: a CLI flag beats the config file (seed: `--mig-strategy=single`
# silently overrode `migStrategy: none`), so each pool's file alone decides its strategy.
BASE_ARGS = ("--fail-on-init-error=false", "--pass-device-specs=true")
ENV = {"NVIDIA_DRIVER_CAPABILITIES": "utility,compute"}
RESOURCES = {"cpu": "100m", "memory": "100Mi"}
DEVICE_PLUGIN_VOLUME = "device-plugin"
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
PRIORITY_CLASS = "system-node-critical"

# Hardening, as in NVIDIA's static manifest plus what the plugin allows: it needs no capability and no
# privilege escalation (the NVIDIA runtime hook, not the plugin, sets up the devices), writes only its
# socket under DEVICE_PLUGIN_DIR (a hostPath), and never calls the Kubernetes API (read from the
# v0.14.5 and v0.17.1 sources: the plugin command has no kube client; labels are GFD's job and MPS is a
# separate daemon), so its root filesystem is read-only and no service-account token is mounted.
ALLOW_PRIVILEGE_ESCALATION = False
READ_ONLY_ROOT_FILESYSTEM = True
DROPPED_CAPABILITIES = ("ALL",)
SECCOMP_PROFILE = "RuntimeDefault"
AUTOMOUNT_SERVICE_ACCOUNT_TOKEN = False

# What scanners (checkov) flag on a plugin DaemonSet that does not apply to a device plugin, with the
# reason next to the object (`checkov.io/skipN: CHECK=reason`), never a blanket skip in a config file.
_SCANNER_EXCEPTIONS = (
    (
        "CKV_K8S_8",
        "NVIDIA's device plugin serves no health endpoint; the kubelet's re-registration is its liveness",
    ),
    (
        "CKV_K8S_9",
        "NVIDIA's device plugin serves no readiness endpoint; it is ready once registered with the kubelet",
    ),
    (
        "CKV_K8S_23",
        "the plugin creates its socket in the root-owned hostPath /var/lib/kubelet/device-plugins",
    ),
    (
        "CKV_K8S_40",
        "the plugin creates its socket in the root-owned hostPath /var/lib/kubelet/device-plugins",
    ),
    (
        "CKV_K8S_15",
        "a pinned image is pulled once; Always would make every plugin restart depend on the registry",
    ),
    ("CKV2_K8S_6", "the plugin has no network traffic: it talks to the kubelet over a unix socket"),
)
_TAG_ONLY_IMAGE = (
    "CKV_K8S_43",
    "the stack names the image by tag only (devicePlugin.image takes repo:tag@sha256:...; "
    "policy plugin-image-pinned warns)",
)


def image_digest(image: str) -> str | None:
    """The `sha256:...` digest of an image reference (`repo@sha256:...`, `repo:tag@sha256:...`)."""
    _, at, digest = image.partition("@")
    return digest if at else None


def scanner_exceptions(image: str) -> dict[str, str]:
    """checkov's skip annotations for a plugin DaemonSet running `image`, one reason each."""
    exceptions = list(_SCANNER_EXCEPTIONS)
    if image_digest(image) is None:
        exceptions.append(_TAG_ONLY_IMAGE)
    return {f"checkov.io/skip{i}": f"{check}={reason}" for i, (check, reason) in enumerate(exceptions, 1)}


def plugin_args(config_key: str) -> list[str]:
    return [*BASE_ARGS, f"--config-file={kube_names.config_file_path(config_key)}"]


def daemonset_name(pool: str) -> str:
    return kube_names.DAEMONSET_PREFIX + pool


def pod_selector_labels(pool: str) -> dict[str, str]:
    return {"name": f"nvidia-device-plugin-ds-{pool}"}


def node_selector(config_key: str, *, tke_switch: bool = True) -> dict[str, str]:
    """The nodes of the pool whose key is `config_key` (its name). Beside a parked or adopted TKE
    DaemonSet also TKE's switch label, as the seed's DaemonSets did; under managedPlugin optOut that label
    says `disable`, so the pool's own labels alone select."""
    if not tke_switch:
        return {kube_names.LABEL_PLUGIN_CONFIG: config_key, kube_names.LABEL_POOL: config_key}
    return {
        kube_names.LABEL_DEVICE_ENABLE: kube_names.DEVICE_ENABLE_VALUE,
        kube_names.LABEL_PLUGIN_CONFIG: config_key,
    }
