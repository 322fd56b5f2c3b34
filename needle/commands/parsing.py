"""The `needle` command line's parser, built from the command table (`needle.commands.table`).

Each command's flags are its request's fields (`needle.core.requests`: flag, type, help and limits from each
field's declaration) and the entry's own options (`--json`, `--pipeline`...); a group (`collection`, `context`,
`owner`) gets one sub-command per action. A command sent to an owner builds only its own parser: building all of
them takes such a command a fifth of its start-up. The standard library only.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Sequence
from typing import Any

from needle.commands.table import COMMANDS, GROUPS
from needle.core import requests

# A command whose parser another package builds (`eval`: `needle.evaluation.eval_command.add_eval_parser`).
External = Callable[[Any], Any]


class SuggestingParser(argparse.ArgumentParser):
    """An argument parser whose refusal of a mistyped command or choice names the closest valid one."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and isinstance(value, str) and value not in choices:
            close = difflib.get_close_matches(value, [str(c) for c in choices], n=1)
            if close:
                valid = ", ".join(map(str, choices))
                raise argparse.ArgumentError(
                    action, f"invalid choice: {value!r}; did you mean {close[0]!r}? (choose from {valid})"
                )
        super()._check_value(action, value)


def command_word(argv: Sequence[str]) -> str | None:
    """The command named on the command line, when nothing before it asks for help; `None` otherwise."""
    for word in argv:
        if not word.startswith("-"):
            return word
        if word in ("-h", "--help"):
            return None
    return None


def build_parser(only: str | None = None, external: dict[str, External] | None = None) -> argparse.ArgumentParser:
    """
    `needle`'s argument parser.

    :param only: Build only this command's parser (the one the command line names); `None`: all of them.
        An unknown name builds them all, so that the refusal lists them.
    :param external: Builders of the parsers other packages own, by command (`eval`); a command without one is
        left out.
    """
    parser = SuggestingParser(prog="needle", description="Hybrid search over your markdown notes and documents.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups: dict[str, Any] = {}
    built = False
    for command in COMMANDS:
        word = command.words[0]
        if only is not None and word != only:
            continue
        built = True
        if command.external:
            if word in (external or {}):
                (external or {})[word](sub)
            continue
        if len(command.words) == 1:
            target = sub.add_parser(word, help=command.help)
        else:
            if word not in groups:
                group = GROUPS[word]
                holder = sub.add_parser(word, help=group.help)
                groups[word] = holder.add_subparsers(dest="action", required=group.required, metavar="ACTION")
            target = groups[word].add_parser(command.words[1], help=command.help)
        if command.request is not None:
            add_request_arguments(target, command.request)
        if command.options is not None:
            command.options(target)
    if only is not None and not built:
        return build_parser(None, external)
    return parser


def add_request_arguments(parser: argparse.ArgumentParser, request: type) -> None:
    """
    The CLI's arguments of a request (`needle.core.requests`): flag, type and help from each field the CLI takes.

    A list is a repeatable flag (or a positional taking several words); a switch off by default is a flag, one
    the graph decides (`None`) a `--x/--no-x` pair; a number the graph has a default for is left unset (the
    graph's default, which the help names). The help is the field's description, with its limits and default.
    """
    for param in requests.params(request):
        if not param.cli:
            continue
        help = _help(param)
        if not param.option_strings:
            parser.add_argument(param.name, nargs=param.nargs, metavar=param.metavar, help=help)
        elif param.kind is list:
            parser.add_argument(
                *param.option_strings, action="append", dest=param.name, metavar=param.metavar, help=help
            )
        elif param.kind is bool and param.default is False:
            parser.add_argument(*param.option_strings, action="store_true", dest=param.name, help=help)
        elif param.kind is bool:
            parser.add_argument(
                *param.option_strings, action=argparse.BooleanOptionalAction, default=None, dest=param.name, help=help
            )
        else:
            default = None if param.graph else param.default
            parser.add_argument(
                *param.option_strings,
                type=param.kind,
                default=default,
                dest=param.name,
                metavar=param.metavar,
                help=help,
            )


def _help(param: requests.Param) -> str:
    """A field's CLI help: its description, then its limits, default and whether it repeats."""
    notes = [param.limits()] if param.limits() else []
    if param.kind in (int, float) and param.default is not None:
        notes.append(f"default {requests.number(param.default)}")
    if param.kind is list and param.option_strings:
        notes.append("repeatable")
    text = f"{param.help} ({'; '.join(notes)})" if notes else param.help
    return text.replace("%", "%%")


__all__ = ["SuggestingParser", "add_request_arguments", "build_parser", "command_word"]
