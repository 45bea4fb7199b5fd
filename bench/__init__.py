"""Benchmarks of gpushare's offline render and check against the Pulumi SDK's own floor (`python -m bench`)."""
