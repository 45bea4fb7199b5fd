"""gpushare, the tool: its pure domain (GPU facts, device-plugin and mig-parted config rules, tuning, MIG
geometry, the stack-config model: no Pulumi), the live readers (verify), the offline runner
(`gpushare.offline`, which runs Pulumi programs and policy packs without the CLI) and, on top, the command
line (`gpushare.cli` and the `*_cli` modules), which nothing else imports."""
