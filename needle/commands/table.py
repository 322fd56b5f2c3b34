"""Every `needle` command, one entry each: the one place a command is declared.

An entry names the command and its help, its request (`needle.core.requests`: the CLI flags, the HTTP body
and the MCP arguments come from it), what runs it (the facade method the request goes to, or a handler of
`needle.commands.handlers`), how the CLI prints its result (`needle.commands.render`), what it does with the index
(`reads` it, `writes` it, or runs without it: `none`), and its HTTP route and MCP tool if it has them. From the
table come the CLI's parser (`needle.commands.parsing`), the dispatch (`needle.commands.dispatch`), the commands
a thin client sends to the index's owner (`needle.owner.thin_client`), the remote facade's calls
(`needle.owner.remote`), the MCP tools (`needle.shells.mcp`) and the hayhooks endpoint wrappers
(`server/pipelines/<route>/pipeline_wrapper.py`, built by `needle.shells.http.endpoints.endpoint`).

Adding a command: an entry here, its handler (none when it is one facade call), its renderer, their tests. A
command that runs a process of its own (`serve`, `mcp`, `watch`, `owner`, `models`, `eval`) is `process=True`:
the CLI runs it (`needle.shells.cli`), never an owner. Only the standard library and light modules at import: a
command sent to an owner builds its parser from this table without pydantic or Haystack.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from needle.commands import handlers
from needle.commands import render as output
from needle.core import requests

Options = Callable[[argparse.ArgumentParser], None]
Handler = Callable[[Any, Any, argparse.Namespace, Any], Any]
Renderer = Callable[[Any, argparse.Namespace], str]


class Tool(NamedTuple):
    """How an agent sees a command over MCP: a title and a two-line description."""

    title: str
    description: str


@dataclass(frozen=True, eq=False, repr=False)
class Command:
    """
    One `needle` command.

    :param name: As typed: `search`, `multi-get`, `collection remove` (a group's action after a space).
    :param help: One line for `needle --help`.
    :param request: Its request's dataclass; `None` for a command that takes none.
    :param method: The facade method its request goes to (`NeedleInterface`), when that is all it does.
    :param handler: What the CLI runs instead of `method` (`needle.commands.handlers`).
    :param render: How the CLI prints its result (`needle.commands.render`).
    :param options: The CLI's own flags beyond the request's (`--json`, `--pipeline`, `--set`...).
    :param index: `reads` the index, `writes` it (or needs it to itself), or runs without it (`none`).
    :param starts_owner: A thin client starts a background owner for it when none runs (default: unless `none`).
    :param retried: Sent again, once, when the owner goes away before it answers (default: when it `reads`).
    :param process: It runs a process of its own, in the CLI (`needle.shells.cli`).
    :param external: Its parser is built by the package that runs it (`eval`: `needle.evaluation`).
    :param route: Its HTTP route, `POST /<route>/run`, and the folder of its endpoint wrapper in `server/pipelines/`.
    :param tool: Its MCP tool (named as the route), if agents get it.
    :param result: Its result's type, `module:Name` (`[]` after it: a list of them), as routes and the remote
        facade validate it.
    :param graph: The graph its route runs, warmed when the server starts.
    :param exit_code: The exit code its result gives (default 0).
    """

    name: str
    help: str
    request: type | None = None
    method: str | None = None
    handler: Handler | None = None
    render: Renderer | None = None
    options: Options | None = None
    index: Literal["reads", "writes", "none"] = "reads"
    starts_owner: bool | None = None
    retried: bool | None = None
    process: bool = False
    external: bool = False
    route: str | None = None
    tool: Tool | None = None
    result: str | None = None
    graph: str | None = None
    exit_code: Callable[[Any], int] | None = None

    def __repr__(self) -> str:
        return f"Command({self.name!r})"

    def __post_init__(self) -> None:
        if self.starts_owner is None:
            object.__setattr__(self, "starts_owner", self.index != "none")
        if self.retried is None:
            object.__setattr__(self, "retried", self.index == "reads")

    @property
    def words(self) -> tuple[str, ...]:
        """The command and, in a group, its action: `("collection", "remove")`."""
        return tuple(self.name.split(" "))

    def result_type(self) -> Any:
        """The result's type (`list[...]` for a list), imported now: routes and the remote facade validate it."""
        import importlib

        assert self.result is not None, f"{self.name} declares no result"
        module, _, name = self.result.rstrip("[]").partition(":")
        kind = getattr(importlib.import_module(module), name)
        return list[kind] if self.result.endswith("[]") else kind  # type: ignore[valid-type]  # a type made at run time


class Group(NamedTuple):
    """Commands under one word (`collection add`, `collection list`...): its help, whether an action is required."""

    help: str
    required: bool = True
    default: str | None = None


def _json(help: str | None = None) -> Options:
    """`--json`: print the result as JSON."""

    def add(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help=help)

    return add


def _search_options(graph: str) -> Options:
    """`--format`, `--json`, `--set` and `--pipeline` of `search`, `vsearch`, `query`."""

    def add(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--format", choices=output.FORMATS, default="text", help="output format (default text)")
        parser.add_argument("--json", action="store_const", const="json", dest="format", help="same as --format json")
        parser.add_argument(
            "--set",
            action="append",
            metavar="COMPONENT.PARAM=VALUE",
            help="override a parameter of the graph, e.g. fuse.k=30 (repeatable)",
        )
        parser.add_argument(
            "--pipeline",
            default=graph,
            metavar="NAME|FILE",
            help=f"another graph, e.g. query-llm or my-graph.yml (default: {graph})",
        )

    return add


def _answer_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the answer and its sources as JSON")
    parser.add_argument("--pipeline", default="rag", metavar="NAME|FILE", help="another answer graph (default: rag)")
    parser.add_argument(
        "--set", action="append", metavar="COMPONENT.PARAM=VALUE", help="override a parameter of the graph"
    )


def _index_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--set", action="append", metavar="COMPONENT.PARAM=VALUE", help="override a parameter of ingest.yml"
    )


def _files_options(parser: argparse.ArgumentParser) -> None:
    # One positional for both of the request's ways to name files: a glob, or references.
    parser.add_argument("refs", nargs="+", metavar="GLOB|REF", help="a glob over collection/path, or paths and #docids")
    parser.add_argument("--json", action="store_true", help="print the files and the skipped ones as JSON")


def _collection_add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="folder of notes")
    parser.add_argument("--name", required=True, help="collection name")
    parser.add_argument(
        "--mask", action="append", help="glob of files to include (repeatable; default **/*.md and text)"
    )
    parser.add_argument(
        "--documents",
        action="store_true",
        help="also include PDF, Word (.docx) and HTML files (**/*.pdf, **/*.docx, **/*.html, **/*.htm)",
    )
    parser.add_argument(
        "--language", help="language of its notes for keyword search, e.g. german or chinese (default auto: per file)"
    )
    parser.add_argument(
        "--allow-overlap",
        action="store_true",
        help="accept a folder another collection already covers (same, inside or containing it): its notes are found twice",
    )


def _prefix(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prefix", metavar="COLLECTION[/FOLDER]")


def _context_add_options(parser: argparse.ArgumentParser) -> None:
    _prefix(parser)
    parser.add_argument("text")


def _migrate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--to", required=True, metavar="URL", help="the server, e.g. http://qdrant:6333")
    parser.add_argument("--collection", default=None, help="collection on the server (default: store.collection)")


def _watch_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--watch",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="keep the index live: index changed notes as they are saved (default: off)",
    )


def _serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=1416, help="port (default 1416)")
    parser.add_argument(
        "--every", metavar="INTERVAL", help="back the index up this often, e.g. 6h or 30m (default: never)"
    )
    parser.add_argument("--keep", type=int, default=7, help="scheduled backups to keep (default 7)")
    parser.add_argument("--backup-dir", metavar="DIR", help="where scheduled backups go (default: DATA_DIR/backups)")
    parser.add_argument(
        "--pipeline",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="serve a graph variant at /NAME/run with the query route's request, and POST /split/run between "
        "it and query for A/B tests (repeatable; adds to serve.pipelines)",
    )
    _watch_flag(parser)
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log to the terminal (default: to DATA_DIR/serve.log)"
    )
    parser.add_argument(
        "--background",
        action="store_true",
        help="start it detached and return once it answers, printing its URL and pid",
    )
    parser.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)


def _owner_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--first",
        metavar="GRAPH[,GRAPH]",
        type=lambda v: [g for g in v.split(",") if g],
        default=None,
        help="answer once these graphs are warm, then warm the others (default: all before answering)",
    )
    parser.add_argument(
        "--ready-fd",
        type=int,
        default=None,
        metavar="FD",
        help="write a line to this inherited file descriptor, and close it, once the owner answers",
    )


def _printed(result: str, args: argparse.Namespace) -> str:
    """A handler's own text, as it is."""
    return result


def _search(name: str, help: str, request: type, tool: Tool) -> Command:
    return Command(
        name,
        help,
        request,
        method="search",
        handler=handlers.search,
        render=lambda result, args: output.search_answer(result, args.format, explain=args.explain),
        options=_search_options(name),
        route=name,
        tool=tool,
        result="needle.core.results:SearchAnswer",
        graph=name,
    )


GROUPS = {
    "collection": Group("add, list or remove collections of notes"),
    "context": Group("describe what a collection or folder holds; shown with every result under it"),
    "owner": Group(
        "see, start or stop the background process that holds the index for every command",
        required=False,
        default="status",
    ),
}

COMMANDS: tuple[Command, ...] = (
    Command(
        "collection add",
        "add a folder of notes as a collection",
        handler=handlers.collection_add,
        render=_printed,
        options=_collection_add_options,
        index="none",
    ),
    Command(
        "collection list", "list collections", handler=handlers.collection_list, render=_printed, starts_owner=False
    ),
    Command(
        "collection remove",
        "remove a collection and its chunks from the index",
        requests.CollectionRemoveRequest,
        method="remove_collection",
        render=lambda deleted, args: f"removed collection '{args.name}' and {deleted} chunks",
        index="writes",
        starts_owner=False,
        retried=True,
        route="collection_remove",
        result="builtins:int",
    ),
    Command(
        "index",
        "index collections (all by default); unchanged chunks are not re-embedded",
        requests.IndexRequest,
        method="index",
        handler=handlers.index,
        render=lambda report, args: output.index_report(report, args.json),
        options=_index_options,
        index="writes",
        route="index",
        tool=Tool(
            "Re-index notes",
            "Re-index collections after notes changed (unchanged files are not re-read); searches see changes "
            "only after it. Returns what was read, added, changed and removed.",
        ),
        result="needle.core.index_results:IndexReport",
        graph="ingest",
    ),
    _search(
        "search",
        "keyword search (BM25)",
        requests.SearchRequest,
        Tool(
            "Keyword search",
            "Keyword search (BM25): notes containing the query's exact words. For names, commands, config keys and "
            "error codes; for other wording use vsearch, when unsure query.",
        ),
    ),
    _search(
        "vsearch",
        "vector search",
        requests.VSearchRequest,
        Tool(
            "Vector search",
            "Vector search: notes close in meaning to the query, even in other words (questions, a paraphrase). "
            "Exact names or codes: search; the best of both: query.",
        ),
    ),
    _search(
        "query",
        "hybrid search",
        requests.QueryRequest,
        Tool(
            "Hybrid search",
            "Hybrid search, keywords and vectors fused: the best quality, use it by default. decompose splits a "
            "question that asks several things.",
        ),
    ),
    Command(
        "answer",
        "answer a question from the notes with the configured LLM, citing them",
        requests.AnswerRequest,
        method="answer",
        handler=handlers.answer,
        render=lambda answer, args: output.answer_text(answer, args.json),
        options=_answer_options,
        retried=False,
        route="answer",
        result="needle.core.results:Answer",
    ),
    Command(
        "context add",
        'attach a description: needle context add notes/runbooks "on-call runbooks"',
        handler=handlers.context_add,
        render=_printed,
        options=_context_add_options,
        starts_owner=False,
    ),
    Command(
        "context list", "list the descriptions", handler=handlers.context_list, render=_printed, starts_owner=False
    ),
    Command(
        "context remove",
        "remove a description",
        handler=handlers.context_remove,
        render=_printed,
        options=_prefix,
        starts_owner=False,
    ),
    Command(
        "get",
        "print a file, or lines of it: PATH[:LINE[:COUNT]] or #docid",
        requests.GetRequest,
        method="read",
        handler=handlers.get,
        render=lambda text, args: output.file_text(text),
        route="get",
        tool=Tool(
            "Read a note",
            "Read a note, whole or a line range: ref is a result's path, #docid or anchor. To read around a hit, "
            "pass its start_line as from_line with max_lines 40. PDF, DOCX, HTML as extracted text.",
        ),
        result="needle.core.files.reading:FileText",
    ),
    Command(
        "multi-get",
        "print several files: a glob (notes/howto/*.md) or a list of references",
        requests.MultiGetRequest,
        method="read_many",
        handler=handlers.read_many,
        render=lambda batch, args: output.file_batch(batch, args.json),
        options=_files_options,
        route="multi_get",
        tool=Tool(
            "Read several notes",
            "Read several notes: a glob (pattern) or paths and #docids (refs). Files over max_bytes are listed "
            "under skipped: read those with get and a line range.",
        ),
        result="needle.core.files.batches:FileBatch",
    ),
    Command(
        "links",
        "a note's links and backlinks, with their lines: PATH, #docid, name or alias",
        requests.LinksRequest,
        method="links",
        render=lambda report, args: output.link_report(report, args.json),
        options=_json(),
        route="links",
        tool=Tool(
            "A note's links",
            "A note's links and backlinks, with lines; related: N adds related notes, with reasons.",
        ),
        result="needle.core.link_results:LinkReport",
    ),
    Command(
        "related",
        "notes related to a note by its links and by meaning, each with its reasons",
        requests.RelatedRequest,
        method="related",
        render=lambda report, args: output.related_report(report, args.json),
        options=_json(),
        route="related",
        result="needle.core.link_results:RelatedReport",
        graph="related",
    ),
    Command(
        "ls",
        "list the indexed files of a collection (all by default)",
        requests.ListRequest,
        method="ls",
        render=lambda files, args: output.file_list(files, args.json),
        options=_json(),
        route="ls",
        result="needle.core.index_results:IndexedFile[]",
    ),
    Command(
        "check",
        "read the whole index and report damage (exit 1) before a query trips on it",
        requests.CheckRequest,
        method="check",
        render=lambda report, args: output.check_report(report, args.json),
        options=_json("print the report as JSON"),
        route="check",
        result="needle.core.index_results:CheckReport",
        exit_code=lambda report: 1 if report.problems else 0,
    ),
    Command(
        "status",
        "collections, counts, model and index location",
        method="status",
        render=lambda status, args: output.status_text(status, args.json),
        options=_json(),
        route="status",
        tool=Tool(
            "Collections",
            "The collections (name, files, chunks, description), models and index location; search, query and "
            "index take these collection names.",
        ),
        result="needle.core.index_results:Status",
    ),
    Command(
        "optimize",
        "lay the index out as the `index:` settings say (no re-embedding)",
        method="optimize",
        render=lambda report, args: output.optimize_report(report, args.json),
        options=_json(),
        index="writes",
        result="needle.core.index_results:OptimizeReport",
    ),
    Command(
        "backup",
        "back the index up into a new folder (a consistent copy, or server snapshots)",
        requests.BackupRequest,
        method="backup",
        render=lambda report, args: output.backup_report(report, "backup", args.json),
        options=_json(),
        index="writes",
        route="backup",
        result="needle.core.index_results:BackupReport",
    ),
    Command(
        "restore",
        "put a backup in place of the index (refuses another model's)",
        requests.RestoreRequest,
        method="restore",
        render=lambda report, args: output.backup_report(report, "restore", args.json),
        options=_json(),
        index="writes",
        starts_owner=False,
        result="needle.core.index_results:BackupReport",
    ),
    Command("models", "install the offline models (same as `make models`)", index="none", process=True),
    Command(
        "migrate",
        "copy the embedded index, vectors included, to a Qdrant server",
        handler=handlers.migrate,
        render=_printed,
        options=_migrate_options,
        index="writes",
        starts_owner=False,
    ),
    Command(
        "serve",
        "serve HTTP endpoints and MCP tools (hayhooks) on 127.0.0.1:1416",
        options=_serve_options,
        index="none",
        process=True,
    ),
    Command(
        "mcp",
        "serve the MCP tools over stdin/stdout, for desktop agents",
        options=_watch_flag,
        index="none",
        process=True,
    ),
    Command(
        "watch",
        "keep the index live: index changed notes as they are saved, until interrupted",
        index="none",
        process=True,
    ),
    Command("owner status", "which process holds the index, and where (the default)", index="none", process=True),
    Command(
        "owner start",
        "start a background owner now (commands start one when they need it)",
        index="none",
        process=True,
    ),
    Command("owner stop", "stop the process that holds the index", index="none", process=True),
    Command(
        "owner run",
        "hold the index in this terminal until idle (what `start` runs in the background)",
        options=_owner_run_options,
        index="none",
        process=True,
    ),
    # Its sub-commands and their parsers come from `needle.evaluation.eval_command`.
    Command(
        "eval",
        "score pipelines: golden queries, BEIR datasets, A/B comparisons",
        index="none",
        process=True,
        external=True,
    ),
)

BY_NAME = {command.name: command for command in COMMANDS}
BY_ROUTE = {command.route: command for command in COMMANDS if command.route}
# The MCP tools: those that only read the index first (an agent's usual calls), then those that change it.
TOOLS = {
    command.route: command
    for command in sorted(COMMANDS, key=lambda c: c.index == "writes")
    if command.tool and command.route
}


def command_of(args: argparse.Namespace) -> Command:
    """The entry of a parsed command line (a group's action included; `owner` alone is `owner status`)."""
    name = args.command
    group = GROUPS.get(name)
    if group is not None:
        name = f"{name} {getattr(args, 'action', None) or group.default}"
    return BY_NAME[name]


__all__ = ["BY_NAME", "BY_ROUTE", "COMMANDS", "GROUPS", "TOOLS", "Command", "Group", "Tool", "command_of"]
