import os
import sys

# Before anything imports grpc (render's Pulumi SDK, check's analyzer client): gRPC core logs connection
# teardown (GOAWAY) at INFO, noise in the commands' output. Errors still print; a user's setting wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

try:
    from gpushare.cli import main
except KeyboardInterrupt:  # Ctrl-C while the CLI itself is still being imported: one line, no traceback
    sys.stderr.write("interrupted (SIGINT)\n")
    sys.exit(130)

sys.exit(main())
