"""What a `needle` command does once its arguments are parsed, wherever it runs.

`run` looks the command up in the table (`needle.commands.table`), builds its request from the parsed arguments
(`request_of`), calls the facade (`Needle` in-process, `RemoteNeedle` through an owner's routes) and prints the
result with the command's renderer; `failed` turns an exception into the one line and exit code the CLI shows.
The `needle` command (`needle.shells.cli`) calls them in its own process; an index owner calls them for a thin
client (`needle.owner.routes`), with the client's parsed arguments and an output buffer of the client's own.
Below both, so that no server module imports the shell that starts it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from needle.commands.table import Command, command_of
from needle.core import requests

if TYPE_CHECKING:
    from needle.facade.interface import NeedleInterface


def request_of(command: Command, args: argparse.Namespace) -> Any:
    """
    A command's request, from the parsed arguments named as its fields: the words of a text argument joined by
    spaces, the CLI's `--set COMPONENT.PARAM=VALUE` read into the request's `set`.

    :returns: The request, or `None` for a command that takes none.
    :raises ValueError: When a value breaks its field's declaration (one line naming the field and its limit).
    """
    if command.request is None:
        return None
    values: dict[str, Any] = {}
    for param in requests.params(command.request):
        if param.cli and hasattr(args, param.name):
            value = getattr(args, param.name)
            if param.kind is str and isinstance(value, list):
                value = " ".join(value)
            values[param.name] = value
    if "set" in requests.named(command.request) and getattr(args, "set", None):
        values["set"] = _assignments(args.set)
    return command.request(**values)


def _assignments(values: list[str]) -> dict[str, Any]:
    """`COMPONENT.PARAM=VALUE` strings as overrides."""
    from needle.core.settings import parse_assignments

    pairs: dict[str, Any] = {}
    for value in values:
        pairs.update(parse_assignments(value))
    return pairs


def run(
    args: argparse.Namespace,
    needle: NeedleInterface,
    out: IO[str] | None = None,
    progress: Callable[[Any], None] | None = None,
) -> int:
    """
    Run a parsed command on a facade and print its output.

    :param args: The parsed command line.
    :param needle: `Needle`, or `RemoteNeedle`.
    :param out: Where the output goes (standard output when `None`; the owner passes each client's buffer).
    :param progress: Called with an index run's report after each batch, or `None`.
    :returns: The exit code.
    """
    command = command_of(args)
    request = request_of(command, args)
    if command.handler is not None:
        result = command.handler(needle, request, args, progress)
    else:
        assert command.method is not None, f"{command.name} names neither a handler nor a facade method"
        method = getattr(needle, command.method)
        result = method(request) if request is not None else method()
    assert command.render is not None, f"{command.name} has no renderer"
    print(command.render(result, args), file=out or sys.stdout)
    return command.exit_code(result) if command.exit_code is not None else 0


def failed(args: argparse.Namespace, error: BaseException, err: IO[str] | None = None) -> int:
    """
    Report a command's failure as one line and give its exit code (`needle.core.errors`).

    :param args: The parsed command line.
    :param error: What the command raised.
    :param err: Where the line goes (standard error when `None`).
    :returns: The exit code.
    """
    from needle.commands.failures import classify

    failure = classify(error)
    if failure.exit_code == 130:
        return 130
    import logging  # only when a command failed: a command sent to an owner imports no `logging` otherwise

    logging.getLogger(__name__).debug("needle %s failed", args.command, exc_info=error)
    print(f"error: {' '.join(failure.message.split())}", file=err or sys.stderr)
    return failure.exit_code


__all__ = ["failed", "request_of", "run"]
