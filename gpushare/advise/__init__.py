"""The advise wing: which MIG or time-slicing layout serves a measured workload best (`gpushare advise`).

`layout_options` (every layout of one GPU model, ranked), `fleet` (a fleet file of services -> one pool
each), `pool_snippet` (the stack-file `pools:` entries a choice becomes).

A feature wing: imports the domain (core modules, `stack`, `mig`, `device_plugin`), never another feature
wing (`verify`, `offline`) or the CLI; the policy pack imports `layout_options` (tests/test_layering.py).
"""
