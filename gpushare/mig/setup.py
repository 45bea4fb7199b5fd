"""How a MIG pool's nodes get their partitions without a MIG manager: a boot-time systemd unit, installed
by the script TKE runs on a new node; and the pool's layout as a mig-parted config.

TKE runs a node pool's pre-start script only on existing instances added to the pool, and its user
script after the Kubernetes components start (inferred: on every node the pool creates); GPU
instances do not survive a reboot; MIG mode may stay pending until a GPU reset or a reboot; the driver
may not be there yet when either script runs. So neither script touches the GPUs: both install (idempotently) the unit
`gpushare-mig.service`, ordered before the kubelet, whose script (`node_files/gpushare-mig-setup.sh`,
a real file for review and shellcheck) waits for the driver, enables MIG mode and creates the layout by
profile name at every boot.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from importlib import resources

from gpushare.catalog import GpuModel
from gpushare.mig import parted as mig_parted
from gpushare.mig.geometry import creation_orders
from gpushare.mig.parted import MigConfigEntry, MigPartedConfig

UNIT_NAME = "gpushare-mig.service"
SETUP_SCRIPT_PATH = "/usr/local/sbin/gpushare-mig-setup"
UNIT_PATH = f"/etc/systemd/system/{UNIT_NAME}"
ENV_PATH = "/etc/gpushare/mig.env"
# TKE installs the driver at a new node's first boot, which takes 15-25 minutes: wait up to 30.
DRIVER_WAIT_ATTEMPTS = 180
DRIVER_WAIT_SECONDS = 10
_HEREDOC_END = "GPUSHARE_EOF"
_EMBEDDED = re.compile(
    rf"^cat >\"\$root(?P<path>/[^\"]+)\" <<'{_HEREDOC_END}'\n(?P<text>.*?)^{_HEREDOC_END}$", re.M | re.S
)


def _node_file(name: str) -> str:
    return (resources.files("gpushare.mig") / "node_files" / name).read_text(encoding="utf-8")


def mig_env(gpu: GpuModel, layout: Mapping[str, int], config_name: str) -> str:
    orders = creation_orders(gpu, layout)
    values = {
        "MIG_CONFIG_NAME": config_name,
        "MIG_PROFILES": ",".join(orders[0]),
        # Every order to try, one after the other (the driver picks placements itself).
        "MIG_PROFILE_ORDERS": " ".join(",".join(order) for order in orders),
        "DRIVER_WAIT_ATTEMPTS": str(DRIVER_WAIT_ATTEMPTS),
        "DRIVER_WAIT_SECONDS": str(DRIVER_WAIT_SECONDS),
    }
    return "".join(f"{key}={shlex.quote(value)}\n" for key, value in values.items())


def node_files(gpu: GpuModel, layout: Mapping[str, int], config_name: str) -> dict[str, str]:
    """Absolute path on the node -> content: the layout, the boot-time script and its unit."""
    return {
        ENV_PATH: mig_env(gpu, layout, config_name),
        SETUP_SCRIPT_PATH: _node_file("gpushare-mig-setup.sh"),
        UNIT_PATH: _node_file(UNIT_NAME),
    }


def pre_start_script(gpu: GpuModel, layout: Mapping[str, int], config_name: str) -> str:
    """The script TKE runs on a new node (pre-start and user script alike): installs and starts the unit.

    `$GPUSHARE_ROOT` (empty on a node) lets a test install into a temporary directory.
    """
    files = node_files(gpu, layout, config_name)
    lines = [
        "#!/bin/bash",
        f"# gpushare: install {UNIT_NAME}, which gives every {gpu.key} of this node the MIG layout "
        f"{config_name} before the kubelet starts, at every boot. Safe to run more than once.",
        "set -euo pipefail",
        'root="${GPUSHARE_ROOT:-}"',
        'install -d "$root/etc/gpushare" "$root/usr/local/sbin" "$root/etc/systemd/system"',
    ]
    for path, text in files.items():
        if _HEREDOC_END in text:
            raise ValueError(f"{path} contains the here-document delimiter {_HEREDOC_END}")
        lines += [f"cat >\"$root{path}\" <<'{_HEREDOC_END}'", text.rstrip("\n"), _HEREDOC_END]
    lines += [
        f'chmod 0755 "$root{SETUP_SCRIPT_PATH}"',
        "systemctl daemon-reload",
        f"systemctl enable {UNIT_NAME}",
        "# Start it now as well: it waits for the driver in the background, and a kubelet starting",
        "# meanwhile waits for it (the unit is ordered before kubelet.service).",
        f"systemctl start --no-block {UNIT_NAME}",
        f'echo "gpushare: installed {UNIT_NAME} (journalctl -u {UNIT_NAME} shows what it does)"',
        "",
    ]
    return "\n".join(lines)


def embedded_files(script: str) -> dict[str, str]:
    """The files a `pre_start_script` writes (path -> content), for review next to the script."""
    return {match["path"]: match["text"] for match in _EMBEDDED.finditer(script)}


def mig_parted_config_text(layout: Mapping[str, int], config_name: str) -> str:
    return mig_parted.render(mig_parted.single_layout_config(config_name, layout))


def merged_mig_parted_config_text(layouts: Mapping[str, Mapping[str, int]], disabled_name: str) -> str:
    """ONE mig-parted file for the GPU Operator's MIG manager (it mounts exactly one ConfigMap): every
    layout under its `nvidia.com/mig.config` name, sorted, plus `disabled_name` (MIG off), which the
    manager applies to MIG-capable nodes that carry no label."""
    configs: dict[str, tuple[MigConfigEntry, ...]] = {disabled_name: (MigConfigEntry(mig_enabled=False),)}
    for name in sorted(layouts):
        configs.update(mig_parted.single_layout_config(name, layouts[name]).mig_configs)
    return mig_parted.render(MigPartedConfig(mig_configs=configs))
