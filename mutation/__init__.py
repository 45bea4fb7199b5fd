"""Mutation testing of gpushare's decision logic (`make mutation`; docs/mutation-testing.md)."""
