"""`needle`: collections, indexing, search and status from a shell.

A thin shell over `needle.app.Needle`; user mistakes print one line on stderr and exit with 2,
other failures exit with 1, and no command prints a stack trace for a user mistake.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from needle.evaluation.cli import add_eval_parser, run_eval
from needle.settings import ConfigError, load_settings

EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="needle", description="Hybrid search over your markdown notes.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    collection = sub.add_parser("collection", help="add, list or remove collections of notes")
    csub = collection.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = csub.add_parser("add", help="add a folder of notes as a collection")
    add.add_argument("path", help="folder of notes")
    add.add_argument("--name", required=True, help="collection name")
    add.add_argument("--mask", action="append", help="glob of files to include (repeatable; default **/*.md and text)")
    csub.add_parser("list", help="list collections")
    remove = csub.add_parser("remove", help="remove a collection and its chunks from the index")
    remove.add_argument("name")

    index = sub.add_parser("index", help="index collections (all by default); unchanged chunks are not re-embedded")
    index.add_argument("names", nargs="*", metavar="NAME")
    index.add_argument("--rebuild", action="store_true", help="drop the index first (after changing the model)")
    index.add_argument("--json", action="store_true", help="print the report as JSON")

    for mode, text in (("search", "keyword search (BM25)"), ("vsearch", "vector search"), ("query", "hybrid search")):
        search = sub.add_parser(mode, help=text)
        search.add_argument("query", nargs="+")
        search.add_argument("-n", type=int, default=None, dest="top_k", help="number of results")
        search.add_argument("-c", "--collection", action="append", dest="collections", help="restrict to a collection")
        search.add_argument("--min-score", type=float, default=None, help="drop results below this score")
        search.add_argument("--json", action="store_true", help="print results as JSON")
        search.add_argument("--explain", action="store_true", help="show each result's rank and score at every stage")
        search.add_argument("--chunks", action="store_true", help="every matching chunk, not one result per file")
        if mode == "query":
            search.add_argument("--expand", action=argparse.BooleanOptionalAction, default=None,
                                help="query expansion on or off (default: configuration)")
            search.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None,
                                help="reranking on or off (default: configuration)")
            search.add_argument("--pipeline", default=None, metavar="NAME|FILE",
                                help="another query graph, e.g. query-llm or my-graph.yml (default: query)")

    answer = sub.add_parser("answer", help="answer a question from the notes with the configured LLM, citing them")
    answer.add_argument("question", nargs="+")
    answer.add_argument("-n", type=int, default=None, dest="top_k", help="chunks given to the LLM")
    answer.add_argument("-c", "--collection", action="append", dest="collections", help="restrict to a collection")
    answer.add_argument("--min-score", type=float, default=None, help="give the LLM no chunk below this score")
    answer.add_argument("--json", action="store_true", help="print the answer and its sources as JSON")
    answer.add_argument("--pipeline", default="rag", metavar="NAME|FILE", help="another answer graph (default: rag)")

    get = sub.add_parser("get", help="print a file, or lines of it: PATH[:LINE[:COUNT]] or #docid")
    get.add_argument("ref")
    status = sub.add_parser("status", help="collections, counts, model and index location")
    status.add_argument("--json", action="store_true")
    sub.add_parser("models", help="install the offline models (same as `make models`)")
    migrate = sub.add_parser("migrate", help="copy the embedded index, vectors included, to a Qdrant server")
    migrate.add_argument("--to", required=True, metavar="URL", help="the server, e.g. http://qdrant:6333")
    migrate.add_argument("--collection", default=None, help="collection on the server (default: store.collection)")
    serve = sub.add_parser("serve", help="serve HTTP endpoints and MCP tools (hayhooks) on 127.0.0.1:1416")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=1416, help="port (default 1416)")
    sub.add_parser("mcp", help="serve the MCP tools over stdin/stdout, for desktop agents")
    add_eval_parser(sub)
    return parser


def _print_results(answer: dict[str, Any], as_json: bool, explain: bool = False) -> None:
    results = answer["results"]
    if as_json:
        print(json.dumps([r.as_dict(explain=explain) for r in results], indent=2, ensure_ascii=False))
        return
    if not results:
        print(f"no results ({answer['label']})")
        return
    if answer["label"] != "PASS":
        print(f"label: {answer['label']}\n")
    for rank, r in enumerate(results, 1):
        where = " › ".join([r.title, *[h for h in r.heading_path if h != r.title]])
        print(f"{rank:>2}. #{r.docid} {r.collection}/{r.path}:{r.start_line}-{r.end_line}  score {r.score:.4f}")
        print(f"    {where}")
        body = r.snippet.splitlines()[1:] if r.snippet else r.text.strip().splitlines()[:3]
        if r.snippet:
            print(f"    {r.snippet.splitlines()[0]}")
        for line in body:
            print(f"    | {line[:110]}")
        if explain:
            for stage, value in r.explain().items():
                print(f"    · {stage}: {json.dumps(value, default=str)}")
        print()


def _print_answer(answer: dict[str, Any], as_json: bool) -> None:
    if as_json:
        fields = {key: answer[key] for key in ("answer", "label", "unknown_citations")}
        for key in ("cited", "results"):
            fields[key] = [r.as_dict() for r in answer[key]]
        print(json.dumps(fields, indent=2, ensure_ascii=False))
        return
    print(answer["answer"] or "(the LLM gave no answer)")
    cited = {(r.collection, r.path, r.start_line) for r in answer["cited"]}
    print("\nsources (* cited):")
    for r in answer["results"]:
        mark = "*" if (r.collection, r.path, r.start_line) in cited else " "
        print(f" {mark} #{r.docid} {r.collection}/{r.path}:{r.start_line}-{r.end_line}")
    if not answer["results"]:
        print(f"   none ({answer['label']})")
    if answer["unknown_citations"]:
        print(f"cited but not given to the LLM: {', '.join(answer['unknown_citations'])}")


def _print_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"indexed {', '.join(report['collections'])} in {report['seconds']} s: "
        f"{report['files_seen']} files seen, {report['files_new']} new, {report['files_changed']} changed, "
        f"{report['files_unchanged']} unchanged, {report['files_removed']} removed, {len(report['skipped'])} skipped; "
        f"{report['chunks']} chunks, {report['chunks_embedded']} embedded, {report['chunks_deleted']} deleted; "
        f"{report['files_embedded']} whole files embedded"
    )
    for item in report["skipped"]:
        print(f"  skipped {item.get('collection', '')}/{item.get('path', '')}: {item.get('reason', '')}")
    for item in report["warnings"]:
        print(f"  warning {item.get('collection', '')}/{item.get('path', '')}: {item.get('reason', '')}")


def _split_ref(ref: str) -> tuple[str, int | None, int | None]:
    parts = ref.split(":")
    numbers: list[int] = []
    while len(parts) > 1 and parts[-1].isdigit() and len(numbers) < 2:
        numbers.insert(0, int(parts.pop()))
    line = numbers[0] if numbers else None
    count = numbers[1] if len(numbers) > 1 else None
    return ":".join(parts), line, count


def _run(args: argparse.Namespace) -> int:
    if args.command == "eval":
        return run_eval(args)
    if args.command == "serve":
        from needle.server import serve

        return serve(args.host, args.port)
    if args.command == "mcp":
        from needle.server import mcp_stdio

        return mcp_stdio()
    if args.command == "models":
        from needle.models import main as install_models

        return install_models([])

    from needle.app import Needle

    needle = Needle(load_settings(), progress_bar=args.command == "index" and sys.stderr.isatty())
    try:
        return _needle_command(needle, args)
    finally:
        needle.close()  # the embedded index unlocks before the next command (or the next process) opens it


def _needle_command(needle: Any, args: argparse.Namespace) -> int:
    if args.command == "migrate":
        from needle.migrate import migrate

        done = migrate(needle.settings, args.to, args.collection, progress=sys.stderr.isatty())
        print(f"copied {done['copied']} chunks to {done['url']} (collection {done['collection']}); "
              f"use it with NEEDLE_STORE__URL={done['url']} NEEDLE_STORE__COLLECTION={done['collection']}")
        return 0
    if args.command == "collection":
        if args.action == "add":
            c = needle.collections.add(args.path, args.name, include=args.mask)
            print(f"collection '{c.name}' → {c.root} ({', '.join(c.include)}); run `needle index` to index it")
        elif args.action == "list":
            collections = needle.collections.load()
            if not collections:
                print("no collections yet: add one with `needle collection add PATH --name NAME`")
            for c in collections.values():
                print(f"{c.name}\t{c.root}\t{', '.join(c.include)}")
        else:
            deleted = needle.remove_collection(args.name)
            print(f"removed collection '{args.name}' and {deleted} chunks")
        return 0
    if args.command == "index":
        _print_report(needle.index(args.names, rebuild=args.rebuild), args.json)
        return 0
    if args.command in ("search", "vsearch", "query"):
        answer = needle.ask(
            " ".join(args.query), mode=getattr(args, "pipeline", None) or args.command, top_k=args.top_k,
            collections=args.collections, min_score=args.min_score, chunks=args.chunks,
            expand=getattr(args, "expand", None), rerank=getattr(args, "rerank", None),
        )
        _print_results(answer, args.json, explain=args.explain)
        return 0
    if args.command == "answer":
        _print_answer(needle.answer(
            " ".join(args.question), top_k=args.top_k, collections=args.collections, min_score=args.min_score,
            pipeline=args.pipeline,
        ), args.json)
        return 0
    if args.command == "get":
        ref, line, count = _split_ref(args.ref)
        _, path = needle.resolve(ref)
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        start = max(1, line or 1)
        if start > len(lines) and lines:
            raise ValueError(f"{ref} has {len(lines)} lines; line {start} does not exist")
        end = len(lines) if count is None else min(len(lines), start + count - 1)
        print("\n".join(lines[start - 1 : end]))
        return 0
    status = needle.status()
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    print(f"store: {status['store']}\nembedding model: {status['embedding_model']}\nsparse model: {status['sparse_model']}")
    if not status["collections"]:
        print("no collections yet: add one with `needle collection add PATH --name NAME`")
    for c in status["collections"]:
        print(f"  {c['name']}: {c['files']} files, {c['chunks']} chunks ({c['root']})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `needle` command."""
    from haystack.core.errors import PipelineRuntimeError

    from needle.collections import CollectionError
    from needle.index_info import IndexMismatchError
    from needle.loader import PipelineError
    from needle.models import MissingModelError

    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except PipelineRuntimeError as error:
        cause = error.__cause__
        if isinstance(cause, (ValueError, TypeError)):
            print(f"error: {cause}", file=sys.stderr)
            return EXIT_USAGE
        print(f"error: {cause or error}", file=sys.stderr)
        return 1
    except (ConfigError, CollectionError, PipelineError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (MissingModelError, IndexMismatchError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (RuntimeError, ConnectionError) as error:  # a locked index folder, an unreachable server
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
