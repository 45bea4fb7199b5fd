"""A stand-in for a live Kubernetes cluster, shared by the tests (`tests/`) and the benchmarks (`bench/`).

`apiserver`: a read-only API server on 127.0.0.1 reached through a kubeconfig; `objects`: the API
objects it serves, shaped as a real cluster holds them; `gpu_pages`: GPU exporters' pods and the metrics
pages they serve through the pod proxy. Standard library only, and nothing of `gpushare`:
the tool under test must not shape its own stand-in.
"""
