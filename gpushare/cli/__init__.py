"""The command line, on top of everything: the only place that parses arguments and prints.

`main` (the parser and the one exit-code convention; `python -m gpushare` and the `gpushare` console
script run it), one module per command (`catalog`, `validate`, `tune`, `plan`, `verify`, `render`,
`check`, `advise`, `measure`), each with its `add_parser`, and `scan` (the scanner gate `make ci-stacks`
runs as `python -m gpushare.cli.scan`); and what several share: `arguments` (argument
types, `--stack/--dir`, `--kubeconfig/--context`, chart and GPU-memory options), `offline_run` (how
`render` and `check` run the offline runner), `config_size` (the warning of a stack too large for the
policy pack's environment), `config_manifests` (the files and ConfigMap manifests `validate` judges).

May import anything in `gpushare`; nothing outside this package (and `gpushare/__main__.py`) imports it,
by an import or by name (tests/test_layering.py). The Pulumi SDKs (the offline runner) and the
Kubernetes client (the verify wing's reader) are imported inside the commands that need them.
"""
