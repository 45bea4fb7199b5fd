"""gpushare's CrossGuard rules (`gpushare_policies.rules`), imported by the pack entry point
(`policies/__main__.py`). The CLI runs the pack with its directory first on `sys.path`, so this package is
found beside `__main__.py` wherever the pack is copied or published; the rules import nothing else from
outside the pack but installed distributions (`gpushare`, `pulumi-policy`: requirements.txt)."""
