"""Device-plugin workloads and the node pools they land on.

Node sets are modelled by node-pool labels: a workload lands on a pool when its nodeSelector is a subset
of the pool's labels and its required node affinity (if any) matches them. Taints and tolerations are not
modelled (every plugin here tolerates the GPU taints).
- `DaemonSetPlugin`: a DaemonSet whose container is the device plugin (by image, command or container
  name), or a DaemonSetPatch. TKE's own `kube-system/nvidia-device-plugin-daemonset` is never in the stack
  but always on the cluster, so it is modelled (selector `nvidia-device-enable=enable`) with the stack's
  patches on it merged in, as server-side apply merges them.
- `HelmPlugin`: NVIDIA's chart; from 0.15 on it adds a default node affinity (NFD's NVIDIA PCI label,
  Tegra, or `nvidia.com/gpu.present=true`). Also the GPU Operator's chart: its ClusterPolicy deploys the
  plugin on every node NFD labels with an NVIDIA PCI device, unless the node opts out with
  `nvidia.com/gpu.deploy.device-plugin=false`; its config is the ConfigMap `devicePlugin.config.name`.
- `NodePoolView`: a TKE node pool, its labels and the GPU it carries.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from gpushare import catalog, device_plugin, kube_names, plugin_pod
from gpushare.catalog import GpuModel
from gpushare.resource_types import CONFIG_MAP, DAEMON_SET, DAEMON_SET_PATCH, HELM_RELEASE, NODE_POOL
from gpushare.stack.model import Pool
from gpushare.stack.plugin_settings import OPERATOR_CHART_PLUGIN_VERSIONS, TKE_PLUGIN_IMAGE
from gpushare_policies.config_files import (
    DEFAULT_PLUGIN_VERSION,
    NEWEST_PLUGIN_VERSION,
    RESTRUCTURED_IN,
    ConfigSource,
    config_map_source,
    image_version,
    modelled_plugin_version,
    parse_version,
)
from gpushare_policies.props import (
    UNKNOWN,
    Resource,
    boolean,
    dig,
    items,
    mapping,
    string_map,
    text,
)
from gpushare_policies.settings import StackFacts

# NVIDIA's chart (the name components/device_plugin_release.py installs), by name or tarball URL.
_DEVICE_PLUGIN_CHART = re.compile(r"(^|/)nvidia-device-plugin(-v?\d[\w.+-]*\.tgz)?$")
# NVIDIA's GPU Operator chart (components/gpu_operator_release.py), by name or tarball URL.
_OPERATOR_CHART = re.compile(r"(^|/)gpu-operator(-v?\d[\w.+-]*\.tgz)?$")
# The chart's `mig.strategy` default (values.yaml), rendered into the ClusterPolicy when non-empty.
OPERATOR_DEFAULT_MIG_STRATEGY: Final = "single"
# NVIDIA's image and TKE's copy of it: nvcr.io/nvidia/k8s-device-plugin, .../tkeimages/nvidia-device-plugin.
_DEVICE_PLUGIN_IMAGE = re.compile(r"(^|/)(k8s|nvidia)-device-plugin([:@]|$)")
# NFD's label for an NVIDIA PCI device (vendor 10de); the chart's default affinity accepts it.
NFD_NVIDIA_PCI_LABEL: Final = "feature.node.kubernetes.io/pci-10de.present"
_CHART_DEFAULT_AFFINITY_LABELS: Final = (
    (NFD_NVIDIA_PCI_LABEL, "true"),
    ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
    (kube_names.LABEL_GPU_PRESENT, "true"),
)
CONFIG_FILE_FLAGS: Final = ("--config-file", "-config-file")
CONFIG_FILE_ENV: Final = "CONFIG_FILE"


# --------------------------------------------------------------------------------------------------------
# Placement: node selectors, required node affinity, node pools


@dataclass(frozen=True)
class Requirement:
    """One `matchExpressions` item of a required node-affinity term."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "In":
            return value in self.values
        if self.operator == "NotIn":
            return value not in self.values
        if self.operator == "Exists":
            return value is not None
        if self.operator == "DoesNotExist":
            return value is None
        if self.operator in ("Gt", "Lt") and value is not None and self.values:
            try:
                left, right = int(value), int(self.values[0])
            except ValueError:
                return False
            return left > right if self.operator == "Gt" else left < right
        return False


@dataclass(frozen=True)
class Placement:
    node_selector: Mapping[str, str]
    required_terms: tuple[tuple[Requirement, ...], ...] | None = None
    """OR of AND-ed requirements; None when the pod has no required node affinity."""

    def lands_on(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(key) != value for key, value in self.node_selector.items()):
            return False
        if self.required_terms is None:
            return True
        return any(all(req.matches(labels) for req in term) for term in self.required_terms)

    def describe(self) -> str:
        selector = ", ".join(f"{k}={v}" for k, v in sorted(self.node_selector.items())) or "any node"
        return f"nodeSelector {selector}" + (" + required node affinity" if self.required_terms else "")


def required_terms(affinity: object) -> tuple[tuple[Requirement, ...], ...] | None:
    terms = dig(
        affinity, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"
    )
    if not isinstance(terms, list):
        return None
    parsed = []
    for term in terms:
        requirements = []
        for expression in items(dig(term, "matchExpressions")):
            key, operator = text(dig(expression, "key")), text(dig(expression, "operator"))
            if key and operator:
                values = tuple(v for v in items(dig(expression, "values")) if isinstance(v, str))
                requirements.append(Requirement(key, operator, values))
        parsed.append(tuple(requirements))
    return tuple(parsed)


@dataclass(frozen=True)
class NodePoolView:
    resource: Resource
    labels: Mapping[str, str] | None
    """None when the pool's labels are unknown (preview)."""
    instance_type: str | None
    mig_enable: bool | None
    stack_pool: Pool | None

    @property
    def name(self) -> str:
        return (
            (self.labels or {}).get(kube_names.LABEL_POOL)
            or text(self.resource.props.get("name"))
            or self.resource.name
        )

    @property
    def gpu_key(self) -> str | None:
        """The GPU model: the `gpushare.io/gpu-model` label, else the catalog's instance type, else the
        stack pool's `gpu`."""
        labelled = (self.labels or {}).get(kube_names.LABEL_GPU_MODEL)
        if labelled:
            return labelled
        known = catalog.instance_type(self.instance_type or "")
        if known is not None:
            return known.gpu
        return self.stack_pool.gpu if self.stack_pool is not None else None

    @property
    def gpu(self) -> GpuModel | None:
        return catalog.GPUS.get(self.gpu_key or "")

    @property
    def is_gpu_pool(self) -> bool:
        return self.gpu_key is not None

    def node_labels(self, node_feature_discovery: bool) -> Mapping[str, str]:
        """The labels its nodes carry; NFD adds its NVIDIA PCI label to every GPU node, and TKE its switch
        `nvidia-device-enable=enable` unless the pool's own labels set it (`disable` opts out)."""
        labels = dict(self.labels or {})
        if self.is_gpu_pool:
            labels.setdefault(kube_names.LABEL_DEVICE_ENABLE, kube_names.DEVICE_ENABLE_VALUE)
            if node_feature_discovery:
                labels.setdefault(NFD_NVIDIA_PCI_LABEL, "true")
        return labels


def node_pool_view(res: Resource, stack: StackFacts) -> NodePoolView | None:
    if res.type != NODE_POOL:
        return None
    raw_labels = res.props.get("labels")
    labels = None if raw_labels is UNKNOWN else string_map(raw_labels)
    pool_name = (labels or {}).get(kube_names.LABEL_POOL)
    return NodePoolView(
        resource=res,
        labels=labels,
        instance_type=text(dig(res.props, "autoScalingConfig", "instanceType")),
        mig_enable=boolean(dig(res.props, "nodeConfig", "gpuArgs", "migEnable")),
        stack_pool=stack.pool(pool_name) if pool_name else None,
    )


# --------------------------------------------------------------------------------------------------------
# DaemonSet plugins


@dataclass(frozen=True)
class VolumeMount:
    volume: str
    path: str
    sub_path: str | None = None


@dataclass(frozen=True)
class ConfigMapVolume:
    config_map: str
    items: Mapping[str, str] = field(default_factory=dict)
    """File path inside the volume -> ConfigMap key, when `items` remaps keys."""

    def key_for(self, file_path: str) -> str:
        return self.items.get(file_path, file_path)


@dataclass(frozen=True)
class ConfigReference:
    """The ConfigMap key a plugin container reads through its `--config-file`."""

    namespace: str
    config_map: str
    key: str


@dataclass(frozen=True)
class DaemonSetPlugin:
    resource: Resource | None
    """The DaemonSet or DaemonSetPatch; None for TKE's DaemonSet when the stack does not touch it."""
    kind: str
    namespace: str
    name: str
    placement: Placement | None
    """None when the nodeSelector is unknown (preview)."""
    image: str | None
    argv: tuple[str, ...] | None
    """The plugin's command-line arguments; None when unknown or not a plain list."""
    env: Mapping[str, str]
    mounts: tuple[VolumeMount, ...]
    volumes: Mapping[str, ConfigMapVolume | None]
    """Volume name -> its ConfigMap (None for other volume kinds)."""
    pod_annotations: Mapping[str, object] | None
    """None when unknown (preview); values may be UNKNOWN."""
    managed: bool = False
    """TKE's own `kube-system/nvidia-device-plugin-daemonset`."""
    patches_placement: bool = True
    """False for a DaemonSetPatch that sets neither nodeSelector nor affinity (it keeps the target's)."""

    @property
    def urn(self) -> str:
        return self.resource.urn if self.resource is not None else ""

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def plugin_version(self) -> str:
        return modelled_plugin_version(image_version(self.image), DEFAULT_PLUGIN_VERSION)

    @property
    def config_file(self) -> str | None:
        """`--config-file` (CLI) beats `CONFIG_FILE` (env), as in the plugin."""
        argv = self.argv or ()
        for index, arg in enumerate(argv):
            if arg == "--":
                break
            name, has_value, value = arg.partition("=")
            if name in CONFIG_FILE_FLAGS:
                if has_value:
                    return value
                return argv[index + 1] if index + 1 < len(argv) else None
        return self.env.get(CONFIG_FILE_ENV)

    def directory_mount(self) -> VolumeMount | None:
        """The mount whose directory `--config-file` names (the seed's v0.14.5 crash), if any."""
        path = _normalise(self.config_file)
        if path is None:
            return None
        for mount in self.mounts:
            mounted = _normalise(mount.path)
            if mounted is None:
                continue
            # The mount point itself (unless a subPath mounts a single file there), or a directory above it.
            if (mounted == path and not mount.sub_path) or mounted.startswith(path.rstrip("/") + "/"):
                return mount
        return None

    def config_reference(self) -> ConfigReference | None:
        path = _normalise(self.config_file)
        if path is None:
            return None
        for mount in sorted(self.mounts, key=lambda m: len(m.path), reverse=True):
            volume = self.volumes.get(mount.volume)
            mounted = _normalise(mount.path)
            if volume is None or mounted is None:
                continue
            if mount.sub_path and path == mounted:
                return ConfigReference(self.namespace, volume.config_map, volume.key_for(mount.sub_path))
            if not mount.sub_path and path.startswith(mounted.rstrip("/") + "/"):
                relative = path[len(mounted.rstrip("/")) + 1 :]
                return ConfigReference(self.namespace, volume.config_map, volume.key_for(relative))
        return None

    def flag_overrides(self) -> dict[str, object]:
        """The config-file flags its command line and environment set; raises GpushareError where the
        plugin itself would refuse the command line."""
        return device_plugin.flag_overrides(self.argv or (), self.env, self.plugin_version)


def _normalise(path: str | None) -> str | None:
    return posixpath.normpath(path) if path else None


# Shells a container may start the plugin through (`sh -c "exec nvidia-device-plugin ..."`).
_SHELLS: Final = frozenset({"sh", "bash", "ash", "dash"})


def _runs_plugin_binary(command: list[str]) -> bool | None:
    """Whether a container's command runs the plugin binary; None when it sets none (the image's
    entrypoint runs). The plugin's image also runs GFD, the MPS control daemon and the config-manager
    (NVIDIA's chart: `command: ["gpu-feature-discovery"]`, `[mps-control-daemon]`, `["config-manager"]`),
    so only the command tells them apart."""
    if not command:
        return None
    binary = plugin_pod.COMMAND[0]
    if posixpath.basename(command[0]) in _SHELLS:
        script = " ".join(command[1:]).replace(";", " ").replace("&&", " ")
        return any(posixpath.basename(word) == binary for word in script.split())
    return posixpath.basename(command[0]) == binary


def _is_plugin_container(container: Mapping[str, Any]) -> bool:
    image = text(container.get("image")) or ""
    raw_command = container.get("command")
    if raw_command is not UNKNOWN:
        runs = _runs_plugin_binary([c for c in items(raw_command) if isinstance(c, str)])
        if runs is not None:
            return runs
    # No (known) command: the image's entrypoint, which is the plugin's in its own image.
    return bool(_DEVICE_PLUGIN_IMAGE.search(image)) or container.get("name") == kube_names.PLUGIN_CONTAINER


def _argv(container: Mapping[str, Any]) -> tuple[str, ...] | None:
    command, args = container.get("command"), container.get("args")
    if command is UNKNOWN or args is UNKNOWN:
        return None
    command_list, args_list = items(command), items(args)
    if not all(isinstance(a, str) for a in (*command_list, *args_list)):
        return None
    # A command naming the plugin binary passes its own arguments first; a shell wrapper hides them.
    if command_list and posixpath.basename(command_list[0]) != plugin_pod.COMMAND[0]:
        return None
    return (*command_list[1:], *args_list)


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    env = {}
    for item in items(container.get("env")):
        name, value = text(dig(item, "name")), dig(item, "value")
        if name and isinstance(value, str):
            env[name] = value
    return env


def _mounts(container: Mapping[str, Any]) -> tuple[VolumeMount, ...]:
    mounts = []
    for item in items(container.get("volumeMounts")):
        name, path = text(dig(item, "name")), text(dig(item, "mountPath"))
        if name and path:
            mounts.append(VolumeMount(name, path, text(dig(item, "subPath")) or None))
    return tuple(mounts)


def _volumes(pod_spec: object) -> dict[str, ConfigMapVolume | None]:
    volumes: dict[str, ConfigMapVolume | None] = {}
    for item in items(dig(pod_spec, "volumes")):
        name = text(dig(item, "name"))
        if not name:
            continue
        config_map = text(dig(item, "configMap", "name"))
        remapped = {
            path: key
            for entry in items(dig(item, "configMap", "items"))
            if (path := text(dig(entry, "path"))) and (key := text(dig(entry, "key")))
        }
        volumes[name] = ConfigMapVolume(config_map, remapped) if config_map else None
    return volumes


def _annotations(value: object) -> dict[str, object] | None:
    return None if value is UNKNOWN else mapping(value)


def _placement(pod_spec: object) -> Placement | None:
    selector = dig(pod_spec, "nodeSelector")
    if selector is UNKNOWN or UNKNOWN in mapping(selector).values():
        return None
    return Placement(string_map(selector), required_terms(dig(pod_spec, "affinity")))


def daemon_set_plugin(res: Resource) -> DaemonSetPlugin | None:
    """A device-plugin DaemonSet (by its container's image, command or name), or a DaemonSetPatch that
    targets TKE's DaemonSet or patches a plugin container."""
    if res.type not in (DAEMON_SET, DAEMON_SET_PATCH):
        return None
    namespace = text(dig(res.props, "metadata", "namespace")) or "default"
    name = text(dig(res.props, "metadata", "name")) or res.name
    pod_spec = dig(res.props, "spec", "template", "spec")
    containers = [c for c in items(dig(pod_spec, "containers")) if isinstance(c, dict)]
    plugin = next((c for c in containers if _is_plugin_container(c)), None)
    managed = (namespace, name) == (kube_names.MANAGED_PLUGIN_NAMESPACE, kube_names.MANAGED_PLUGIN_NAME)
    if plugin is None and not managed:
        return None
    plugin = plugin or {}
    is_patch = res.type == DAEMON_SET_PATCH
    patches_placement = not is_patch or any(
        dig(pod_spec, k) is not None for k in ("nodeSelector", "affinity")
    )
    return DaemonSetPlugin(
        resource=res,
        kind="DaemonSetPatch" if is_patch else "DaemonSet",
        namespace=namespace,
        name=name,
        placement=_placement(pod_spec) if patches_placement else None,
        image=text(plugin.get("image")),
        argv=_argv(plugin),
        env=_env(plugin),
        mounts=_mounts(plugin),
        volumes=_volumes(pod_spec),
        pod_annotations=_annotations(dig(res.props, "spec", "template", "metadata", "annotations")),
        managed=managed,
        patches_placement=patches_placement,
    )


# TKE's DaemonSet as the seed records it (tests/fixtures/tke_device_plugin/ holds the whole object): its own
# args (kube_names.TKE_PLUGIN_ARGS: mig-strategy single, fail-on-init-error false, pass-device-specs true;
# no --config-file), NVIDIA_DRIVER_CAPABILITIES its one env, and a nodeSelector on TKE's switch label,
# which every GPU node carries.
TKE_DAEMON_SET: Final = DaemonSetPlugin(
    resource=None,
    kind="TKE DaemonSet",
    namespace=kube_names.MANAGED_PLUGIN_NAMESPACE,
    name=kube_names.MANAGED_PLUGIN_NAME,
    placement=Placement({kube_names.LABEL_DEVICE_ENABLE: kube_names.DEVICE_ENABLE_VALUE}),
    image=TKE_PLUGIN_IMAGE,
    argv=kube_names.TKE_PLUGIN_ARGS,
    env={"NVIDIA_DRIVER_CAPABILITIES": "utility,compute"},
    mounts=(),
    volumes={},
    pod_annotations={},
    managed=True,
)


def apply_patch(base: DaemonSetPlugin, patch: DaemonSetPlugin) -> DaemonSetPlugin:
    """`base` after server-side apply of `patch`: the nodeSelector (an atomic map) and a container's `args`
    (an atomic list) are replaced whole, annotations merge key by key, env/mounts/volumes merge by name or
    path (as kube-apiserver does it: tests/test_engine_tke_plugin.py)."""
    placement = base.placement
    if patch.patches_placement:
        if base.placement is None or patch.placement is None:
            placement = None
        else:
            terms = patch.placement.required_terms
            placement = Placement(
                patch.placement.node_selector or base.placement.node_selector,
                terms if terms is not None else base.placement.required_terms,
            )
    mounts = {m.path: m for m in base.mounts} | {m.path: m for m in patch.mounts}
    annotations = (
        None
        if base.pod_annotations is None or patch.pod_annotations is None
        else {**base.pod_annotations, **patch.pod_annotations}
    )
    return DaemonSetPlugin(
        # Violations go to the patch: it is what the stack controls.
        resource=patch.resource,
        kind=base.kind if base.kind.endswith("(patched)") else f"{base.kind} (patched)",
        namespace=base.namespace,
        name=base.name,
        placement=placement,
        image=patch.image or base.image,
        argv=base.argv if patch.argv == () else patch.argv,
        env={**base.env, **patch.env},
        mounts=tuple(mounts.values()),
        volumes={**base.volumes, **patch.volumes},
        pod_annotations=annotations,
        managed=base.managed,
    )


# --------------------------------------------------------------------------------------------------------
# Helm plugins

# Top-level chart values the chart renders as plugin env vars (reference A.2/B), by config-file flag name.
_HELM_FLAG_VALUES: Final = {
    "migStrategy": "string",
    "failOnInitError": "bool",
    "deviceListStrategy": "string_list",
    "deviceIDStrategy": "string",
    "nvidiaDriverRoot": "string",
    "gdsEnabled": "bool",
    "mofedEnabled": "bool",
    "deviceDiscoveryStrategy": "string",
    "gdrcopyEnabled": "bool",
}
# Values the chart passes only from the plugin release that has the flag on.
_HELM_FLAG_SINCE: Final = {"deviceDiscoveryStrategy": "0.17.1", "gdrcopyEnabled": "0.20.0"}


@dataclass(frozen=True)
class HelmPlugin:
    resource: Resource
    namespace: str
    release: str
    chart: str
    chart_version: str | None
    values: Mapping[str, Any]

    @property
    def urn(self) -> str:
        return self.resource.urn

    @property
    def label(self) -> str:
        version = self.chart_version or "unpinned"
        return f"Helm release {self.namespace}/{self.release} (chart {self.chart} {version})"

    @property
    def is_operator(self) -> bool:
        return bool(_OPERATOR_CHART.search(self.chart))

    @property
    def _plugin_values(self) -> Mapping[str, Any]:
        """Where the chart keeps the plugin's settings: top level, or the operator's `devicePlugin`."""
        return mapping(self.values.get("devicePlugin")) if self.is_operator else self.values

    @property
    def version(self) -> tuple[int, int, int] | None:
        return parse_version(self.chart_version)

    @property
    def has_default_affinity(self) -> bool:
        """Chart >= 0.15 (an unpinned chart installs the newest) only schedules where a GPU is known."""
        if self.is_operator:
            return False
        version = self.version
        return version is None or version >= RESTRUCTURED_IN

    @property
    def plugin_version(self) -> str:
        if self.is_operator:
            deployed = OPERATOR_CHART_PLUGIN_VERSIONS.get(self.chart_version or "")
            return modelled_plugin_version(parse_version(deployed), NEWEST_PLUGIN_VERSION)
        return modelled_plugin_version(self.version, NEWEST_PLUGIN_VERSION)

    @property
    def enabled(self) -> bool:
        return boolean(dig(self.values, "devicePlugin", "enabled")) is not False

    @property
    def deploys_nfd(self) -> bool:
        """The NFD subchart's condition `nfd.enabled,gfd.enabled`: the first that is set decides (the
        operator's chart: `nfd.enabled`, default true)."""
        nfd = boolean(dig(self.values, "nfd", "enabled"))
        if self.is_operator:
            return nfd is not False
        return nfd if nfd is not None else boolean(dig(self.values, "gfd", "enabled")) is True

    def operand_placement(self, operand: str) -> Placement:
        """Where the operator runs one operand: nodes NFD found an NVIDIA PCI device on, unless the node
        says `nvidia.com/gpu.deploy.<operand>=false` or `nvidia.com/gpu.deploy.operands=false` (all of them:
        the operator then takes its per-operand labels off the node)."""
        return Placement(
            {},
            (
                (
                    Requirement(NFD_NVIDIA_PCI_LABEL, "In", ("true",)),
                    Requirement(kube_names.LABEL_OPERATOR_DEPLOY_PREFIX + operand, "NotIn", ("false",)),
                    Requirement(kube_names.LABEL_OPERATOR_DEPLOY_PREFIX + "operands", "NotIn", ("false",)),
                ),
            ),
        )

    @property
    def placement(self) -> Placement | None:
        if self.is_operator:
            return self.operand_placement("device-plugin")
        selector = self.values.get("nodeSelector")
        if selector is UNKNOWN:
            return None
        affinity = self.values.get("affinity")
        terms = required_terms(affinity)
        if terms is None and not mapping(affinity) and self.has_default_affinity:
            terms = tuple(
                (Requirement(key, "In", (value,)),) for key, value in _CHART_DEFAULT_AFFINITY_LABELS
            )
        return Placement(string_map(selector), terms)

    def overrides(self) -> dict[str, object]:
        """Top-level values that the chart passes as env vars, which beat every per-node config file."""
        overrides: dict[str, object] = {}
        if self.is_operator:
            # The ClusterPolicy's mig.strategy reaches the plugin as MIG_STRATEGY; "" leaves it out.
            strategy = dig(self.values, "mig", "strategy")
            if strategy is None:
                strategy = OPERATOR_DEFAULT_MIG_STRATEGY
            if isinstance(strategy, str) and strategy:
                overrides["migStrategy"] = strategy
            return overrides
        for name, kind in _HELM_FLAG_VALUES.items():
            value = self.values.get(name)
            since = _HELM_FLAG_SINCE.get(name)
            if value is None or (since and not device_plugin.version_at_least(self.plugin_version, since)):
                continue
            if kind == "bool":
                flag = boolean(value)
                if flag is not None:
                    overrides[name] = flag
            elif kind == "string_list" and isinstance(value, list):
                overrides[name] = tuple(v for v in value if isinstance(v, str))
            elif isinstance(value, str):
                overrides[name] = value
        if boolean(self.values.get("compatWithCPUManager")):
            overrides["passDeviceSpecs"] = True
        if self.has_default_affinity:  # the restructured chart (0.15+) always sets MPS_ROOT from `mps.root`
            root = dig(self.values, "mps", "root")
            overrides["mpsRoot"] = root if isinstance(root, str) else device_plugin.CHART_MPS_ROOT
        return overrides

    @property
    def image(self) -> str | None:
        """The image the device-plugin chart runs its plugin with: `image.repository:image.tag`, an empty
        tag being `v<appVersion>` (the chart's `fullimage`; its appVersion is its version). None where it
        cannot be told: a value unknown at preview, a chart of unknown version left to default its tag,
        and the operator's chart, whose operator names the plugin's image at run time."""
        if self.is_operator:
            return None
        image = self.values.get("image")
        repository = dig(image, "repository")
        tag = dig(image, "tag")
        if repository is UNKNOWN or tag is UNKNOWN:
            return None
        if not tag:  # the chart's appVersion is its own version (NVIDIA releases them together)
            chart_version = self.chart_version
            tag = f"v{chart_version.removeprefix('v')}" if chart_version and self.version else None
        if not isinstance(tag, str):
            return None
        return f"{text(repository) or plugin_pod.NVIDIA_PLUGIN_REPOSITORY}:{tag}"

    def config_map_name(self) -> str | None:
        """An external ConfigMap (`config.name`) instead of the chart-built one; the operator's chart
        builds one only with `devicePlugin.config.create`."""
        if self.is_operator and boolean(dig(self._plugin_values, "config", "create")):
            return None
        return text(dig(self._plugin_values, "config", "name")) or None

    def config_value(self, *path: str) -> Any:
        """A value under the chart's plugin `config` (`config.<path>`, the operator's `devicePlugin.config`)."""
        return dig(self._plugin_values, "config", *path)

    @property
    def config_default(self) -> str | None:
        """The key nodes without a (known) `nvidia.com/device-plugin.config` label get."""
        return text(self.config_value("default")) or None

    def config_source(self) -> ConfigSource | None:
        config_map = dig(self._plugin_values, "config", "data" if self.is_operator else "map")
        entries = mapping(config_map)
        if config_map is None or (config_map is not UNKNOWN and not entries):
            return None
        return ConfigSource(
            resource=self.resource,
            kind="Helm release",
            namespace=self.namespace,
            name=self.release,
            data={k: v for k, v in entries.items() if isinstance(v, str)},
            keys_known=config_map is not UNKNOWN and UNKNOWN not in entries.values(),
            annotations=string_map(self.values.get("podAnnotations")),
            plugin_version=self.plugin_version,
            overrides=self.overrides(),
        )


def is_device_plugin_release(res: Resource) -> bool:
    """NVIDIA's device-plugin chart or the GPU Operator's, which deploys the plugin too."""
    chart = text(res.props.get("chart")) or ""
    return res.type == HELM_RELEASE and bool(
        _DEVICE_PLUGIN_CHART.search(chart) or _OPERATOR_CHART.search(chart)
    )


def helm_plugin(res: Resource) -> HelmPlugin | None:
    if not is_device_plugin_release(res):
        return None
    return HelmPlugin(
        resource=res,
        namespace=text(res.props.get("namespace")) or "default",
        release=text(res.props.get("name")) or res.name,
        chart=text(res.props.get("chart")) or "",
        chart_version=text(res.props.get("version")) or None,
        values=mapping(res.props.get("values")),
    )


Workload = DaemonSetPlugin | HelmPlugin


def resource_config_source(res: Resource) -> ConfigSource | None:
    """The config files a single resource holds (for resource policies)."""
    if res.type == CONFIG_MAP:
        return config_map_source(res)
    plugin = helm_plugin(res)
    return plugin.config_source() if plugin is not None else None
