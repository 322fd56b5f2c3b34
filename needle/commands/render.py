"""How the CLI prints Needle's results: the one result schema (`needle.core.results`) in five formats.

`text` for people; `json` is exactly what the HTTP endpoints and MCP tools return; `csv` and `md` for
spreadsheets and notes; `files` lists `collection/path` once per file, for `xargs` or `needle get`.

Names and texts come from the user's files, and a file name or note holding an escape sequence must not
rewrite the terminal it is printed on: every renderer's output has its control characters (C0 but tab and
line feed, DEL, C1) written as `\u001b`-style escapes (`terminal_safe`), which keeps JSON valid (the JSON
encoders escape C0 themselves; a C1 character can only sit inside a string); in names a line feed and a
tab are escaped too, so that one name stays one line.
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the thin client escapes the owner's output without importing the result models
    from needle.core.files.batches import FileBatch
    from needle.core.files.reading import FileText
    from needle.core.index_results import (
        BackupReport,
        CheckReport,
        CollectionStatus,
        IndexedFile,
        IndexReport,
        OptimizeReport,
        Status,
    )
    from needle.core.link_results import LinkEntry, LinkReport, RelatedReport
    from needle.core.results import Answer, SearchAnswer

FORMATS = ("text", "json", "csv", "md", "files")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """
    Text with its control characters (C0 but tab and line feed, DEL, C1) as `\\u001b`-style escapes.

    :param text: What is about to be printed (plain text, or JSON: it stays valid and decodes the same).
    :returns: The text, safe to print on a terminal.
    """
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _name(text: str) -> str:
    """A file name (or title) on one line: every control character escaped, line feed and tab included."""
    return _NAME_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", str(text))


def _safe(render: Callable[..., str]) -> Callable[..., str]:
    """A renderer whose output is `terminal_safe`."""

    @functools.wraps(render)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        return terminal_safe(render(*args, **kwargs))

    return wrapper


_CSV_FIELDS = (
    "docid",
    "score",
    "collection",
    "path",
    "start_line",
    "end_line",
    "title",
    "heading_path",
    "snippet",
    "page",
    "anchor",
    "confidence",
)


@_safe
def search_answer(answer: SearchAnswer, fmt: str = "text", explain: bool = False) -> str:
    """
    Render search results.

    :param answer: The label and hits.
    :param fmt: One of `FORMATS`.
    :param explain: Show each hit's per-stage trace (text and md; json carries it when the hits have it).
    :returns: The text to print (no trailing newline).
    :raises ValueError: On an unknown format.
    """
    if fmt == "json":
        return answer.model_dump_json(indent=2, exclude_none=not explain)
    if fmt == "csv":
        out = io.StringIO()
        import csv  # only for --format csv

        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(_CSV_FIELDS)
        for h in answer.results:
            writer.writerow(
                [
                    h.docid,
                    f"{h.score:.4f}",
                    h.collection,
                    h.path,
                    h.start_line,
                    h.end_line,
                    h.title,
                    " › ".join(h.heading_path),
                    h.snippet,
                    "" if h.page is None else h.page,
                    h.anchor,
                    "" if answer.confidence is None else f"{answer.confidence:.4f}",
                ]
            )
        return out.getvalue().rstrip("\n")
    if fmt == "files":
        return "\n".join(dict.fromkeys(_name(f"{h.collection}/{h.path}") for h in answer.results))
    if fmt == "md":
        return _markdown(answer, explain)
    if fmt == "text":
        return _text(answer, explain)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def _place(h: Any) -> str:
    """Where a hit is: its lines, or for a PDF, DOCX or HTML file the anchor `get` reads it with."""
    if h.anchor and h.format in ("pdf", "docx", "html"):
        return h.anchor
    return _name(f"{h.collection}/{h.path}:{h.start_line}-{h.end_line}")


def _where(h: Any) -> str:
    return _name(" › ".join([h.title, *[x for x in h.heading_path if x != h.title]]))


def _self_query_lines(answer: SearchAnswer, explain: bool) -> list[str]:
    """What the question said to filter by (with --explain), and always when the search fell back."""
    read = answer.self_query
    if read is None or not (
        read.fallback or (explain and (read.applied or read.recent or read.query != read.original or read.filters))
    ):
        return []
    lines = []
    if explain:
        lines.append(
            f"self-query: searched {read.query!r}"
            + (f" (asked {read.original!r})" if read.query != read.original else "")
        )
        for key, value in read.filters.items():
            lines.append(f"  {key}: {json.dumps(value, default=str)}")
        if read.must_contain:
            lines.append(f"  must contain: {json.dumps(read.must_contain)}")
        if read.must_not_contain:
            lines.append(f"  must not contain: {json.dumps(read.must_not_contain)}")
        if read.recent:
            lines.append("  recency: on" + (" (the question asks for the newest)" if read.recent_from_question else ""))
    if read.fallback:
        lines.append(f"fallback: {read.fallback_reason}")
    return [*lines, ""]


def _trust(label: str, confidence: float | None) -> str:
    """`confidence 0.93 (PASS)`, or the label alone for a graph without a confidence."""
    return label if confidence is None else f"confidence {confidence:.2f} ({label})"


def _query_trace(answer: SearchAnswer) -> list[str]:
    """The query-level part of `--explain`: the sub-questions searched and the confidence's signals."""
    trace = answer.explain or {}
    lines = []
    if trace.get("sub_questions"):
        lines.append("sub-questions: " + " | ".join(trace["sub_questions"]))
    if trace.get("confidence"):
        lines.append("confidence signals: " + json.dumps(trace["confidence"]))
    return lines


def _text(answer: SearchAnswer, explain: bool) -> str:
    header = _self_query_lines(answer, explain)
    warnings = [f"warning: {w}" for w in answer.warnings]
    if not answer.results:
        return "\n".join([*header, f"no results ({answer.label})", *warnings])
    lines = [
        *header,
        _trust(answer.label, answer.confidence),
        *warnings,
        *(_query_trace(answer) if explain else []),
        "",
    ]
    for rank, h in enumerate(answer.results, 1):
        lines.append(f"{rank:>2}. {h.docid} {_place(h)}  score {h.score:.4f}")
        lines.append(f"    {_where(h)}")
        if h.context:
            lines.append(f"    context: {h.context}")
        snippet = h.snippet.splitlines()
        if snippet and snippet[0].startswith("@@"):
            lines.append(f"    {snippet[0]}")
            body = snippet[1:]
        else:
            body = (h.text or "").strip().splitlines()[:3]
        lines.extend(f"    | {line[:110]}" for line in body)
        if explain and h.explain:
            lines.extend(f"    · {stage}: {json.dumps(value, default=str)}" for stage, value in h.explain.items())
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def _markdown(answer: SearchAnswer, explain: bool) -> str:
    if not answer.results:
        return f"_no results ({answer.label})_"
    lines = [f"> {_trust(answer.label, answer.confidence)}", *[f"> warning: {w}" for w in answer.warnings]]
    lines += [f"> {line}" for line in (_query_trace(answer) if explain else [])] + [""]
    for rank, h in enumerate(answer.results, 1):
        lines.append(f"{rank}. **{h.title}** — `{_place(h)}` ({h.docid}, score {h.score:.4f})")
        if h.context:
            lines.append(f"   _{h.context}_")
        lines.append("")
        lines.append("   ```")
        lines.extend(f"   {line}" for line in h.snippet.splitlines())
        lines.append("   ```")
        if explain and h.explain:
            lines.append(f"   explain: `{json.dumps(h.explain, default=str)}`")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


@_safe
def answer_text(answer: Answer, as_json: bool) -> str:
    """Render an answer and its sources, the cited ones starred."""
    if as_json:
        return answer.model_dump_json(indent=2, exclude_none=True)
    lines = [answer.answer or "(the LLM gave no answer)", "", _trust(answer.label, answer.confidence)]
    if answer.coverage is not None:
        retried = f", after {answer.retries} retr{'y' if answer.retries == 1 else 'ies'}" if answer.retries else ""
        lines[-1] += f", claims covered {answer.coverage:.0%}{retried}"
    lines += [f"warning: {w}" for w in answer.warnings]
    lines += [f"uncovered: {claim}" for claim in answer.uncovered_claims]
    if answer.sub_questions:
        lines.append("sub-questions: " + " | ".join(answer.sub_questions))
    lines += ["", "sources (* cited):"]
    cited = {(h.collection, h.path, h.start_line) for h in answer.cited}
    for h in answer.results:
        mark = "*" if (h.collection, h.path, h.start_line) in cited else " "
        lines.append(f" {mark} {h.docid} {_name(h.collection + '/' + h.path)}:{h.start_line}-{h.end_line}")
    if not answer.results:
        lines.append(f"   none ({answer.label})")
    if answer.unknown_citations:
        lines.append(f"cited but not given to the LLM: {', '.join(answer.unknown_citations)}")
    return "\n".join(lines)


def index_progress(report: IndexReport) -> None:
    """Show an index run's progress after a batch, one line on standard error."""
    import sys

    print(index_progress_line(report), file=sys.stderr, flush=True)


def index_progress_line(report: IndexReport) -> str:
    """An index run's progress after a batch, as one line."""
    return (
        f"batch {report.batches}: {report.files_read} of {report.files_pending} files read, "
        f"{report.texts_embedded} texts embedded, {report.chunks_reused} chunks reused, {report.seconds} s"
    )


def index_run_line(run: dict[str, Any]) -> str:
    """An index run under way (`Needle.index_run`), as `status` shows it."""
    import time

    if run.get("batches"):
        where = f"{run['phase']}: {run['files_read']} of {run['files_pending']} files read in {run['batches']} batches"
    else:
        where = "indexing the first batch" if run["phase"] == "indexing" else run["phase"]
    return (
        f"index run under way for {', '.join(run['collections']) or 'no collection'} "
        f"({where}, {max(0, round(time.time() - run['started']))} s so far)"
    )


def _json(model: Any, **dumps: Any) -> str:
    """A result as the JSON `--json` prints: its fields in their order, two spaces of indent."""
    return json.dumps(model.model_dump(mode="json"), indent=2, **dumps)


@_safe
def index_report(report: IndexReport, as_json: bool) -> str:
    """Render an index run's report."""
    if as_json:
        return _json(report)
    not_read = report.files_not_read
    listing = len(report.skipped) - not_read
    lines = [
        f"indexed {', '.join(report.collections)} in {report.seconds} s: "
        f"{report.files_seen} files seen: {report.files_read} read, {report.files_skipped_by_stat} unchanged by "
        f"their stat, {not_read} skipped, {report.files_vanished} vanished during the run"
        f"{f' ({listing} more left out while listing)' if listing else ''}; "
        f"{report.files_new} new, {report.files_changed} changed, "
        f"{report.files_unchanged} unchanged, {report.files_removed} removed; "
        f"{report.chunks} chunks, {report.chunks_embedded} embedded, {report.chunks_reused} reused, "
        f"{report.chunks_deleted} deleted; {report.files_embedded} whole files embedded; "
        f"{report.texts_embedded} texts embedded in {report.batches} batches"
    ]
    lines += [
        f"  {kind} {_name(i.collection + '/' + i.path)}: {_name(i.reason)}"
        for kind, notes in (("skipped", report.skipped), ("warning", report.warnings))
        for i in notes
    ]
    lines += [f"  moved the damaged store aside to {path}" for path in report.set_aside or []]
    return "\n".join(lines)


def _filterable_lines(collection: CollectionStatus, fields_shown: int = 8, values_shown: int = 3) -> list[str]:
    """A collection's fields (type, most frequent values) and tags, for filters (`--where`, `--tag`)."""
    lines = []
    fields = collection.fields
    if fields:
        shown = [
            f"{name} ({info['type']}: {', '.join(f'{v} {n}' for v, n in info['top'][:values_shown])}"
            f"{', …' if info['values'] > values_shown else ''})"
            for name, info in list(fields.items())[:fields_shown]
        ]
        more = f"; {len(fields) - fields_shown} more in --json" if len(fields) > fields_shown else ""
        lines.append(f"    fields: {'; '.join(shown)}{more}")
    tags = collection.tags
    if tags:
        lines.append(f"    tags: {', '.join(f'{tag} {n}' for tag, n in tags)}")
    return lines


@_safe
def status_text(status: Status, as_json: bool) -> str:
    """Render `needle status`."""
    if as_json:
        return _json(status)
    provider = status.embedding_provider
    served = "" if provider == "fastembed" else f" (served by {provider})"
    lines = [
        f"store: {status.store}",
        f"embedding model: {status.embedding_model}{served}",
        f"sparse model: {status.sparse_model}",
    ]
    if not status.collections:
        lines.append("no collections yet: add one with `needle collection add PATH --name NAME`")
    for c in status.collections:
        lines.append(f"  {c.name}: {c.files} files, {c.chunks} chunks ({c.root})")
        lines += _filterable_lines(c)
    for name, chunks in status.orphaned.items():
        lines.append(
            f"  {name or '(no collection)'}: {chunks} chunks of a collection no longer listed; "
            "`needle index` drops them"
        )
    layout = status.index_layout
    if layout:
        placed = [name for name in ("vectors", "hnsw", "sparse", "payload") if layout.get(f"{name}_on_disk")]
        lines.append(
            f"index: HNSW m={layout['hnsw_m']} ef_construct={layout['hnsw_ef_construct']}, "
            f"quantization {layout['quantization']}, on disk: {', '.join(placed) or 'nothing'}"
        )
    pending = status.layout_pending
    if pending:
        changes = ", ".join(f"{key} {change['index']} → {change['config']}" for key, change in pending.items())
        lines.append(f"  the configuration changes {changes}: run `needle optimize` to apply it")
    backup = status.last_backup
    if backup:
        from datetime import datetime

        when = datetime.fromtimestamp(backup["time"]).isoformat(sep=" ", timespec="seconds")
        lines.append(f"last backup: {when}, {backup['chunks']} chunks → {backup['path']}")
    problems = status.problems
    if problems:
        lines.append(f"files skipped or indexed with a problem ({status.problems_total}):")
        lines += [f"  {p.kind} {_name(p.collection + '/' + p.path)}: {_name(p.reason)}" for p in problems]
        if status.problems_total > len(problems):
            lines.append(f"  and {status.problems_total - len(problems)} more")
    if status.index_run:
        lines.append(index_run_line(status.index_run))
    if status.watcher:
        lines.append(_watcher_line(status.watcher))
    if status.contexts:
        lines.append("contexts:")
        lines += [f"  {prefix}: {text}" for prefix, text in status.contexts.items()]
    return "\n".join(lines)


@_safe
def check_report(report: CheckReport, as_json: bool) -> str:
    """Render `needle check`: what each store held, then every problem and the way out, or that all is sound."""
    if as_json:
        return _json(report)
    lines = [f"{role}: {found['points']} points read with their vectors" for role, found in report.stores.items()]
    repaired = report.repaired
    if repaired:
        lines.append(
            f"repaired: {repaired.reindexed} lost files indexed again ({repaired.chunks_embedded} chunks embedded), "
            f"{repaired.orphans_deleted} orphaned points deleted"
        )
    if report.problems:
        damaged = report.damaged
        lines += [
            problem if problem.startswith(("lost: ", "orphaned: ")) else f"damaged: {problem}"
            for problem in report.problems
        ]
        if damaged:
            lines.append(
                "run `needle index --rebuild` to rebuild the index from your notes (a damaged store is moved aside)"
            )
        else:
            lines.append(
                f"{len(report.lost)} files lost data, {len(report.orphaned)} files left orphaned data: "
                "the next `needle index` reads the lost files again and drops the orphans; `needle check --repair` does it now"
            )
    else:
        lines.append(f"the index is sound (read in {report.seconds} s)")
    return "\n".join(lines)


def _watcher_line(watcher: dict[str, Any]) -> str:
    """The watcher's state in one line (and its last error, when there is one)."""
    state = "running" if watcher["running"] else "stopped"
    busy = ", indexing" if watcher.get("indexing") else ""
    line = f"watcher: {state}{busy}, {watcher['queue']} queued, last update {watcher['last_update'] or 'none yet'}"
    if watcher.get("last_skipped"):
        line += f", {len(watcher['last_skipped'])} skipped"
    error = watcher.get("last_error")
    if error:
        line += f"\n  last error ({error['time']}): {error['message']}"
    return line


@_safe
def backup_report(report: BackupReport, command: str, as_json: bool) -> str:
    """Render `needle backup` and `needle restore`."""
    if as_json:
        return _json(report)
    counts = f"{report.chunks} chunks, {report.files} files"
    where = report.path
    if report.kind == "server":
        names = ", ".join(f"{s['collection']}: {s['name']}" for s in (report.snapshots or {}).values())
        where += f" (snapshots on {report.url}: {names})"
    if command == "backup":
        return f"backed up {counts} to {where} in {report.seconds} s"
    return f"restored {counts} from {where}"


@_safe
def optimize_report(report: OptimizeReport, as_json: bool) -> str:
    """Render `needle optimize`."""
    if as_json:
        return _json(report)
    if not report.changed:
        return f"the index is laid out as configured ({report.seconds} s)"
    applied = ", ".join(f"{key} → {change['config']}" for key, change in report.applied.items())
    return f"index optimised in {report.seconds} s" + (f": {applied}" if applied else "")


@_safe
def file_list(files: list[IndexedFile], as_json: bool) -> str:
    """Render `needle ls`: one indexed file per line."""
    if as_json:
        return json.dumps([f.model_dump(mode="json") for f in files], indent=2, ensure_ascii=False)
    if not files:
        return "no indexed files (run `needle index`)"
    return "\n".join(f"{_name(f.collection + '/' + f.path)}\t{f.chunks} chunks\t{_name(f.title)}" for f in files)


@_safe
def link_report(report: LinkReport, as_json: bool) -> str:
    """Render `needle links`: the note's outgoing links, then its backlinks, one per line with its anchor."""
    if as_json:
        return report.model_dump_json(indent=2)

    def outgoing(link: LinkEntry) -> str:
        where = f"#{link.heading}" if link.heading else f"#^{link.block}" if link.block else ""
        target = f"{link.target}{where}" if link.target else f"{link.written or link.raw} (unresolved)"
        return f"  {_name(str(link.line))}\t{'embeds ' if link.embed else ''}{_name(target)}"

    lines = [f"{_name(report.collection + '/' + report.path)}", f"links ({len(report.outgoing)}):"]
    lines += [outgoing(link) for link in report.outgoing] or ["  none"]
    lines.append(f"backlinks ({len(report.backlinks)}):")
    lines += [f"  {_name(link.anchor)}\t{_name(link.raw)}" for link in report.backlinks] or ["  none"]
    return "\n".join(lines)


@_safe
def related_report(report: RelatedReport, as_json: bool) -> str:
    """Render `needle related`: one related note per line, its score and its reasons."""
    if as_json:
        return report.model_dump_json(indent=2)
    lines = [f"notes related to {_name(report.collection + '/' + report.path)}:"]
    lines += [f"  {note.score:.2f}  {_name(note.anchor)}\t{_name(', '.join(note.reasons))}" for note in report.related]
    return "\n".join(lines if report.related else [*lines, "  none"])


def file_text(text: FileText) -> str:
    """Render `needle get`: the exact text when standard output is piped, its control characters escaped on a terminal."""
    import sys

    if not sys.stdout.isatty():
        return text.text
    # On a terminal, where it cannot end up in a file, a last line says how many notes link here.
    count = f"\n── {text.backlinks} backlinks: needle links {text.collection}/{text.path}" if text.backlinks else ""
    return terminal_safe(text.text) + terminal_safe(count)


@_safe
def file_batch(batch: FileBatch, as_json: bool) -> str:
    """Render `needle multi-get`: each file under a `==> collection/path <==` header, then what was skipped."""
    if as_json:
        return batch.model_dump_json(indent=2)
    parts = [f"==> {_name(f.collection + '/' + f.path)} <==\n{f.text}" for f in batch.files]
    parts += [f"skipped {_name(s.path)}: {_name(s.reason)}" for s in batch.skipped]
    return "\n\n".join(parts) if parts else "no file matched"


__all__ = [
    "FORMATS",
    "answer_text",
    "backup_report",
    "check_report",
    "file_batch",
    "file_list",
    "file_text",
    "index_report",
    "optimize_report",
    "search_answer",
    "status_text",
    "terminal_safe",
]
