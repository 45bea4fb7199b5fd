"""The MIG wing: how an NVIDIA GPU is cut into MIG instances and how a node is set up for it.

`geometry` (which profiles fit a GPU, in which placement order), `parted` (NVIDIA mig-parted's config
file: model, reader, fit; `validate mig-config` prints its verdicts in `gpushare.cli.validate`), `setup`
(the boot-time unit and script every MIG node of the `daemonsets` and `helm` modes runs; its files are
`node_files/`, shipped as package data).

Part of the domain: imports the core modules (the catalog, `input_files`, `yaml_bounds`), never a
feature wing (`advise`, `verify`, `offline`) or the CLI (tests/test_layering.py).
"""
