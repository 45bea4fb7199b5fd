"""The verify wing: the live cluster read (GET/LIST only) and judged against the stack's plan.

`expectations` (what the cluster should show, derived from the plan), `reader` (the bounded Kubernetes
client reads: nodes, pods, DaemonSets, ConfigMaps), `checks` (`run_checks`: the
nodes' `node_checks`, the device plugins' `plugin_checks`, the waiting workloads' `workload_checks`,
over `objects` as the API server returns them, into `report`'s findings and report), and the GPU
memory the measurement loop reads: `memory_series` (exporter pages and Prometheus answers -> readings),
`memory_exporters` (recognising exporter pods), `memory_observation`, `memory_source` (where memory is
read from), `memory_live` (reading it through the API server), `memory_budget` (the `memory-budget`
check) and `memory_peaks` (what `measure` can establish per pool).

A feature wing: imports the domain (core modules, `stack`, `mig`, `device_plugin`), never another feature
wing (`advise`, `offline`) or the CLI (tests/test_layering.py). Only `reader` and `memory_live` (the
Kubernetes client) and `objects` (its quantity parser) import the `kubernetes` package; the CLI imports
them inside `verify` and `measure` only.
"""
