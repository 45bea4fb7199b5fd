"""`python -m gpushare validate device-plugin-config|mig-config FILE...`: one verdict per file or data key.

`device-plugin-config` reads each file (bytes as go-yaml decodes them, or a Kubernetes manifest's
ConfigMaps, each data value judged as a config file: `gpushare.cli.config_manifests`) and prints one verdict
per file or data key; the verdicts themselves come from `gpushare.device_plugin.decode.parse`, after
refusing files that are no device-plugin config at all; `mig-config`'s from `gpushare.mig.parted`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import yaml

from gpushare import catalog, device_plugin
from gpushare.catalog import GpuModel
from gpushare.cli.arguments import add_command, gpu_model
from gpushare.cli.config_manifests import shown as shown_name
from gpushare.cli.config_manifests import validate_files
from gpushare.device_plugin.decode import parse
from gpushare.device_plugin.go_compat import go_fold
from gpushare.device_plugin.model import MPS_ERA, PLUGIN_VERSIONS, DevicePluginConfigError, version_at_least
from gpushare.errors import GpushareError
from gpushare.input_files import decode_text
from gpushare.mig.parted import MigPartedConfigError, check_fits
from gpushare.mig.parted import parse as parse_mig_config
from gpushare.yaml_bounds import AliasRecordingComposer, YamlBoundError, YamlTooDeepError, load_first_document


def _decode_file_bytes(data: bytes, path: str) -> str:
    """go-yaml accepts UTF-8 (optionally with a BOM) and UTF-16 with a BOM."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DevicePluginConfigError(
            "error converting YAML to JSON: yaml: invalid leading UTF-8 octet"
        ) from exc


class _FirstDocumentLoader(AliasRecordingComposer, yaml.SafeLoader):
    """The first document, bounded like the plugin's own reader (gpushare.yaml_bounds)."""


# The config's top-level fields in every plugin release gpushare models (`imex` from 0.17.1 on).
_CONFIG_FIELDS = ("version", "flags", "resources", "sharing", "imex")


def _refuse_other_documents(text: str) -> None:
    """A mapping none of whose keys is a config field is another file (Helm values, a mig-parted config):
    the plugin would ignore every key and start unshared, so calling it valid would mislead."""
    try:
        document = load_first_document(_FirstDocumentLoader, text)
    except (yaml.YAMLError, YamlBoundError, YamlTooDeepError, ValueError, RecursionError):
        return  # the plugin's own reader gives the verdict
    if not isinstance(document, dict) or not document:
        return
    keys = [shown_name(key) for key in document]
    if "mig-configs" in keys:
        raise DevicePluginConfigError(
            "a mig-parted config (it has mig-configs), not a device-plugin config: "
            "`validate mig-config` judges it"
        )
    if any(go_fold(key) in {go_fold(name) for name in _CONFIG_FIELDS} for key in keys):
        return
    shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
    raise DevicePluginConfigError(
        f"not a device-plugin config: none of its top-level keys ({shown}) is one of "
        f"{', '.join(_CONFIG_FIELDS)} (a Helm values file or another program's config? validate the "
        "ConfigMap `render` writes, or the values' config.map entries as files)"
    )


def _validate_text(
    text: str, where: str, plugin_version: str, overrides: Mapping[str, object], out: TextIO, err: TextIO
) -> int:
    try:
        _refuse_other_documents(text)
        result = parse(text, plugin_version, overrides=overrides)
    except DevicePluginConfigError as exc:
        out.write(f"{where}: invalid: {exc}\n")
        return 1
    except GpushareError as exc:  # nesting beyond what is checked: no verdict
        err.write(f"{where}: error: {exc}\n")
        return 2
    warnings = list(result.warnings)
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        warnings.append("empty: the plugin starts with its defaults (no sharing)")
    for warning in warnings:
        err.write(f"{where}: warning: {warning}\n")
    out.write(f"{where}: valid\n")
    return 0


def run_validate_cli(
    paths: Sequence[str], plugin_version: str, out: TextIO, err: TextIO, *, mps_root: str | None = None
) -> int:
    """`gpushare validate device-plugin-config FILE...`: one line per file on `out` (`FILE: valid` or
    `FILE: invalid: <field>: <reason>`), warnings and errors on `err`. A Kubernetes manifest is read for its
    ConfigMaps, each `data` value judged as a config file (`FILE: data.<key>: valid`). `mps_root` judges
    files as NVIDIA's charts run them (they set MPS_ROOT). Exit 0 all valid, 1 any invalid, 2 any
    unreadable, too big or too deeply nested (or an unknown plugin version)."""
    if plugin_version not in PLUGIN_VERSIONS:
        err.write(
            f"error: unsupported device-plugin version {plugin_version!r}; known: {', '.join(PLUGIN_VERSIONS)}\n"
        )
        return 2
    overrides: dict[str, object] = {}
    if mps_root is not None:
        if not version_at_least(plugin_version, MPS_ERA):
            err.write(f"error: --mps-root: plugin {plugin_version} has no MPS (0.17.1 and later do)\n")
            return 2
        overrides["mpsRoot"] = mps_root

    def judge(text: str, where: str, out: TextIO, err: TextIO) -> int:
        return _validate_text(text, where, plugin_version, overrides, out, err)

    return validate_files(paths, "device-plugin config", _decode_file_bytes, judge, out, err)


NO_CONFIGS = (
    "no mig-configs: mig-parted reads the file but has no config to select "
    "(`nvidia-mig-parted assert --valid-config` and `apply` fail: selected mig-config not present)"
)


def run_mig_validate_cli(paths: Sequence[str], gpu_key: str | None, out: TextIO, err: TextIO) -> int:
    """`validate mig-config FILE... [--gpu MODEL]`: one `FILE: valid|invalid: reason` line per file, or per
    ConfigMap data key of a manifest (the mig-parted ConfigMap `render` writes, a `kubectl get -o yaml` List).

        "valid" means what `nvidia-mig-parted assert --valid-config` accepts: the file parses AND names at least
        one config (an empty file, or `version: v1` alone, parses but leaves the MIG manager nothing to select).
        Exit status: 0 all valid, 1 some invalid, 2 a file could not be read (missing, a directory, over 1 MiB,
        not UTF-8 text, nested too deeply to check) or the GPU model is unknown.
    """
    gpu: GpuModel | None = None
    if gpu_key is not None:
        try:
            gpu = catalog.gpu(gpu_key)
        except GpushareError as exc:
            print(f"--gpu: {exc}", file=err)
            return 2
    if not paths:
        print("no mig-parted config files given", file=err)
        return 2

    def judge(text: str, where: str, out: TextIO, err: TextIO) -> int:
        try:
            config = parse_mig_config(text)
            if not config.mig_configs:
                raise MigPartedConfigError(NO_CONFIGS)
            if gpu is not None:
                check_fits(config, gpu)
        except MigPartedConfigError as exc:
            print(f"{where}: invalid: {exc}", file=out)
            return 1
        except GpushareError as exc:  # too deeply nested to check: no verdict
            print(f"{where}: error: {exc}", file=err)
            return 2
        print(f"{where}: valid", file=out)
        return 0

    return validate_files(paths, "mig-parted config", decode_text, judge, out, err)


def cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    if args.kind == "device-plugin-config":
        return run_validate_cli(args.files, args.plugin_version, out, sys.stderr, mps_root=args.mps_root)
    return run_mig_validate_cli(args.files, args.gpu, out, sys.stderr)


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "validate",
        "validate device-plugin or mig-parted config files",
        "Judge config files as NVIDIA's programs read them: plain files, ConfigMap manifests (each data key "
        "a config file) and `kubectl get -o yaml` Lists. A file that is not a config of that kind (Helm "
        "values, a Deployment) is invalid.",
    )
    kinds = p.add_subparsers(
        dest="kind", required=True, metavar="KIND", help="which kind of config the files hold"
    )
    k = add_command(
        kinds,
        "device-plugin-config",
        "NVIDIA k8s-device-plugin config files",
        "One verdict per file or ConfigMap data key: `valid` exactly when the plugin version would start "
        "with the file; warnings for what it accepts but ignores.",
    )
    k.add_argument("files", nargs="+", metavar="FILE", help="config files or manifests holding ConfigMaps")
    k.add_argument(
        "--plugin-version",
        choices=device_plugin.PLUGIN_VERSIONS,
        default="0.14.5",
        help="the plugin release to judge as (default: 0.14.5, TKE's)",
    )
    k.add_argument(
        "--mps-root",
        metavar="PATH",
        help=f"MPS_ROOT as NVIDIA's charts set it (their default: {device_plugin.CHART_MPS_ROOT})",
    )
    k.set_defaults(run=cmd_validate)
    k = add_command(
        kinds,
        "mig-config",
        "NVIDIA mig-parted config files",
        "One verdict per file or ConfigMap data key: `valid` when `nvidia-mig-parted assert --valid-config` "
        "would accept it (and every layout fits --gpu when given).",
    )
    k.add_argument("files", nargs="+", metavar="FILE", help="config files or manifests holding ConfigMaps")
    k.add_argument("--gpu", type=gpu_model, help="every mig-devices entry must also fit this GPU model")
    k.set_defaults(run=cmd_validate)
