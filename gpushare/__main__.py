"""`python -m gpushare` and the `gpushare` console script (pyproject.toml: gpushare.__main__:run)."""

import os
import signal
import sys
from typing import NoReturn

# Before anything imports grpc (render's Pulumi SDK, check's analyzer client): gRPC core logs connection
# teardown (GOAWAY) at INFO, noise in the commands' output. Errors still print; a user's setting wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


def _terminated(signum: int, frame: object) -> None:
    # Until a command installs its own handler (render and check unwind to remove temporary folders),
    # SIGTERM ends the process with one line instead of the silent default exit 143.
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), "gpushare")
    sys.stderr.write(f"{command}: terminated (SIGTERM); nothing was written\n")
    raise SystemExit(128 + signal.SIGTERM)


signal.signal(signal.SIGTERM, _terminated)


def run() -> NoReturn:
    try:
        from gpushare.cli.main import main
    except KeyboardInterrupt:  # Ctrl-C while the CLI itself is still being imported: one line, no traceback
        sys.stderr.write("interrupted (SIGINT)\n")
        sys.exit(130)
    except ModuleNotFoundError as err:
        # `pip install gpushare` is the core the policy pack needs; the command line is the `all` extra.
        if (err.name or "").split(".")[0] == "gpushare":
            raise
        sys.stderr.write(
            f"gpushare: the command line needs gpushare's optional dependencies ({err.name} is not installed): "
            "pip install 'gpushare[all]'\n"
        )
        sys.exit(2)
    sys.exit(main())


if __name__ == "__main__":
    run()
