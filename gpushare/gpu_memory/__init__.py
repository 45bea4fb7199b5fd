"""GPU memory as the cluster's exporters report it: the `memory-budget` check of `verify` and `measure`.

`series` turns exporter pages and Prometheus answers into per-GPU and per-pod readings; `exporters`
recognises exporter pods; `budget` compares readings with the tuned plan; `peaks` finds what `measure`
can establish; `live` reads it all through the API server (GET only); `stack_edit` writes measurements
back into a stack file.
"""
