"""The stack wing: `Pulumi.<stack>.yaml` as frozen, typed models, read once and refused in one line.

Holds the stack-file model and everything that judges a stack file before anything runs: `yaml` (YAML as
the Pulumi CLI reads it), `kube_syntax` and `tke_limits` (Kubernetes and TKE syntax and limits),
`stack_config` (the models, loading and messages; split by concern in the following commits) and
`edit` (`measure --write`: measurements written back, comments and order kept).

Part of the domain: imports the core modules (`gpushare/*.py`) and the `mig` wing's geometry, never a
feature wing (`advise`, `verify`, `offline`) or the CLI (tests/test_layering.py).
"""
