"""``recjudge``: the package's one command (``[project.scripts]``), a subcommand per front door of the library.

    recjudge book ...          = python -m recjudge_utils.book ...               (run, plan, build, export, replay, ...)
    recjudge data ...          = python -m recjudge_utils.data ...               (list, fetch, info, export-split, ...)
    recjudge labels ...        = python -m recjudge_utils.annotation ...         (export a sample for people to label)
    recjudge profiles ...      = python -m recjudge_utils.judge.profiles_cli ... (check profiles, write their schema)
    recjudge build-judge ...   = python -m recjudge_utils.judge.llama_build ...  (the embedded judge's server and model)

A subcommand is its module's own command line (the module's ``main(argv, prog)``), so both forms take the same
options and give the same messages and exit codes; only the name in the usage line differs. The module is imported
when its subcommand is chosen, not before: ``recjudge data`` in a base install needs none of the book's packages.

Holds :data:`SUBCOMMANDS` (name -> module and one line of help) and :func:`main`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NamedTuple

from recjudge_utils import __version__
from recjudge_utils._startup import skip_iri_format_check

__all__ = ["PROG", "SUBCOMMANDS", "Subcommand", "main"]

PROG = "recjudge"


class Subcommand(NamedTuple):
    module: str  # the module whose main(argv, prog) is the subcommand, and whose python -m form is the same command
    help: str  # its line in ``recjudge --help``


SUBCOMMANDS: dict[str, Subcommand] = {
    "book": Subcommand("recjudge_utils.book.cli", "runs and the book: run, plan, build, export, replay, report, ..."),
    "data": Subcommand("recjudge_utils.data.__main__", "datasets: list, fetch, info, check, export-split, example"),
    "labels": Subcommand("recjudge_utils.annotation.__main__", "export a sample of a run's judgments to label"),
    "profiles": Subcommand("recjudge_utils.judge.profiles_cli", "check judge profiles, write their JSON Schema"),
    "build-judge": Subcommand("recjudge_utils.judge.llama_build", "build the embedded judge's server, fetch its model"),
}


def _parser() -> argparse.ArgumentParser:
    """The top level only: what ``recjudge --help`` shows, and the error for a missing or unknown subcommand."""
    # the commands are listed by hand: argparse's own list mis-measures an indented name as long as build-judge and
    # wraps every line under it
    width = max(map(len, SUBCOMMANDS))
    commands = "\n".join(f"  {name:<{width}}  {subcommand.help}" for name, subcommand in SUBCOMMANDS.items())
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage="%(prog)s [-h] [--version] COMMAND ...",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="LLM-as-a-judge evaluation of recommender systems: the commands of recjudge_utils.",
        epilog=f"commands:\n{commands}\n\n'{PROG} COMMAND --help' gives a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, help=argparse.SUPPRESS)
    for name in SUBCOMMANDS:
        sub.add_parser(name, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``recjudge COMMAND ...``; returns the command's exit code (argparse exits itself on --help and misuse)."""
    if argv is None:  # the console script's own process: nothing has imported jsonschema yet
        skip_iri_format_check()
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        # the rest goes to the module's own parser untouched: its options, its help, its errors and exit codes
        module = importlib.import_module(SUBCOMMANDS[args[0]].module)
        return int(module.main(args[1:], prog=f"{PROG} {args[0]}"))
    parser = _parser()
    parsed = parser.parse_args(args)  # --help, --version, no command or an unknown one: argparse prints and exits
    parser.error(f"the command comes first: {PROG} {parsed.command} ...")  # e.g. after a '--'
