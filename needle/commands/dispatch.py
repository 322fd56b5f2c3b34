"""What each `needle` command does once its arguments are parsed, wherever it runs.

`run` calls the facade (`Needle` in-process, `RemoteNeedle` through an owner's routes) and prints with
`needle.commands.render`; `failed` turns an exception into the one line and exit code the CLI shows. The `needle`
command (`needle.shells.cli`) calls them in its own process; an index owner calls them for a thin client
(`needle.owner.routes`), with the client's parsed arguments and an output buffer of the client's own.
Below both, so that no server module imports the shell that starts it.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from functools import partial
from typing import IO, TYPE_CHECKING, Any

from needle.commands import render as output

if TYPE_CHECKING:
    from needle.core.files.multi_get import FileBatch
    from needle.core.results import SearchFilters
    from needle.facade.interface import NeedleInterface

logger = logging.getLogger(__name__)
SEARCH_COMMANDS = {"search": "keyword search (BM25)", "vsearch": "vector search", "query": "hybrid search"}


def _overrides(values: list[str] | None) -> dict[str, Any]:
    from needle.core.settings import parse_assignments

    pairs: dict[str, Any] = {}
    for value in values or []:
        pairs.update(parse_assignments(value))
    return pairs


def _filters(args: argparse.Namespace) -> SearchFilters:
    from needle.core.requests import FILTERS
    from needle.core.results import SearchFilters

    return SearchFilters(**{param.name: getattr(args, param.name) for param in FILTERS})


def run(
    args: argparse.Namespace,
    needle: NeedleInterface,
    out: IO[str] | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> int:
    """
    Run a parsed command on a facade and print its output.

    :param args: The parsed command line.
    :param needle: `Needle`, or `RemoteNeedle`.
    :param out: Where the output goes (standard output when `None`; the owner passes each client's buffer).
    :param progress: Called with an index run's report after each batch, or `None`.
    :returns: The exit code.
    """
    print = partial(_print, file=out)
    if args.command == "migrate":
        from needle.facade.migration import migrate

        done = migrate(needle.local("needle migrate"), args.to, args.collection, progress=sys.stderr.isatty())
        print(
            f"copied {done['copied']} chunks to {done['url']} (collection {done['collection']}); "
            f"use it with NEEDLE_STORE__URL={done['url']} NEEDLE_STORE__COLLECTION={done['collection']}"
        )
    elif args.command == "collection":
        _collection(args, needle, print)
    elif args.command == "index":
        report = needle.index(
            args.names, rebuild=args.rebuild, overrides=_overrides(args.set), paths=args.paths, progress=progress
        )
        print(output.index_report(report, args.json))
    elif args.command in SEARCH_COMMANDS:
        answer = needle.search(
            " ".join(args.query),
            pipeline=args.pipeline,
            top_k=args.limit,
            collections=args.collections,
            min_score=args.min_score,
            chunks=args.chunks,
            expand=getattr(args, "expand", None),
            rerank=getattr(args, "rerank", None),
            explain=args.explain,
            overrides=_overrides(args.set),
            filters=_filters(args),
            decompose=getattr(args, "decompose", None),
        )
        print(output.search_answer(answer, args.format, explain=args.explain))
    elif args.command == "answer":
        print(
            output.answer_text(
                needle.answer(
                    " ".join(args.question),
                    top_k=args.limit,
                    collections=args.collections,
                    min_score=args.min_score,
                    pipeline=args.pipeline,
                    overrides=_overrides(args.set),
                    filters=_filters(args),
                    decompose=args.decompose,
                    retry=args.retry,
                ),
                args.json,
            )
        )
    elif args.command == "context":
        _context(args, needle, print)
    elif args.command == "get":
        from needle.core.files.references import parse_ref

        ref, line, count = parse_ref(args.ref)
        text = needle.files.read(ref, from_line=line or 1, max_lines=count).text
        print(output.terminal_safe(text) if sys.stdout.isatty() else text)  # the exact text when piped
    elif args.command == "multi-get":
        print(output.file_batch(_multi_get(needle, args.refs, args.max_bytes), args.json))
    elif args.command == "optimize":
        print(output.optimize_report(needle.optimize(), args.json))
    elif args.command in ("backup", "restore"):
        done = needle.backup(args.path) if args.command == "backup" else needle.restore(args.path)
        print(output.backup_report(done, args.command, args.json))
    elif args.command == "check":
        report = needle.check(repair=args.repair)
        print(output.check_report(report, args.json))
        return 1 if report["problems"] else 0
    elif args.command == "ls":
        print(output.file_list(needle.indexed_files(args.collection), args.json))
    else:
        print(output.status_text(needle.status(), args.json))
    return 0


def _collection(args: argparse.Namespace, needle: NeedleInterface, print: Callable[[str], None]) -> None:
    """`needle collection add|list|remove`."""
    if args.action == "add":
        from needle.core.file_formats import (
            DOCUMENT_INCLUDE,  # the converters' module: only when a collection is added
        )
        from needle.core.globs import DEFAULT_INCLUDE

        include = list(args.mask or DEFAULT_INCLUDE) + (DOCUMENT_INCLUDE if args.documents else [])
        c = needle.collections.add(
            args.path, args.name, include=include, language=args.language, allow_overlap=args.allow_overlap
        )
        print(
            f"collection '{c.name}' → {c.root} ({', '.join(c.include)}; language {c.language}); run `needle index` to index it"
        )
    elif args.action == "list":
        collections = needle.collections.load()
        if not collections:
            print("no collections yet: add one with `needle collection add PATH --name NAME`")
        for c in collections.values():
            print(f"{c.name}\t{c.root}\t{', '.join(c.include)}")
    else:
        deleted = needle.remove_collection(args.name)
        print(f"removed collection '{args.name}' and {deleted} chunks")


def _context(args: argparse.Namespace, needle: NeedleInterface, print: Callable[[str], None]) -> None:
    """`needle context add|list|remove`."""
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


_print = print


def _multi_get(needle: NeedleInterface, refs: list[str], max_bytes: int) -> FileBatch:
    """One glob (any of `*?[`), or references."""
    if len(refs) == 1 and any(c in refs[0] for c in "*?["):
        return needle.files.read_many(pattern=refs[0], max_bytes=max_bytes)
    return needle.files.read_many(refs=refs, max_bytes=max_bytes)


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
    logger.debug("needle %s failed", args.command, exc_info=error)
    print(f"error: {' '.join(failure.message.split())}", file=err or sys.stderr)
    return failure.exit_code


__all__ = ["SEARCH_COMMANDS", "failed", "run"]
