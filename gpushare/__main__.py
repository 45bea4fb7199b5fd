import sys

try:
    from gpushare.cli import main
except KeyboardInterrupt:  # Ctrl-C while the CLI itself is still being imported: one line, no traceback
    sys.stderr.write("interrupted (SIGINT)\n")
    sys.exit(130)

sys.exit(main())
