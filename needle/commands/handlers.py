"""What a `needle` command does on the facade once its request is built, where it is more than one facade call.

A handler takes the facade (`Needle`, or `RemoteNeedle` through an owner), the command's request (built from
the parsed arguments by `needle.commands.dispatch.request_of`), the parsed arguments (the CLI's own flags:
`--pipeline`, a reference's `:LINE:COUNT`...) and the index run's progress callback, and returns the result its
renderer prints. Commands whose work is one facade call need none: the table names the facade's method. Only
the standard library at import: heavy modules are imported inside the handler that needs them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from needle.core.files.batches import FileBatch
    from needle.core.files.reading import FileText
    from needle.core.index_results import IndexReport
    from needle.core.requests import AnswerRequest, GetRequest, IndexRequest, MultiGetRequest, SearchRequest
    from needle.core.results import Answer, SearchAnswer
    from needle.facade.interface import NeedleInterface

Progress = Callable[[Any], None] | None


def search(
    needle: NeedleInterface, request: SearchRequest, args: argparse.Namespace, progress: Progress
) -> SearchAnswer:
    """`search`, `vsearch`, `query`: the request on the graph `--pipeline` names."""
    return needle.search(request, args.pipeline)


def answer(needle: NeedleInterface, request: AnswerRequest, args: argparse.Namespace, progress: Progress) -> Answer:
    """`answer`: the request on the answer graph `--pipeline` names."""
    return needle.answer(request, args.pipeline)


def index(needle: NeedleInterface, request: IndexRequest, args: argparse.Namespace, progress: Progress) -> IndexReport:
    """`index`: the run, its progress shown after each batch."""
    return needle.index(request, progress)


def get(needle: NeedleInterface, request: GetRequest, args: argparse.Namespace, progress: Progress) -> FileText:
    """`get PATH[:LINE[:COUNT]]`: the line range is part of the reference on the CLI."""
    from needle.core.files.references import parse_ref

    ref, line, count = parse_ref(request.ref)
    return needle.read(replace(request, ref=ref, from_line=line or 1, max_lines=count))


def read_many(
    needle: NeedleInterface, request: MultiGetRequest, args: argparse.Namespace, progress: Progress
) -> FileBatch:
    """`multi-get GLOB|REF...`: one glob (any of `*?[`), or references."""
    refs: list[str] = args.refs
    if len(refs) == 1 and any(c in refs[0] for c in "*?["):
        return needle.read_many(replace(request, pattern=refs[0]))
    return needle.read_many(replace(request, refs=refs))


def collection_add(needle: NeedleInterface, request: None, args: argparse.Namespace, progress: Progress) -> str:
    """`collection add PATH --name NAME`: the collection list is a file in the data folder, written here."""
    from needle.core.file_formats import DOCUMENT_INCLUDE  # the converters' module: only when a collection is added
    from needle.core.globs import DEFAULT_INCLUDE

    include = list(args.mask or DEFAULT_INCLUDE) + (DOCUMENT_INCLUDE if args.documents else [])
    c = needle.collections.add(
        args.path, args.name, include=include, language=args.language, allow_overlap=args.allow_overlap
    )
    return f"collection '{c.name}' → {c.root} ({', '.join(c.include)}; language {c.language}); run `needle index` to index it"


def collection_list(needle: NeedleInterface, request: None, args: argparse.Namespace, progress: Progress) -> str:
    """`collection list`: one collection per line, its folder and masks."""
    collections = needle.collections.load()
    if not collections:
        return "no collections yet: add one with `needle collection add PATH --name NAME`"
    return "\n".join(f"{c.name}\t{c.root}\t{', '.join(c.include)}" for c in collections.values())


def context_add(needle: NeedleInterface, request: None, args: argparse.Namespace, progress: Progress) -> str:
    """`context add COLLECTION[/FOLDER] TEXT`."""
    needle.collections.select([args.prefix.strip().strip("/").split("/")[0]])
    prefix = needle.contexts.add(args.prefix, args.text)
    return f"context for '{prefix}': {needle.contexts.load()[prefix]}"


def context_list(needle: NeedleInterface, request: None, args: argparse.Namespace, progress: Progress) -> str:
    """`context list`: one description per line."""
    contexts = needle.contexts.load()
    if not contexts:
        return 'no contexts yet: add one with `needle context add COLLECTION[/FOLDER] "what it holds"`'
    return "\n".join(f"{prefix}\t{text}" for prefix, text in contexts.items())


def context_remove(needle: NeedleInterface, request: None, args: argparse.Namespace, progress: Progress) -> str:
    """`context remove COLLECTION[/FOLDER]`."""
    needle.contexts.remove(args.prefix)
    return f"removed the context of '{args.prefix.strip('/')}'"


def migrate(needle: NeedleInterface, request: None, args: argparse.Namespace, progress: Progress) -> str:
    """`migrate --to URL`: the embedded index copied to a Qdrant server, read in this process."""
    import sys

    from needle.facade.migration import migrate as copy_to_server

    done = copy_to_server(needle.local("needle migrate"), args.to, args.collection, progress=sys.stderr.isatty())
    return (
        f"copied {done['copied']} chunks to {done['url']} (collection {done['collection']}); "
        f"use it with NEEDLE_STORE__URL={done['url']} NEEDLE_STORE__COLLECTION={done['collection']}"
    )


__all__ = [
    "answer",
    "collection_add",
    "collection_list",
    "context_add",
    "context_list",
    "context_remove",
    "get",
    "index",
    "migrate",
    "read_many",
    "search",
]
