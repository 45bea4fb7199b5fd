"""`python -m gpushare`: GPU sharing on TKE as reviewed code, from a shell — the GPU catalog, the tuning
rule, MIG layout advice, the capacity plan of a stack, validators for NVIDIA's config files, an offline
render and policy check of the Pulumi program, and a read-only check of the live cluster.

Bad input ends in one line on stderr naming the file and key and what to do, never a traceback.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from typing import TextIO

from gpushare.cli import advise, catalog, check, init, measure, plan, render, tune, validate, verify
from gpushare.cli.offline_run import Terminated
from gpushare.errors import EXIT_CODES_HELP, GpushareError
from gpushare.project_dir import NoProjectError, project_dir


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gpushare",
        description=__doc__,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="python -m gpushare COMMAND --help for its own"
    )

    catalog.add_parser(sub)
    validate.add_parser(sub)
    tune.add_parser(sub)
    plan.add_parser(sub)
    verify.add_parser(sub)
    render.add_parser(sub)
    check.add_parser(sub)
    advise.add_parser(sub)
    measure.add_parser(sub)
    init.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if "dir" in args:  # the commands that work on a Pulumi project
            args.dir = str(project_dir(args.dir))
        code: int = args.run(args, out or sys.stdout)
        return code
    except NoProjectError as err:
        sys.stderr.write(f"{err}\n")
        return 2
    except GpushareError as err:
        sys.stderr.write(f"{err}\n")
        return err.exit_code
    except KeyboardInterrupt:
        sys.stderr.write(f"{args.command}: interrupted (SIGINT); nothing was written\n")
        return 128 + signal.SIGINT
    except Terminated:
        sys.stderr.write(f"{args.command}: terminated (SIGTERM); nothing was written\n")
        return 128 + signal.SIGTERM
    except BrokenPipeError:
        # `python -m gpushare ... | head`: the reader left; not an error worth a traceback.
        sys.stderr.close()
        return 0
