"""Names gpushare puts on Kubernetes objects and nodes, shared by the program and the policy pack."""

# TKE's switch for its built-in device plugin; TKE sets it on GPU nodes itself, and its DaemonSet selects
# `enable`. A node-pool label `disable` takes TKE's plugin off the pool's nodes (managedPlugin optOut;
# verified on TKE by a third-party guide, not by Tencent's docs).
LABEL_DEVICE_ENABLE = "nvidia-device-enable"
DEVICE_ENABLE_VALUE = "enable"
DEVICE_DISABLE_VALUE = "disable"
# Read by the upstream config-manager (Helm mode) and by our per-pool DaemonSets' nodeSelector.
LABEL_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
LABEL_GPU_MODEL = "gpushare.io/gpu-model"
LABEL_POOL = "gpushare.io/pool"
# Chart >= 0.15 schedules only where NFD's PCI label or this label says a GPU is present.
LABEL_GPU_PRESENT = "nvidia.com/gpu.present"
# mig-parted / GPU Operator MIG manager: the desired MIG config of a node.
LABEL_MIG_CONFIG = "nvidia.com/mig.config"
# Set by the MIG manager (GPU Operator / mig-parted) on a node: pending -> (rebooting) -> success | failed.
LABEL_MIG_CONFIG_STATE = "nvidia.com/mig.config.state"
# Per-node opt-outs the GPU Operator honours: `nvidia.com/gpu.deploy.<operand>=false`.
LABEL_OPERATOR_DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
# The MPS control daemon's DaemonSet (chart and GPU Operator) runs only on nodes labelled so; gpushare
# labels MPS pools' nodes itself (GFD, where it runs, writes the same value from the config).
LABEL_MPS_CAPABLE = "nvidia.com/mps.capable"
# TKE qGPU (gpushare/qgpu.py): the qgpu-manager DaemonSet's nodeSelector, and the pool's isolation policy.
# gpushare sets both on qGPU pools only; no pool's own labels may (one would put qGPU on NVIDIA's cards).
LABEL_QGPU_DEVICE_ENABLE = "qgpu-device-enable"
LABEL_QGPU_SCHEDULE_POLICY = "tke.cloud.tencent.com/qgpu-schedule-policy"

ANNOTATION_CONFIG_SHA256 = "gpushare.io/config-sha256"
ANNOTATION_TUNING_PREFIX = "gpushare.io/tuning-"
# On a GPU workload (or its pod template): the largest GPU memory one of its processes used, in MiB, which
# the workload rules hold against the per-slot budget of the pool it lands on (gpushare/workload_fit.py).
ANNOTATION_MEASURED_MIB = "gpushare.io/measured-mib"
# Which stack and TKE cluster an object of gpushare's belongs to: `verify` and `measure` refuse a cluster
# whose gpushare objects name another (annotations: a stack name need not be a valid label value).
ANNOTATION_STACK = "gpushare.io/stack"
ANNOTATION_CLUSTER = "gpushare.io/cluster"

CONFIG_MAP_NAME = "time-slicing-config"
CONFIG_MAP_NAMESPACE = "kube-system"
CONFIG_MOUNT_DIR = "/etc/nvidia/time-slicing-config"
CONFIG_VOLUME = "time-slicing-config"

MIG_PARTED_CONFIG_MAP_NAME = "gpushare-mig-parted-config"
MIG_PARTED_CONFIG_KEY = "config.yaml"

# TKE's own device-plugin DaemonSet (the seed's cluster; container name as in NVIDIA's static manifest).
MANAGED_PLUGIN_NAME = "nvidia-device-plugin-daemonset"
MANAGED_PLUGIN_NAMESPACE = "kube-system"
PLUGIN_CONTAINER = "nvidia-device-plugin-ctr"
# The field manager of every server-side-apply patch gpushare makes on TKE's DaemonSet (park, adopt and the
# hand-back): one name, so the hand-back's apply drops whatever park or adopt set and did not set again.
MANAGED_PLUGIN_FIELD_MANAGER = "gpushare-tke-device-plugin"
# TKE's DaemonSet as shipped, where gpushare's patches touch it (the seed's record of the cluster:
# `nvidia-device-plugin:v0.14.5`, args `--mig-strategy=single --fail-on-init-error=false
# --pass-device-specs=true`, no `--config-file`; nodeSelector `nvidia-device-enable=enable`). The hand-back
# puts these back. The args are configurable (`managedPlugin.tkeArgs`): TKE may ship others elsewhere.
TKE_PLUGIN_ARGS = ("--mig-strategy=single", "--fail-on-init-error=false", "--pass-device-specs=true")
# Parking gives TKE's DaemonSet a nodeSelector that no node carries.
LABEL_PARKED = "gpushare.io/managed-plugin"
PARKED_VALUE = "parked"

DAEMONSET_PREFIX = "nvidia-device-plugin-daemonset-"

# What gpushare writes on a pool's nodes itself: a pool's own `labels` may not set these.
# (LABEL_DEVICE_ENABLE is set too, but a pool may repeat the value the managed-plugin action gives it.)
NODE_LABELS_SET_BY_GPUSHARE = frozenset(
    {
        LABEL_PLUGIN_CONFIG,
        LABEL_GPU_MODEL,
        LABEL_POOL,
        LABEL_GPU_PRESENT,
        LABEL_MIG_CONFIG,
        LABEL_MPS_CAPABLE,
        LABEL_QGPU_DEVICE_ENABLE,
        LABEL_QGPU_SCHEDULE_POLICY,
    }
)


def tuning_annotation(key: str) -> str:
    return ANNOTATION_TUNING_PREFIX + key


def config_file_path(key: str) -> str:
    """The plugin reads one key's file; the mount directory itself crashes v0.14.5 (seed pitfall 3)."""
    return f"{CONFIG_MOUNT_DIR}/{key}"
