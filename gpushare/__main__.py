"""`python -m gpushare` and the `gpushare` console script (pyproject.toml: gpushare.__main__:run)."""

import os
import sys
from typing import NoReturn

# Before anything imports grpc (render's Pulumi SDK, check's analyzer client): gRPC core logs connection
# teardown (GOAWAY) at INFO, noise in the commands' output. Errors still print; a user's setting wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


def run() -> NoReturn:
    try:
        from gpushare.cli import main
    except KeyboardInterrupt:  # Ctrl-C while the CLI itself is still being imported: one line, no traceback
        sys.stderr.write("interrupted (SIGINT)\n")
        sys.exit(130)
    sys.exit(main())


if __name__ == "__main__":
    run()
