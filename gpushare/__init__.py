"""gpushare's pure domain: GPU facts, device-plugin and mig-parted config rules, tuning, MIG geometry,
the stack-config model and the command line. Nothing in this package imports Pulumi."""
