"""`needle`: collections, indexing, search, answers, files and status from a shell.

A thin shell over `needle.facade.api.Needle`: it parses arguments, calls the facade and prints with
`needle.commands.render`. When another process owns the embedded index (`needle serve`, `mcp`, `watch`, or the
background owner a command starts; see `needle.owner.record`), the command runs there: `needle.owner.thin_client` sends it
without importing Haystack and prints what the owner printed. Every failure is one line on stderr with the
exit code of `needle.core.errors` (2 for a user mistake, 1 otherwise); no command prints a stack trace.
Module-level imports stay light (the parser is built on every call, thin or not).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from needle.commands import render as output
from needle.commands.dispatch import failed, run
from needle.commands.parsing import build_parser, command_word
from needle.commands.table import command_of

if TYPE_CHECKING:
    from needle.core.settings import Settings
    from needle.facade.interface import NeedleInterface
    from needle.owner.record import OwnerRecord

# How long a command that finds the index locked waits for its owner's routes to answer (an owner that is
# still loading its models); a lock held by a process without an owner record fails at once.
OWNER_WAIT_SECONDS = 60.0
# 128 + SIGPIPE: what a shell reports for a command whose reader closed the pipe.
CLOSED_PIPE_EXIT = 141


def _command(argv: Sequence[str] | None) -> str | None:
    """The command named on the command line, when nothing before it asks for help; `None` otherwise."""
    return command_word(sys.argv[1:] if argv is None else argv)


def _add_eval_parser(sub: Any) -> None:
    from needle.evaluation.eval_command import add_eval_parser  # a dozen subcommands of its own

    add_eval_parser(sub)


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """
    `needle`'s argument parser (`needle.commands.parsing.build_parser`), `eval`'s from `needle.evaluation`.

    :param only: Build only this command's parser (the one the command line names); `None`: all of them.
    """
    return build_parser(only, external={"eval": _add_eval_parser})


# What runs each command that is a process of its own (`process=True` in `needle.commands.table`).
PROCESSES: dict[str, Callable[[argparse.Namespace], int]] = {}


def _process(name: str) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    """Register what runs the command `name` of the table."""

    def register(function: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        PROCESSES[name] = function
        return function

    return register


def _backup_schedule(args: argparse.Namespace) -> dict[str, Any] | None:
    """`serve --every`: the interval in seconds, how many to keep and where (checked before the server starts)."""
    if args.every is None:
        return None
    from needle.core.settings import load_settings
    from needle.lifecycle.backups import parse_interval

    if args.keep < 1:
        raise ValueError(f"--keep must be >= 1, got {args.keep}")
    directory = args.backup_dir or str(load_settings().data_dir / "backups")
    return {"every": parse_interval(args.every), "keep": args.keep, "directory": directory}


def _stamped() -> None:
    """Read the code this process loads now, before it may change on disk: its owner record names it."""
    from needle.owner.code_stamp import code_stamp

    code_stamp()


@_process("eval")
def _eval(args: argparse.Namespace) -> int:
    from needle.evaluation.eval_command import run_eval

    return run_eval(args)


@_process("serve")
def _serve(args: argparse.Namespace) -> int:
    backups = _backup_schedule(args)  # a wrong --every is refused before anything starts
    if args.background:
        from needle.core.settings import load_settings
        from needle.owner.serving import SERVE_LOG, start_in_background

        return start_in_background(_serve_argv(args), load_settings().data_dir / SERVE_LOG)
    _stamped()
    from needle.shells.http.server import serve

    return serve(
        args.host,
        args.port,
        backups=backups,
        watch=args.watch,
        verbose=args.verbose,
        ready_fd=args.ready_fd,
        pipelines=args.pipeline,
    )


def _serve_argv(args: argparse.Namespace) -> list[str]:
    """`needle serve`'s options as given, for the server `--background` starts (variants' files made absolute)."""
    argv = ["--host", args.host, "--port", str(args.port), "--keep", str(args.keep)]
    argv += ["--every", args.every] if args.every else []
    argv += ["--backup-dir", args.backup_dir] if args.backup_dir else []
    for variant in args.pipeline:
        name, _, file = variant.partition("=")
        argv += ["--pipeline", f"{name}={os.path.abspath(file)}" if file else variant]
    return argv + (["--watch"] if args.watch else [])


@_process("mcp")
def _mcp(args: argparse.Namespace) -> int:
    _stamped()
    from needle.owner.processes import run_mcp
    from needle.shells.mcp import run_stdio

    return run_mcp(_create_app, run_stdio, watch=args.watch)


def _create_app(**options: Any) -> Any:
    """The HTTP shell's `create_app`, imported only when this process comes to own the index: a `needle mcp`
    that joins a running owner never loads the server (hayhooks, FastAPI)."""
    from needle.shells.http.server import create_app

    return create_app(**options)


@_process("watch")
def _watch(args: argparse.Namespace) -> int:
    _stamped()
    from needle.owner.processes import run_watch
    from needle.shells.http.server import create_app

    return run_watch(create_app)


@_process("owner run")
def _owner_run(args: argparse.Namespace) -> int:
    _stamped()
    from needle.owner.processes import run_owner
    from needle.shells.http.server import create_app

    return run_owner(create_app, args.first, ready_fd=args.ready_fd)


@_process("owner status")
@_process("owner start")
@_process("owner stop")
def _owner(args: argparse.Namespace) -> int:
    from needle.owner.thin_client import owner_command

    return owner_command(args.action or "status")


@_process("models")
def _models(args: argparse.Namespace) -> int:
    from needle.core.model_files import main as install_models

    return install_models([])


def _run_without_index(args: argparse.Namespace) -> int | None:
    """Commands that run a process of their own, not a command on the index; `None` for the others."""
    command = command_of(args)
    if not command.process:
        return None
    _escape_logs()
    return PROCESSES[command.name](args)


def _escape_logs() -> None:
    """Warnings name the user's files: no escape sequence reaches the terminal raw (`needle.commands.safe_logs`)."""
    from needle.commands.safe_logs import escape_logs

    escape_logs()


def _open(settings: Settings, args: argparse.Namespace) -> NeedleInterface:
    """The index's live owner (`needle serve`, `mcp`, `watch`) when one answers, else a local `Needle`."""
    from needle.owner.record import live_owner

    record = live_owner(settings)
    if record is not None:
        return _remote(settings, record)
    from needle.facade.api import Needle

    return Needle(settings, progress_bar=args.command == "index" and sys.stderr.isatty())


def _remote(settings: Settings, record: OwnerRecord) -> NeedleInterface:
    from needle.owner.remote import RemoteNeedle

    return RemoteNeedle(settings, record)


def _is_remote(needle: NeedleInterface) -> bool:
    from needle.owner.remote import RemoteNeedle

    return isinstance(needle, RemoteNeedle)


def _run_here(args: argparse.Namespace) -> int:
    """Open the index in this process (or reach a starting owner through `RemoteNeedle`) and run the command."""
    import logging

    from needle.core.disk import ensure_space
    from needle.core.errors import is_lock_error
    from needle.core.settings import load_settings
    from needle.owner.record import uses_owner, wait_for_owner

    _escape_logs()
    # A graph that fails makes Haystack snapshot its state and warn about every value it cannot serialise;
    # the one line below says what failed.
    logging.getLogger("haystack.utils.base_serialization").setLevel(logging.ERROR)
    settings = load_settings()
    ensure_space(settings.data_dir)  # before anything writes through the engine's memory maps (SIGBUS)
    needle = _open(settings, args)
    progress = output.index_progress if sys.stderr.isatty() else None
    try:
        try:
            return run(args, needle, progress=progress)
        except Exception as error:
            if not is_lock_error(error) or not uses_owner(settings) or _is_remote(needle):
                raise
            record = wait_for_owner(settings, OWNER_WAIT_SECONDS)
            if record is None:
                raise
            needle.close()
            needle = _remote(settings, record)
            return run(args, needle, progress=progress)
    finally:
        needle.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `needle` command."""
    args = _parser(_command(argv)).parse_args(argv)
    try:
        code = _run_without_index(args)
        if code is None:
            from needle.owner.thin_client import through_owner

            code = through_owner(args)
        code = _run_here(args) if code is None else code
        sys.stdout.flush()  # a reader that went away (`| head`) is met here, not at exit
        return code
    except BaseException as error:
        if isinstance(error, SystemExit):
            raise
        if isinstance(error, BrokenPipeError) and _stdout_closed():
            return _closed_pipe()
        return failed(args, error)


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader went away (not some other pipe or socket that broke)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), 0)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _closed_pipe() -> int:
    """
    End quietly when the reader of standard output went away (`needle search ... | head`): what is left
    unwritten goes nowhere, and the exit code is a process's killed by SIGPIPE, as `cat` or `grep` end.
    """
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit would fail and complain again
    except (OSError, ValueError):
        pass
    return CLOSED_PIPE_EXIT


if __name__ == "__main__":
    raise SystemExit(main())
