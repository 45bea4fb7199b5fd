"""gpushare's CrossGuard policy pack: the rules (`policies.rules`) and the pack entry point (`__main__`)."""
