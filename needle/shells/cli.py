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
import difflib
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from needle.commands import render as output
from needle.commands.dispatch import SEARCH_COMMANDS, failed, run
from needle.core import requests

if TYPE_CHECKING:
    from needle.core.settings import Settings
    from needle.facade.interface import NeedleInterface
    from needle.owner.record import OwnerRecord

logger = logging.getLogger(__name__)
# How long a command that finds the index locked waits for its owner's routes to answer (an owner that is
# still loading its models); a lock held by a process without an owner record fails at once.
OWNER_WAIT_SECONDS = 60.0
# 128 + SIGPIPE: what a shell reports for a command whose reader closed the pipe.
CLOSED_PIPE_EXIT = 141


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


class _Unbuilt:
    """A command's parser left unbuilt: every call on it (`add_argument`, `add_subparsers`...) does nothing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


class _OnlyCommand:
    """
    The subcommands of `needle`, of which only `command`'s parser is built (with every argument and action);
    the others are unbuilt. Building all of them takes a command sent to an owner a fifth of its start-up.
    """

    def __init__(self, sub: Any, command: str) -> None:
        self.sub, self.command, self.seen = sub, command, False

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if name != self.command:
            return _Unbuilt()
        self.seen = True
        return self.sub.add_parser(name, **kwargs)


def _command(argv: Sequence[str] | None) -> str | None:
    """The command named on the command line, when nothing before it asks for help; `None` otherwise."""
    for word in sys.argv[1:] if argv is None else argv:
        if not word.startswith("-"):
            return word
        if word in ("-h", "--help"):
            return None
    return None


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """
    `needle`'s argument parser.

    :param only: Build only this command's parser (the one the command line names); `None`: all of them.
        An unknown name builds them all, so that the refusal lists them.
    """
    parser = SuggestingParser(prog="needle", description="Hybrid search over your markdown notes and documents.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub: Any = commands if only is None else _OnlyCommand(commands, only)

    _add_collection_commands(sub)
    _add_search_commands(sub)
    _add_file_commands(sub)
    _add_process_commands(sub)
    if only in (None, "eval"):
        from needle.evaluation.eval_command import add_eval_parser  # a dozen subcommands of its own

        add_eval_parser(sub)
    if isinstance(sub, _OnlyCommand) and not sub.seen:
        return _parser()
    return parser


def _add_collection_commands(sub: Any) -> None:
    """`collection` and `index`: what is indexed."""
    collection = sub.add_parser("collection", help="add, list or remove collections of notes")
    csub = collection.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = csub.add_parser("add", help="add a folder of notes as a collection")
    add.add_argument("path", help="folder of notes")
    add.add_argument("--name", required=True, help="collection name")
    add.add_argument("--mask", action="append", help="glob of files to include (repeatable; default **/*.md and text)")
    add.add_argument(
        "--documents",
        action="store_true",
        help="also include PDF, Word (.docx) and HTML files (**/*.pdf, **/*.docx, **/*.html, **/*.htm)",
    )
    add.add_argument(
        "--language", help="language of its notes for keyword search, e.g. german or chinese (default auto: per file)"
    )
    add.add_argument(
        "--allow-overlap",
        action="store_true",
        help="accept a folder another collection already covers (same, inside or containing it): its notes are found twice",
    )
    csub.add_parser("list", help="list collections")
    remove = csub.add_parser("remove", help="remove a collection and its chunks from the index")
    remove.add_argument("name")

    index = sub.add_parser("index", help="index collections (all by default); unchanged chunks are not re-embedded")
    index.add_argument("names", nargs="*", metavar="NAME")
    index.add_argument("--rebuild", action="store_true", help="drop the index first (after changing the model)")
    index.add_argument("--json", action="store_true", help="print the report as JSON")
    index.add_argument(
        "--set", action="append", metavar="COMPONENT.PARAM=VALUE", help="override a parameter of ingest.yml"
    )
    index.add_argument(
        "--path",
        action="append",
        dest="paths",
        metavar="PATH",
        help="index only this file (absolute or relative to a collection root; a deleted file leaves the index; repeatable)",
    )


def _add_search_commands(sub: Any) -> None:
    """`search`, `vsearch`, `query`, `answer` and `context`: asking the index."""
    for command, text in SEARCH_COMMANDS.items():
        search = sub.add_parser(command, help=text)
        add_request_arguments(search, requests.SEARCHES[command])
        search.add_argument("--format", choices=output.FORMATS, default="text", help="output format (default text)")
        search.add_argument("--json", action="store_const", const="json", dest="format", help="same as --format json")
        search.add_argument(
            "--set",
            action="append",
            metavar="COMPONENT.PARAM=VALUE",
            help="override a parameter of the graph, e.g. fuse.k=30 (repeatable)",
        )
        search.add_argument(
            "--pipeline",
            default=command,
            metavar="NAME|FILE",
            help=f"another graph, e.g. query-llm or my-graph.yml (default: {command})",
        )

    answer = sub.add_parser("answer", help="answer a question from the notes with the configured LLM, citing them")
    add_request_arguments(answer, requests.ANSWER)
    answer.add_argument("--json", action="store_true", help="print the answer and its sources as JSON")
    answer.add_argument("--pipeline", default="rag", metavar="NAME|FILE", help="another answer graph (default: rag)")
    answer.add_argument(
        "--set", action="append", metavar="COMPONENT.PARAM=VALUE", help="override a parameter of the graph"
    )

    context = sub.add_parser(
        "context", help="describe what a collection or folder holds; shown with every result under it"
    )
    xsub = context.add_subparsers(dest="action", required=True, metavar="ACTION")
    xadd = xsub.add_parser("add", help='attach a description: needle context add notes/runbooks "on-call runbooks"')
    xadd.add_argument("prefix", metavar="COLLECTION[/FOLDER]")
    xadd.add_argument("text")
    xsub.add_parser("list", help="list the descriptions")
    xremove = xsub.add_parser("remove", help="remove a description")
    xremove.add_argument("prefix", metavar="COLLECTION[/FOLDER]")


def _add_file_commands(sub: Any) -> None:
    """`get`, `multi-get`, `ls`, and the index's own: `check`, `status`, `optimize`, `backup`, `restore`."""
    get = sub.add_parser("get", help="print a file, or lines of it: PATH[:LINE[:COUNT]] or #docid")
    add_request_arguments(get, requests.GET)
    multi = sub.add_parser("multi-get", help="print several files: a glob (notes/howto/*.md) or a list of references")
    # One positional for both of the request's ways to name files: a glob, or references.
    multi.add_argument("refs", nargs="+", metavar="GLOB|REF", help="a glob over collection/path, or paths and #docids")
    add_request_arguments(multi, requests.MULTI_GET)
    multi.add_argument("--json", action="store_true", help="print the files and the skipped ones as JSON")
    ls = sub.add_parser("ls", help="list the indexed files of a collection (all by default)")
    ls.add_argument("collection", nargs="?")
    ls.add_argument("--json", action="store_true")
    check = sub.add_parser("check", help="read the whole index and report damage (exit 1) before a query trips on it")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument(
        "--repair",
        action="store_true",
        help="index the files whose data was lost again and delete orphaned data (no rebuild)",
    )
    status = sub.add_parser("status", help="collections, counts, model and index location")
    status.add_argument("--json", action="store_true")
    optimize = sub.add_parser("optimize", help="lay the index out as the `index:` settings say (no re-embedding)")
    optimize.add_argument("--json", action="store_true")
    backup = sub.add_parser(
        "backup", help="back the index up into a new folder (a consistent copy, or server snapshots)"
    )
    backup.add_argument("path", help="a folder that does not exist yet")
    backup.add_argument("--json", action="store_true")
    restore = sub.add_parser("restore", help="put a backup in place of the index (refuses another model's)")
    restore.add_argument("path", help="a folder written by `needle backup`")
    restore.add_argument("--json", action="store_true")


def _add_process_commands(sub: Any) -> None:
    """`models`, `migrate`, and the long-running ones: `serve`, `mcp`, `watch`, `owner`."""
    sub.add_parser("models", help="install the offline models (same as `make models`)")
    migrate = sub.add_parser("migrate", help="copy the embedded index, vectors included, to a Qdrant server")
    migrate.add_argument("--to", required=True, metavar="URL", help="the server, e.g. http://qdrant:6333")
    migrate.add_argument("--collection", default=None, help="collection on the server (default: store.collection)")
    serve = sub.add_parser("serve", help="serve HTTP endpoints and MCP tools (hayhooks) on 127.0.0.1:1416")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=1416, help="port (default 1416)")
    serve.add_argument(
        "--every", metavar="INTERVAL", help="back the index up this often, e.g. 6h or 30m (default: never)"
    )
    serve.add_argument("--keep", type=int, default=7, help="scheduled backups to keep (default 7)")
    serve.add_argument("--backup-dir", metavar="DIR", help="where scheduled backups go (default: DATA_DIR/backups)")
    serve.add_argument(
        "--watch",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="keep the index live: index changed notes as they are saved (default: off)",
    )
    mcp = sub.add_parser("mcp", help="serve the MCP tools over stdin/stdout, for desktop agents")
    mcp.add_argument(
        "--watch",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="keep the index live: index changed notes as they are saved (default: off)",
    )
    sub.add_parser("watch", help="keep the index live: index changed notes as they are saved, until interrupted")
    owner = sub.add_parser(
        "owner", help="see, start or stop the background process that holds the index for every command"
    )
    osub = owner.add_subparsers(dest="action", metavar="ACTION")
    osub.add_parser("status", help="which process holds the index, and where (the default)")
    osub.add_parser("start", help="start a background owner now (commands start one when they need it)")
    osub.add_parser("stop", help="stop the process that holds the index")
    orun = osub.add_parser(
        "run", help="hold the index in this terminal until idle (what `start` runs in the background)"
    )
    orun.add_argument(
        "--first",
        metavar="GRAPH[,GRAPH]",
        type=lambda v: [g for g in v.split(",") if g],
        default=None,
        help="answer once these graphs are warm, then warm the others (default: all before answering)",
    )
    orun.add_argument(
        "--ready-fd",
        type=int,
        default=None,
        metavar="FD",
        help="write a line to this inherited file descriptor, and close it, once the owner answers",
    )


def add_request_arguments(parser: argparse.ArgumentParser, params: tuple[requests.Param, ...]) -> None:
    """
    The CLI's arguments of a request declared in `needle.core.requests`: flag, type and help from each field.

    A list is a repeatable flag; a switch off by default is a flag, one the graph decides (`None`) a
    `--x/--no-x` pair; a number the graph has a default for is left unset (the graph's default, which the
    help names). The help is the field's description, with its limits and default.
    """
    for param in params:
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
    if param.kind is list:
        notes.append("repeatable")
    text = f"{param.help} ({'; '.join(notes)})" if notes else param.help
    return text.replace("%", "%%")


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


def _run_without_index(args: argparse.Namespace) -> int | None:
    """Commands that do not open the index; `None` for the others."""
    if args.command in ("serve", "mcp", "watch") or (args.command == "owner" and args.action == "run"):
        from needle.owner.code_stamp import code_stamp

        code_stamp()  # the code this process loads now, before it may change on disk: its owner record names it
    if args.command == "eval":
        from needle.evaluation.eval_command import run_eval

        return run_eval(args)
    if args.command == "serve":
        from needle.shells.http.server import serve

        return serve(args.host, args.port, backups=_backup_schedule(args), watch=args.watch)
    if args.command == "mcp":
        from needle.owner.processes import run_mcp
        from needle.shells.http.server import create_app
        from needle.shells.mcp import run_stdio

        return run_mcp(create_app, run_stdio, watch=args.watch)
    if args.command == "watch":
        from needle.owner.processes import run_watch
        from needle.shells.http.server import create_app

        return run_watch(create_app)
    if args.command == "owner":
        if args.action == "run":
            from needle.owner.processes import run_owner
            from needle.shells.http.server import create_app

            return run_owner(create_app, args.first, ready_fd=args.ready_fd)
        from needle.owner.thin_client import owner_command

        return owner_command(args.action or "status")
    if args.command == "models":
        from needle.core.model_files import main as install_models

        return install_models([])
    return None


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
    from needle.core.disk import ensure_space
    from needle.core.errors import is_lock_error
    from needle.core.settings import load_settings
    from needle.owner.record import uses_owner, wait_for_owner

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
    output.escape_logs()  # warnings name the user's files: no escape sequence reaches the terminal raw
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
