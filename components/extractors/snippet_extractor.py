"""Line-anchored snippets with a diff-style header."""

import json
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._scores import lowered_term_hits, query_terms
from haystack_integrations.components.needle._text import is_content
from needle.core.documents import replace


@component
class SnippetExtractor:
    """
    Cuts a snippet around the line of a chunk that best matches the query, headed
    `@@ -start,count +start,count @@ collection/path`, with line numbers of the file on disk.

    A chunk can be a dozen lines; people and agents want the few that matter and a citation they can open
    at the right line (`needle get path:start:count`). The best line is the one that says something (not
    blank, not only a heading, a code fence or a rule) with the most distinct query terms (then word
    stems, then occurrences; the chunk's first such line when none match); the snippet takes
    `context_lines` on each side, within the chunk, at most `max_lines` in all, without blank, heading or
    fence lines at either end. Haystack has no such stage.

    A chunk of a converted document names its anchor in the header: a PDF's page, with lines counted
    within the extracted page text (`@@ page 3 -12,5 +12,5 @@ papers/raft.pdf`, read back with
    `needle get papers/raft.pdf#page=3:12:5`), and a DOCX or HTML file's section as a JSON string
    (`@@ section "Rollout › Canary" -7,4 +7,4 @@ specs/deploy.docx`, lines of the extracted text).

    Usage example:
    ```python
    SnippetExtractor(max_lines=10, context_lines=2).run(documents=results, query="slot lag")
    # meta["snippet"] == "@@ -14,5 +14,5 @@ notes/ops/replication.md\\n..."
    ```
    """

    def __init__(self, max_lines: int = 10, context_lines: int = 2, max_chars: int | None = None) -> None:
        """
        Create the extractor.

        :param max_lines: Longest snippet, in lines.
        :param context_lines: Lines kept before and after the best line.
        :param max_chars: Longest snippet in characters: context lines are added (after, then before, nearest
            first) only while they fit; the best line is kept whole. `None` for no limit.
        :raises ValueError: When `max_lines` < 1, `context_lines` < 0 or `max_chars` < 1.
        """
        if max_lines < 1:
            raise ValueError(f"max_lines must be > 0, got {max_lines}")
        if context_lines < 0:
            raise ValueError(f"context_lines must be >= 0, got {context_lines}")
        if max_chars is not None and max_chars < 1:
            raise ValueError(f"max_chars must be > 0, got {max_chars}")
        self.max_lines = max_lines
        self.context_lines = context_lines
        self.max_chars = max_chars

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self, max_lines=self.max_lines, context_lines=self.context_lines, max_chars=self.max_chars
        )

    def _window(self, lines: list[str], best: int) -> tuple[int, int]:
        """The lines around `best` the snippet shows, as `[start, end)`."""
        if self.max_chars is None:
            start = max(0, best - min(self.context_lines, (self.max_lines - 1) // 2))  # the best line stays inside
            return start, min(len(lines), best + self.context_lines + 1, start + self.max_lines)
        start, end, used = best, best + 1, len(lines[best]) + 1
        for step in range(1, self.context_lines + 1):
            for index in (best + step, best - step):
                fits = used + len(lines[index]) + 1 <= self.max_chars if 0 <= index < len(lines) else False
                if fits and end - start < self.max_lines and index in (end, start - 1):
                    start, end, used = min(start, index), max(end, index + 1), used + len(lines[index]) + 1
        return start, end

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SnippetExtractor":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def snippet(self, doc: Document, terms: list[str]) -> dict[str, Any]:
        """The snippet of one chunk: header, text, first line and line count."""
        lines = (doc.content or "").split("\n")
        while len(lines) > 1 and not lines[-1].strip():
            lines.pop()
        first_line = int(doc.meta.get("start_line", 1))

        best = best_line(lines, terms)
        start, end = self._window(lines, best)
        while start < best and not is_content(lines[start]):
            start += 1
        while end - 1 > best and not is_content(lines[end - 1]):
            end -= 1
        count = end - start
        line = first_line + start
        where = f"{doc.meta.get('collection', '')}/{doc.meta.get('path', '')}".lstrip("/")
        header = f"@@ {_section(doc.meta)}-{line},{count} +{line},{count} @@ {where}"
        if doc.meta.get("page") is not None:
            page_line = int(doc.meta.get("page_line") or 1) + start
            header = f"@@ page {doc.meta['page']} -{page_line},{count} +{page_line},{count} @@ {where}"
        return {"text": header + "\n" + "\n".join(lines[start:end]), "start_line": line, "lines": count}

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], query: str) -> dict[str, list[Document]]:
        """
        Add `meta["snippet"]` (text with header), `meta["snippet_line"]` and `meta["snippet_lines"]`.

        :param documents: Result chunks with `start_line`, `collection` and `path` in meta.
        :param query: The user's query.
        :returns: A dictionary with `documents`.
        """
        terms = query_terms(query)
        out = []
        for doc in documents:
            s = self.snippet(doc, terms)
            meta = {**doc.meta, "snippet": s["text"], "snippet_line": s["start_line"], "snippet_lines": s["lines"]}
            out.append(replace(doc, meta=meta))
        return {"documents": out}


def _stems(terms: list[str]) -> list[str]:
    """The first five letters of the longer terms, so that `renewing` finds `renewal` and `backups` `backup`."""
    return sorted({t[:5] for t in terms if len(t) >= 6})


def best_line(lines: list[str], terms: list[str]) -> int:
    """
    The index of the line that best matches the query: among lines that say something (`is_content`), the
    one with the most distinct terms, then stems, then occurrences, then the earliest; the first such line
    when none matches, the first line when none says anything.
    """
    content = [i for i, line in enumerate(lines) if is_content(line)]
    if not content:
        return 0
    stems = _stems(terms)

    def rank(i: int) -> tuple[int, int, int, int]:
        lowered = lines[i].lower()  # once, for the terms and the stems
        distinct, total = lowered_term_hits(lowered, terms)
        return distinct, lowered_term_hits(lowered, stems)[0], total, -i

    ranked = [rank(i) for i in content]
    best = max(ranked)
    return -best[3] if best[:3] != (0, 0, 0) else content[0]


def _section(meta: dict[str, Any]) -> str:
    """The section of a converted DOCX or HTML chunk, as the header names it ("" for other chunks)."""
    if meta.get("format") in ("docx", "html") and meta.get("heading_path"):
        return f"section {json.dumps(' › '.join(meta['heading_path']), ensure_ascii=False)} "
    return ""
