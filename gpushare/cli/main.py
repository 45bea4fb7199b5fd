"""`python -m gpushare`: GPU sharing on TKE as reviewed code, from a shell — the GPU catalog, the tuning
rule, MIG layout advice, the capacity plan of a stack, validators for NVIDIA's config files, an offline
render and policy check of the Pulumi program, and a read-only check of the live cluster.

Bad input ends in one line on stderr naming the file and key and what to do, never a traceback.
"""

from __future__ import annotations

import argparse
import difflib
import re
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


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:  # argparse keeps its subcommands there; it has no public accessor
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(name)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


def _unknown_option(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """The first option the command does not have, said with the nearest one it has. argparse would
    report a typo of a required option as that option missing (`--stak prod`: "--stack is required"),
    or print the top-level usage for another."""
    command: list[str] = []
    current = parser
    for index, token in enumerate(argv):
        if token == "--":
            return None
        if not token.startswith("-") or token == "-" or re.fullmatch(r"-[0-9.]+", token):
            nested = _subparser(current, token) if token else None
            if nested is not None and (not command or argv[index - 1] == command[-1]):
                command.append(token)
                current = nested
            continue
        option = token.split("=", 1)[0]
        known = [o for action in current._actions for o in action.option_strings]
        if option in known:
            continue
        if option.startswith("--") and len([o for o in known if o.startswith(option)]) == 1:
            continue  # an abbreviation argparse accepts
        nearest = difflib.get_close_matches(option, known, n=1, cutoff=0.6)
        where = " ".join(["python -m gpushare", *command])
        hint = f"; did you mean {nearest[0]}?" if nearest else f"; see {where} --help"
        return f"{where}: unknown option {option}{hint}"
    return None


_STACK_FILE = re.compile(r"(?:.*/)?Pulumi\.(?P<name>[^/]+)\.ya?ml")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    unknown = _unknown_option(parser, given)
    if unknown:
        sys.stderr.write(f"{unknown}\n")
        return 2
    args = parser.parse_args(given)
    stack_file = _STACK_FILE.fullmatch(str(getattr(args, "stack", "") or ""))
    if stack_file:
        sys.stderr.write(
            f"--stack {args.stack}: --stack takes the stack's name, not its file: --stack {stack_file['name']}\n"
        )
        return 2
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
