"""Benchmarks (`python -m bench`): gpushare's offline render and check against the Pulumi SDK's own floor, and
`verify` and `advise --fleet` against what a user would otherwise pay for the same answer (bench/live.py)."""
