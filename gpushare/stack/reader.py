"""The bounded reader of a stack file: size, encoding, YAML nesting and alias expansion are bounded
before anything is parsed or expanded, and every refusal is one line naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpushare import input_files, yaml_bounds
from gpushare.errors import ConfigError, UnreadableConfigError
from gpushare.stack.yaml import load_cli_yaml
from gpushare.suggest import did_you_mean

# Larger files are not stack files: refused before parsing (YAML parsing is not bounded otherwise).
MAX_STACK_FILE_BYTES = 4 * 1024 * 1024
# Values after alias expansion: a 2000-pool stack holds ~50 000; an alias bomb holds billions.
MAX_STACK_VALUES = 1_000_000


# Nothing a stack holds nests deeper (config > gpushare:pools > [i] > sharing > timeSlicing > ...); the
# JSON conversion and the models recurse per level.
MAX_STACK_DEPTH = 32
_TOO_DEEP = f"not valid YAML: nested more than {MAX_STACK_DEPTH} levels deep"
# What the reader's own words become in a stack file's line.
_STACK_FILE_WORDS = {
    "is a directory, not a file": "is a directory, not a stack file",
    f"larger than {MAX_STACK_FILE_BYTES // 1024 // 1024} MiB; not read": (
        f"larger than {MAX_STACK_FILE_BYTES // 1024 // 1024} MiB; not a stack file"
    ),
}


def _read_stack_document(path: Path) -> Any:
    source = path.name
    try:
        raw = input_files.read_bytes(path, MAX_STACK_FILE_BYTES)
    except input_files.InputFileError as err:
        if err.message == "no such file":
            raise UnreadableConfigError(
                f"no such stack file ({path}){_stacks_there(path)}", source=source
            ) from None
        raise UnreadableConfigError(_STACK_FILE_WORDS.get(err.message, err.message), source=source) from None
    try:
        text = raw.decode("utf-8-sig")  # the CLI strips a UTF-8 BOM too
    except UnicodeDecodeError as err:
        raise UnreadableConfigError(
            f"not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start}); save it as UTF-8",
            source=source,
        ) from None
    try:
        # Before the C parser: libyaml recurses per `[`, and 25 000 of them overflow its stack (a signal,
        # not an error).
        yaml_bounds.check_flow_depth(text)
        document = load_cli_yaml(text)
    except (yaml_bounds.YamlBoundError, yaml_bounds.YamlTooDeepError, RecursionError):
        raise ConfigError(_TOO_DEEP, source=source) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"not valid YAML: {yaml_bounds.yaml_problem(err)}", source=source) from None
    problem = yaml_bounds.shape_problem(document, max_values=MAX_STACK_VALUES, max_depth=MAX_STACK_DEPTH)
    if problem is not None:
        # PyYAML shares aliased objects, but everything after it (JSON, validation) would expand them.
        raise ConfigError(problem if problem.startswith("expands") else _TOO_DEEP, source=source)
    return document


def _stacks_there(path: Path) -> str:
    """`; did you mean 'prod'? (stacks in DIR: dev, prod, staging)` for a stack file that does not exist."""
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    try:
        stacks = sorted(
            found.name.removeprefix("Pulumi.").removesuffix(".yaml")
            for found in path.parent.glob("Pulumi.*.yaml")
        )
    except OSError:
        return ""
    if not stacks:
        return f"; no Pulumi.<stack>.yaml in {path.parent} (--dir names the project directory)"
    return f"{did_you_mean(stack, stacks)} (stacks in {path.parent}: {', '.join(stacks)})"
