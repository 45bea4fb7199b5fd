"""Offline layer: runs Pulumi programs (and policy packs) without the CLI, an engine or a cloud.

Import the submodules directly (``from gpushare.offline.mock_run import run_program``); nothing is imported
eagerly here, so importing one submodule does not drag in the others' dependencies.
"""
