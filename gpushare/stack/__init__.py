"""The stack wing: `Pulumi.<stack>.yaml` as frozen, typed models, read once and refused in one line.

One concern per module:
- `model`: the models (`StackConfig`, `Pool`, the sharing modes, versions) and their cross-field rules;
- `plugin_settings`: the `sharing.devicePlugin` models (mode, chart and operator pins, TKE's plugin);
- `fields`: the field rules both share (ASCII syntax checks, `measuredAt`'s calendar, the base model);
- `loading`: config values -> `StackConfig` (`from_config_values`, `load_stack`, `load_stack_file`);
- `reader`: the bounded reading of a stack file (size, encoding, nesting, alias expansion);
- `credentials` and `placeholders`: values only the user may supply (secrets, `FILL-IN`s);
- `messages`: pydantic's errors as one line per key path;
- `yaml`: YAML as the Pulumi CLI reads it; `kube_syntax` and `tke_limits`: Kubernetes and TKE syntax
  and limits; `edit`: `measure --write`, measurements written back with comments and order kept.

Part of the domain: imports the core modules (`gpushare/*.py`) and the `mig` wing's geometry, never a
feature wing (`advise`, `verify`, `offline`) or the CLI (tests/test_layering.py).
"""
