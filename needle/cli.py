"""`needle`: collections, indexing, search, answers, files and status from a shell.

A thin shell over `needle.app.Needle`: it parses arguments, calls the facade and prints with
`needle.output`. When another process owns the embedded index (`needle serve`, `mcp`, `watch`; see
`needle.owner`), the same calls run there through `needle.remote.RemoteNeedle`, with the same output.
Every failure is one line on stderr with the exit code of `needle.errors` (2 for a user mistake, 1
otherwise); no command prints a stack trace.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import sys
from collections.abc import Sequence
from typing import Any

from needle import output
from needle.errors import classify, is_lock_error
from needle.evaluation.cli import add_eval_parser, run_eval
from needle.files import parse_ref
from needle.formats import DOCUMENT_INCLUDE
from needle.globs import DEFAULT_INCLUDE
from needle.owner import live_owner, uses_owner, wait_for_owner
from needle.settings import load_settings, parse_assignments

logger = logging.getLogger(__name__)
# How long a command that finds the index locked waits for its owner's routes to answer (an owner that is
# still loading its models); a lock held by a process without an owner record fails at once.
OWNER_WAIT_SECONDS = 60.0
SEARCH_COMMANDS = {"search": "keyword search (BM25)", "vsearch": "vector search", "query": "hybrid search"}


def _overrides(values: list[str] | None) -> dict[str, Any]:
    pairs: dict[str, Any] = {}
    for value in values or []:
        pairs.update(parse_assignments(value))
    return pairs


class SuggestingParser(argparse.ArgumentParser):
    """An argument parser whose refusal of a mistyped command or choice names the closest valid one."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and isinstance(value, str) and value not in choices:
            close = difflib.get_close_matches(value, [str(c) for c in choices], n=1)
            if close:
                valid = ", ".join(map(str, choices))
                raise argparse.ArgumentError(action, f"invalid choice: {value!r}; did you mean {close[0]!r}? (choose from {valid})")
        super()._check_value(action, value)


def _parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(prog="needle", description="Hybrid search over your markdown notes and documents.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    collection = sub.add_parser("collection", help="add, list or remove collections of notes")
    csub = collection.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = csub.add_parser("add", help="add a folder of notes as a collection")
    add.add_argument("path", help="folder of notes")
    add.add_argument("--name", required=True, help="collection name")
    add.add_argument("--mask", action="append", help="glob of files to include (repeatable; default **/*.md and text)")
    add.add_argument("--documents", action="store_true",
                     help="also include PDF, Word (.docx) and HTML files (**/*.pdf, **/*.docx, **/*.html, **/*.htm)")
    add.add_argument("--language", help="language of its notes for keyword search, e.g. german or chinese (default auto: per file)")
    add.add_argument("--allow-overlap", action="store_true",
                     help="accept a folder another collection already covers (same, inside or containing it): its notes are found twice")
    csub.add_parser("list", help="list collections")
    remove = csub.add_parser("remove", help="remove a collection and its chunks from the index")
    remove.add_argument("name")

    index = sub.add_parser("index", help="index collections (all by default); unchanged chunks are not re-embedded")
    index.add_argument("names", nargs="*", metavar="NAME")
    index.add_argument("--rebuild", action="store_true", help="drop the index first (after changing the model)")
    index.add_argument("--json", action="store_true", help="print the report as JSON")
    index.add_argument("--set", action="append", metavar="COMPONENT.PARAM=VALUE", help="override a parameter of ingest.yml")
    index.add_argument("--path", action="append", dest="paths", metavar="PATH",
                       help="index only this file (absolute or relative to a collection root; a deleted file leaves the index; repeatable)")

    for command, text in SEARCH_COMMANDS.items():
        search = sub.add_parser(command, help=text)
        search.add_argument("query", nargs="+")
        search.add_argument("-n", type=int, default=None, dest="top_k", help="number of results")
        search.add_argument("-c", "--collection", action="append", dest="collections", help="restrict to a collection")
        search.add_argument("--min-score", type=float, default=None, help="drop results below this score")
        search.add_argument("--format", choices=output.FORMATS, default="text", help="output format (default text)")
        search.add_argument("--json", action="store_const", const="json", dest="format", help="same as --format json")
        search.add_argument("--explain", action="store_true", help="show each result's rank and score at every stage")
        search.add_argument("--chunks", action="store_true", help="every matching chunk, not one result per file")
        search.add_argument("--set", action="append", metavar="COMPONENT.PARAM=VALUE",
                            help="override a parameter of the graph, e.g. fuse.k=30 (repeatable)")
        search.add_argument("--pipeline", default=command, metavar="NAME|FILE",
                            help=f"another graph, e.g. query-llm or my-graph.yml (default: {command})")
        _add_filter_arguments(search)
        if command == "query":
            search.add_argument("--expand", action=argparse.BooleanOptionalAction, default=None,
                                help="query expansion on or off (default: the graph's)")
            search.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None,
                                help="reranking on or off (default: the graph's)")
            search.add_argument("--decompose", action=argparse.BooleanOptionalAction, default=None,
                                help="split a multi-part question into sub-questions searched together (default: off)")

    answer = sub.add_parser("answer", help="answer a question from the notes with the configured LLM, citing them")
    answer.add_argument("question", nargs="+")
    answer.add_argument("-n", type=int, default=None, dest="top_k", help="chunks given to the LLM")
    answer.add_argument("-c", "--collection", action="append", dest="collections", help="restrict to a collection")
    answer.add_argument("--min-score", type=float, default=None, help="give the LLM no chunk below this score")
    answer.add_argument("--json", action="store_true", help="print the answer and its sources as JSON")
    answer.add_argument("--pipeline", default="rag", metavar="NAME|FILE", help="another answer graph (default: rag)")
    answer.add_argument("--set", action="append", metavar="COMPONENT.PARAM=VALUE", help="override a parameter of the graph")
    answer.add_argument("--decompose", action=argparse.BooleanOptionalAction, default=None,
                        help="split a multi-part question into sub-questions (default: on)")
    answer.add_argument("--retry", action=argparse.BooleanOptionalAction, default=None,
                        help="search again for what the answer's citations do not cover, and answer again (default: off)")
    _add_filter_arguments(answer)

    context = sub.add_parser("context", help="describe what a collection or folder holds; shown with every result under it")
    xsub = context.add_subparsers(dest="action", required=True, metavar="ACTION")
    xadd = xsub.add_parser("add", help='attach a description: needle context add notes/runbooks "on-call runbooks"')
    xadd.add_argument("prefix", metavar="COLLECTION[/FOLDER]")
    xadd.add_argument("text")
    xsub.add_parser("list", help="list the descriptions")
    xremove = xsub.add_parser("remove", help="remove a description")
    xremove.add_argument("prefix", metavar="COLLECTION[/FOLDER]")

    get = sub.add_parser("get", help="print a file, or lines of it: PATH[:LINE[:COUNT]] or #docid")
    get.add_argument("ref")
    multi = sub.add_parser("multi-get", help="print several files: a glob (notes/howto/*.md) or a list of references")
    multi.add_argument("refs", nargs="+", metavar="GLOB|REF")
    multi.add_argument("--max-bytes", type=int, default=100_000, help="skip files larger than this (default 100000)")
    multi.add_argument("--json", action="store_true", help="print the files and the skipped ones as JSON")
    ls = sub.add_parser("ls", help="list the indexed files of a collection (all by default)")
    ls.add_argument("collection", nargs="?")
    ls.add_argument("--json", action="store_true")
    check = sub.add_parser("check", help="read the whole index and report damage (exit 1) before a query trips on it")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    status = sub.add_parser("status", help="collections, counts, model and index location")
    status.add_argument("--json", action="store_true")
    optimize = sub.add_parser("optimize", help="lay the index out as the `index:` settings say (no re-embedding)")
    optimize.add_argument("--json", action="store_true")
    backup = sub.add_parser("backup", help="back the index up into a new folder (a consistent copy, or server snapshots)")
    backup.add_argument("path", help="a folder that does not exist yet")
    backup.add_argument("--json", action="store_true")
    restore = sub.add_parser("restore", help="put a backup in place of the index (refuses another model's)")
    restore.add_argument("path", help="a folder written by `needle backup`")
    restore.add_argument("--json", action="store_true")
    sub.add_parser("models", help="install the offline models (same as `make models`)")
    migrate = sub.add_parser("migrate", help="copy the embedded index, vectors included, to a Qdrant server")
    migrate.add_argument("--to", required=True, metavar="URL", help="the server, e.g. http://qdrant:6333")
    migrate.add_argument("--collection", default=None, help="collection on the server (default: store.collection)")
    serve = sub.add_parser("serve", help="serve HTTP endpoints and MCP tools (hayhooks) on 127.0.0.1:1416")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=1416, help="port (default 1416)")
    serve.add_argument("--every", metavar="INTERVAL", help="back the index up this often, e.g. 6h or 30m (default: never)")
    serve.add_argument("--keep", type=int, default=7, help="scheduled backups to keep (default 7)")
    serve.add_argument("--backup-dir", metavar="DIR", help="where scheduled backups go (default: DATA_DIR/backups)")
    serve.add_argument("--watch", action=argparse.BooleanOptionalAction, default=False,
                       help="keep the index live: index changed notes as they are saved (default: off)")
    mcp = sub.add_parser("mcp", help="serve the MCP tools over stdin/stdout, for desktop agents")
    mcp.add_argument("--watch", action=argparse.BooleanOptionalAction, default=False,
                     help="keep the index live: index changed notes as they are saved (default: off)")
    sub.add_parser("watch", help="keep the index live: index changed notes as they are saved, until interrupted")
    add_eval_parser(sub)
    return parser


def _add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    """The filters every search and answer takes (the same names as the HTTP and MCP parameters)."""
    parser.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="only notes with this tag (repeat: all of them)")
    parser.add_argument("--tag-any", action="append", dest="tags_any", metavar="TAG", help="only notes with any of these tags")
    parser.add_argument("--tag-none", action="append", dest="tags_none", metavar="TAG", help="only notes without these tags")
    parser.add_argument("--path", metavar="FOLDER|GLOB", help="only notes under this folder or matching this glob (runbooks/, **/2024-*.md)")
    parser.add_argument("--where", action="append", metavar="FIELD=VALUE",
                        help="frontmatter condition: status=draft, priority>=2, type=note|runbook (repeatable)")
    parser.add_argument("--after", metavar="DATE", help="only notes dated on or after: 2024-05-01, 2024-05, 'last week'")
    parser.add_argument("--before", metavar="DATE", help="only notes dated before this")
    parser.add_argument("--recent", action=argparse.BooleanOptionalAction, default=None,
                        help="rank newer notes higher (default: when the question asks for the newest)")
    parser.add_argument("--self-query", action=argparse.BooleanOptionalAction, default=None,
                        help="read #tags, in:folder/, field:value, \"phrases\", -terms and dates out of the question (default on)")


def _filters(args: argparse.Namespace) -> Any:
    from needle.results import SearchFilters

    return SearchFilters(
        tags=args.tags, tags_any=args.tags_any, tags_none=args.tags_none, path=args.path, where=args.where,
        after=args.after, before=args.before, recent=args.recent, self_query=args.self_query,
    )


def _run(args: argparse.Namespace, needle: Any) -> int:
    if args.command == "migrate":
        from needle.migrate import migrate

        done = migrate(needle, args.to, args.collection, progress=sys.stderr.isatty())
        print(f"copied {done['copied']} chunks to {done['url']} (collection {done['collection']}); "
              f"use it with NEEDLE_STORE__URL={done['url']} NEEDLE_STORE__COLLECTION={done['collection']}")
    elif args.command == "collection":
        if args.action == "add":
            include = list(args.mask or DEFAULT_INCLUDE) + (DOCUMENT_INCLUDE if args.documents else [])
            c = needle.collections.add(
                args.path, args.name, include=include, language=args.language, allow_overlap=args.allow_overlap
            )
            print(f"collection '{c.name}' → {c.root} ({', '.join(c.include)}; language {c.language}); run `needle index` to index it")
        elif args.action == "list":
            collections = needle.collections.load()
            if not collections:
                print("no collections yet: add one with `needle collection add PATH --name NAME`")
            for c in collections.values():
                print(f"{c.name}\t{c.root}\t{', '.join(c.include)}")
        else:
            deleted = needle.remove_collection(args.name)
            print(f"removed collection '{args.name}' and {deleted} chunks")
    elif args.command == "index":
        shown = output.index_progress if sys.stderr.isatty() else None
        report = needle.index(args.names, rebuild=args.rebuild, overrides=_overrides(args.set), paths=args.paths, progress=shown)
        print(output.index_report(report, args.json))
    elif args.command in SEARCH_COMMANDS:
        answer = needle.search(
            " ".join(args.query), pipeline=args.pipeline, top_k=args.top_k, collections=args.collections,
            min_score=args.min_score, chunks=args.chunks, expand=getattr(args, "expand", None),
            rerank=getattr(args, "rerank", None), explain=args.explain,
            overrides=_overrides(args.set), filters=_filters(args), decompose=getattr(args, "decompose", None),
        )
        print(output.search_answer(answer, args.format, explain=args.explain))
    elif args.command == "answer":
        print(output.answer_text(needle.answer(
            " ".join(args.question), top_k=args.top_k, collections=args.collections, min_score=args.min_score,
            pipeline=args.pipeline, overrides=_overrides(args.set), filters=_filters(args), decompose=args.decompose,
            retry=args.retry,
        ), args.json))
    elif args.command == "context":
        if args.action == "add":
            needle.collections.select([args.prefix.strip().strip("/").split("/")[0]])
            prefix = needle.contexts.add(args.prefix, args.text)
            print(f"context for '{prefix}': {needle.contexts.load()[prefix]}")
        elif args.action == "list":
            contexts = needle.contexts.load()
            if not contexts:
                print('no contexts yet: add one with `needle context add COLLECTION[/FOLDER] "what it holds"`')
            for prefix, text in contexts.items():
                print(f"{prefix}\t{text}")
        else:
            needle.contexts.remove(args.prefix)
            print(f"removed the context of '{args.prefix.strip('/')}'")
    elif args.command == "get":
        ref, line, count = parse_ref(args.ref)
        print(needle.files.read(ref, from_line=line or 1, max_lines=count).text)
    elif args.command == "multi-get":
        print(output.file_batch(_multi_get(needle, args.refs, args.max_bytes), args.json))
    elif args.command == "optimize":
        print(output.optimize_report(needle.optimize(), args.json))
    elif args.command in ("backup", "restore"):
        done = needle.backup(args.path) if args.command == "backup" else needle.restore(args.path)
        print(output.backup_report(done, args.command, args.json))
    elif args.command == "check":
        report = needle.check()
        print(output.check_report(report, args.json))
        return 1 if report["problems"] else 0
    elif args.command == "ls":
        print(output.file_list(needle.indexed_files(args.collection), args.json))
    else:
        print(output.status_text(needle.status(), args.json))
    return 0


def _multi_get(needle: Any, refs: list[str], max_bytes: int) -> Any:
    """One glob (any of `*?[`), or references."""
    if len(refs) == 1 and any(c in refs[0] for c in "*?["):
        return needle.files.read_many(pattern=refs[0], max_bytes=max_bytes)
    return needle.files.read_many(refs=refs, max_bytes=max_bytes)


def _backup_schedule(args: argparse.Namespace) -> dict[str, Any] | None:
    """`serve --every`: the interval in seconds, how many to keep and where (checked before the server starts)."""
    if args.every is None:
        return None
    from needle.backups import parse_interval

    if args.keep < 1:
        raise ValueError(f"--keep must be >= 1, got {args.keep}")
    directory = args.backup_dir or str(load_settings().data_dir / "backups")
    return {"every": parse_interval(args.every), "keep": args.keep, "directory": directory}


def _run_without_index(args: argparse.Namespace) -> int | None:
    """Commands that do not open the index; `None` for the others."""
    if args.command == "eval":
        return run_eval(args)
    if args.command == "serve":
        from needle.http.app import serve

        return serve(args.host, args.port, backups=_backup_schedule(args), watch=args.watch)
    if args.command == "mcp":
        from needle.http.background import run_mcp

        return run_mcp(watch=args.watch)
    if args.command == "watch":
        from needle.http.background import run_watch

        return run_watch()
    if args.command == "models":
        from needle.models import main as install_models

        return install_models([])
    return None


def _open(settings: Any, args: argparse.Namespace) -> Any:
    """The index's live owner (`needle serve`, `mcp`, `watch`) when one answers, else a local `Needle`."""
    record = live_owner(settings)
    if record is not None:
        return _remote(settings, record)
    from needle.app import Needle

    return Needle(settings, progress_bar=args.command == "index" and sys.stderr.isatty())


def _remote(settings: Any, record: Any) -> Any:
    from needle.remote import RemoteNeedle

    return RemoteNeedle(settings, record)


def _is_remote(needle: Any) -> bool:
    from needle.remote import RemoteNeedle

    return isinstance(needle, RemoteNeedle)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `needle` command."""
    args = _parser().parse_args(argv)
    # A graph that fails makes Haystack snapshot its state and warn about every value it cannot serialise;
    # the one line below says what failed.
    logging.getLogger("haystack.utils.base_serialization").setLevel(logging.ERROR)
    needle = None
    try:
        code = _run_without_index(args)
        if code is not None:
            return code
        settings = load_settings()
        needle = _open(settings, args)
        try:
            return _run(args, needle)
        except Exception as error:
            if not is_lock_error(error) or not uses_owner(settings) or _is_remote(needle):
                raise
            record = wait_for_owner(settings, OWNER_WAIT_SECONDS)
            if record is None:
                raise
            needle.close()
            needle = _remote(settings, record)
            return _run(args, needle)
    except BaseException as error:  # noqa: BLE001 - the one place every failure becomes an exit code
        if isinstance(error, SystemExit):
            raise
        failure = classify(error)
        if failure.exit_code == 130:
            return 130
        logger.debug("needle %s failed", args.command, exc_info=error)
        print(f"error: {failure.message}", file=sys.stderr)
        return failure.exit_code
    finally:
        if needle is not None:
            needle.close()


if __name__ == "__main__":
    raise SystemExit(main())
