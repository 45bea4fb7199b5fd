"""gpushare, the tool (docs/architecture.md): the domain (the core modules here: GPU catalog, tuning,
plan, plugin configs and pods, errors; and the wings `stack`, `mig`, `device_plugin`: no Pulumi), the
feature wings (`advise`, `verify`: the live readers, `offline`: the runner of Pulumi programs and policy
packs) and, on top, the command line (`gpushare.cli`), which nothing else imports."""
