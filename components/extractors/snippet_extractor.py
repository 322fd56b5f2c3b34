"""Line-anchored snippets on the lines that answer, with a diff-style header."""

import json
import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._answer_lines import Unit, line_scores, parsed, scores
from haystack_integrations.components.needle._text import is_content
from needle.core.documents import replace


@component
class SnippetExtractor:
    """
    Cuts a snippet around the lines of a chunk that answer the query, headed
    `@@ -start,count +start,count @@ collection/path`, with line numbers of the file on disk.

    A chunk can be a dozen lines; people and agents want the few that answer and a citation they can open at the
    right line (`needle get path:start:count`). The chunk's lines are read as whole units (a paragraph, a list
    item with the line that leads the list in, a table row with the table's header, a code block with the line
    introducing it, a heading; see `haystack_integrations.components.needle._answer_lines`) and the unit holding
    the query's rarest words wins (its first unit that says something when none does). The snippet shows that
    unit with what makes it readable, then the units after it and before it while they fit in `max_lines` lines
    and `max_chars` characters, then the section's heading right above them when it holds a query word and
    fits (it says what the lines below answer). A unit too long to fit shows its best lines (`context_lines`
    around the best one); a line too long to fit, its best sentences. A header or lead-in that is not next to
    its unit starts the snippet as a hunk of its own, each hunk with its own `@@` line, as in a diff. When
    `AnswerChunkSelector` passed on the file's next-best chunks (`meta["answer_also"]`), the answering unit of
    each (with its heading when that holds a query word) follows as hunks of its own while it fits in what is
    left of `max_lines` and `max_chars`, so a close call between two places in a note shows both.
    Haystack has no such stage.

    A chunk of a converted document names its anchor in the header: a PDF's page, with lines counted
    within the extracted page text (`@@ page 3 -12,5 +12,5 @@ papers/raft.pdf`, read back with
    `needle get papers/raft.pdf#page=3:12:5`), and a DOCX or HTML file's section as a JSON string
    (`@@ section "Rollout › Canary" -7,4 +7,4 @@ specs/deploy.docx`, lines of the extracted text).

    Usage example:
    ```python
    SnippetExtractor(max_lines=8, max_chars=400).run(documents=results, query="slot lag")
    # meta["snippet"] == "@@ -14,5 +14,5 @@ notes/ops/replication.md\\n..."
    ```
    """

    def __init__(self, max_lines: int = 10, context_lines: int = 2, max_chars: int | None = None) -> None:
        """
        Create the extractor.

        :param max_lines: Longest snippet, in lines (its `@@` lines not counted).
        :param context_lines: Lines kept before and after the best line of a unit too long to show whole.
        :param max_chars: Longest snippet in characters (its `@@` lines not counted): units are added only while
            they fit, and a line longer than this shows its best sentences. `None` for no limit.
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

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SnippetExtractor":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def snippet(self, doc: Document, query: str) -> dict[str, Any]:
        """The snippet of one chunk: text (with its `@@` lines), first line shown and count of lines shown."""
        lines, found = _read(doc.content or "")
        shown: dict[int, str] = {}
        if found:
            title = str(doc.meta.get("title") or "")
            answer = doc.meta.get("answer_line")
            holding = [i for i, u in enumerate(found) if isinstance(answer, int) and u.first <= answer <= u.last]
            if holding:
                best = holding[0]
            else:
                answer = None
                ranked = scores(lines, found, query, title)
                best = max(range(len(found)), key=lambda i: (ranked[i], -i))
                if ranked[best] <= 0:
                    best = next((i for i, u in enumerate(found) if u.kind != "heading"), 0)
            shown = self._grow(lines, found, best, query, title, answer)
        if not shown:
            shown = {0: lines[0]}
        first_line = int(doc.meta.get("start_line", 1))
        hunks = _hunks(lines, shown)
        text = "\n".join("\n".join([self._header(doc.meta, start, len(body)), *body]) for start, body in hunks)
        count = sum(len(b) for _, b in hunks)
        chars = sum(len(x) + 1 for _, b in hunks for x in b)
        for also in doc.meta.get("answer_also") or []:
            more = self._also(also, doc.meta, query, count, chars)
            if more:
                text, count, chars = f"{text}\n{more[0]}", count + more[1], chars + more[2]
        return {"text": text, "start_line": first_line + hunks[0][0], "lines": count}

    def _also(
        self, also: dict[str, Any], meta: dict[str, Any], query: str, used_lines: int, used_chars: int
    ) -> tuple[str, int, int] | None:
        """
        The answering unit of one of the file's next-best chunks (an entry of `meta["answer_also"]`, from
        `AnswerChunkSelector`) as hunks of their own with their lines shown and characters, when it fits in the
        lines and characters the snippet has left; `None` when it does not.
        """
        room = SnippetExtractor(
            max_lines=max(self.max_lines - used_lines, 1),
            context_lines=self.context_lines,
            max_chars=None if self.max_chars is None else max(self.max_chars - used_chars, 1),
        )
        lines, found = _read(str(also.get("content") or ""))
        answer = also.get("answer_line")
        holding = [u for u in found if isinstance(answer, int) and u.first <= answer <= u.last]
        if self.max_lines - used_lines < 1 or not holding:
            return None
        unit = holding[0]
        title = str(meta.get("title") or "")
        whole = {i: lines[i] for i in (*unit.context, *range(unit.first, unit.last + 1))}
        shown = whole if room._fits(lines, whole) else room._cut(lines, unit, query, title, answer)
        if not room._fits(lines, shown) or answer not in shown:
            return None
        above = found.index(unit) - 1
        if above >= 0 and found[above].kind == "heading" and self._names_query(lines, found[above], query):
            titled = {**shown, found[above].first: lines[found[above].first]}
            if len(_hunks(lines, titled)) == len(_hunks(lines, shown)) and room._fits(lines, titled):
                shown = titled
        where = {**meta, **{k: v for k, v in also.items() if k not in ("content", "answer_line")}}
        hunks = _hunks(lines, shown)
        text = "\n".join("\n".join([self._header(where, start, len(body)), *body]) for start, body in hunks)
        return text, sum(len(b) for _, b in hunks), sum(len(x) + 1 for _, b in hunks for x in b)

    def _grow(
        self, lines: list[str], found: list[Unit], best: int, query: str, title: str, answer: int | None = None
    ) -> dict[int, str]:
        """The lines shown (index → text): the best unit, then its neighbours while they fit."""
        unit = found[best]
        whole = {i: lines[i] for i in (*unit.context, *range(unit.first, unit.last + 1))}
        shown = whole if self._fits(lines, whole) else self._cut(lines, unit, query, title, answer)
        # Neighbours one at a time, after then before, so that the items either side of an answering list item
        # both have their turn; a direction ends at a heading (another section after, the section's title before)
        # or at the first unit that does not fit, of which only the head of one after is shown (a code block's
        # first lines).
        nearest = {1: best + 1, -1: best - 1}
        heading: Unit | None = None  # the heading the lines shown run up to
        while nearest:
            for step in (1, -1):
                index = nearest.get(step)
                if index is None:
                    continue
                if not 0 <= index < len(found) or found[index].kind == "heading":
                    del nearest[step]
                    if step == -1 and index >= 0:
                        heading = found[index]
                    continue
                neighbour = found[index]
                wider = {
                    **shown,
                    **{i: lines[i] for i in (*neighbour.context, *range(neighbour.first, neighbour.last + 1))},
                }
                if self._fits(lines, wider):
                    shown = wider
                    nearest[step] = index + step
                    continue
                del nearest[step]
                if self._centre(lines, neighbour, query, title)[1] > 0:
                    # a neighbour too long to show whole that holds the query's words: its best lines, if they fit
                    part = self._cut(lines, neighbour, query, title, base=shown)
                    if self._fits(lines, part):
                        shown = part
                        continue
                if step == 1:
                    for i in range(neighbour.first, neighbour.last):
                        if not self._fits(lines, {**shown, i: lines[i]}):
                            break
                        shown = {**shown, i: lines[i]}
        if heading is not None and self._names_query(lines, heading, query):
            # the section's heading, when it names what was asked, says the lines below it answer that; shown
            # when there is room left, right above the lines shown
            titled = {**shown, heading.first: lines[heading.first]}
            if len(_hunks(lines, titled)) == len(_hunks(lines, shown)) and self._fits(lines, titled):
                shown = titled
        return shown

    def _cut(
        self,
        lines: list[str],
        unit: Unit,
        query: str,
        title: str,
        answer: int | None = None,
        base: dict[int, str] | None = None,
    ) -> dict[int, str]:
        """
        The best lines of a unit too long to show whole: its best line, then neighbours and its context while they
        fit beside the lines `base` already shows (returned with them).
        """
        centre = self._centre(lines, unit, query, title, answer)[0]
        shown = {**(base or {}), centre: lines[centre]}
        if not self._fits(lines, shown):
            return {**(base or {}), centre: self._sentences(lines[centre], query, title)}
        for extra in (*_children(lines, centre, unit), *unit.context, *_parents(lines, centre, unit)):
            wider = {**shown, extra: lines[extra]}
            if self._fits(lines, wider):
                shown = wider
        for extra in _around(centre, unit, self.context_lines):
            wider = {**shown, extra: lines[extra]}
            if self._fits(lines, wider):
                shown = wider
        return shown

    @staticmethod
    def _names_query(lines: list[str], heading: Unit, query: str) -> bool:
        """Whether a heading holds one of the query's words (the note's own title included)."""
        return line_scores([lines[heading.first]], query)[0] > 0

    @staticmethod
    def _centre(lines: list[str], unit: Unit, query: str, title: str, answer: int | None = None) -> tuple[int, float]:
        """The line of a unit that answers best (`answer` when it is in the unit) and its score for the query."""
        inside = list(range(unit.first, unit.last + 1))
        ranked = line_scores([lines[i] for i in inside], query, title)
        content = [k for k, i in enumerate(inside) if is_content(lines[i])] or [0]
        best = max(content, key=lambda k: (ranked[k], -k))
        if answer is not None and unit.first <= answer <= unit.last:
            return answer, ranked[answer - unit.first]
        if ranked[best] <= 0:
            best = content[0]
        return inside[best], ranked[best]

    def _sentences(self, line: str, query: str, title: str) -> str:
        """The best sentences of a line longer than `max_chars`, `…` where the line goes on."""
        limit = self.max_chars or len(line)
        parts = [p for p in re.split(r"(?<=[.!?;])\s+", line) if p]
        ranked = line_scores(parts, query, title)
        best = max(range(len(parts)), key=lambda k: (ranked[k], -k))
        start, end = best, best + 1
        while True:
            grown = False
            for candidate in ((start, end + 1), (start - 1, end)):
                inside = candidate[0] >= 0 and candidate[1] <= len(parts)
                if inside and len(" ".join(parts[candidate[0] : candidate[1]])) + 2 <= limit:
                    start, end, grown = candidate[0], candidate[1], True
                    break
            if not grown:
                break
        text = " ".join(parts[start:end])
        if len(text) > limit:
            text = text[: max(limit - 1, 1)].rstrip()
        return ("… " if start > 0 else "") + text + (" …" if end < len(parts) or len(text) < len(parts[start]) else "")

    def _fits(self, lines: list[str], shown: dict[int, str]) -> bool:
        """Whether lines shown (with the blank lines between them) stay within `max_lines` and `max_chars`."""
        body = [text for _, texts in _hunks(lines, shown) for text in texts]
        chars = sum(len(text) + 1 for text in body)
        return len(body) <= self.max_lines and (self.max_chars is None or chars <= self.max_chars + 1)

    @staticmethod
    def _header(meta: dict[str, Any], start: int, count: int) -> str:
        """The `@@` line of a hunk starting at line `start` of the chunk and showing `count` lines."""
        line = int(meta.get("start_line", 1)) + start
        where = f"{meta.get('collection', '')}/{meta.get('path', '')}".lstrip("/")
        if meta.get("page") is not None:
            page_line = int(meta.get("page_line") or 1) + start
            return f"@@ page {meta['page']} -{page_line},{count} +{page_line},{count} @@ {where}"
        return f"@@ {_section(meta)}-{line},{count} +{line},{count} @@ {where}"

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], query: str) -> dict[str, list[Document]]:
        """
        Add `meta["snippet"]` (text with header), `meta["snippet_line"]` and `meta["snippet_lines"]`; drop
        `meta["answer_also"]`, read here.

        :param documents: Result chunks with `start_line`, `collection` and `path` in meta.
        :param query: The user's query.
        :returns: A dictionary with `documents`.
        """
        out = []
        for doc in documents:
            s = self.snippet(doc, query)
            meta = {key: value for key, value in doc.meta.items() if key != "answer_also"}
            meta.update({"snippet": s["text"], "snippet_line": s["start_line"], "snippet_lines": s["lines"]})
            out.append(replace(doc, meta=meta))
        return {"documents": out}


def _read(content: str) -> tuple[list[str], list[Unit]]:
    """A chunk's lines (blank lines at its end left out) and their units."""
    lines = content.split("\n")
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    kept, found, _ = parsed("\n".join(lines))
    return list(kept), list(found)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _children(lines: list[str], centre: int, unit: Unit) -> list[int]:
    """The lines after `centre` indented deeper than it (a config entry's settings, a nested list), in order."""
    found = []
    for index in range(centre + 1, unit.last + 1):
        if lines[index].strip() and _indent(lines[index]) <= _indent(lines[centre]):
            break
        found.append(index)
    return found


def _parents(lines: list[str], centre: int, unit: Unit) -> list[int]:
    """The lines above `centre` each indented less than the one below it (the keys it sits under), nearest first."""
    found, depth = [], _indent(lines[centre])
    for index in range(centre - 1, unit.first - 1, -1):
        if lines[index].strip() and _indent(lines[index]) < depth:
            found.append(index)
            depth = _indent(lines[index])
    return found


def _around(centre: int, unit: Unit, count: int) -> list[int]:
    """The lines of a unit around `centre`, nearest first (after before before), at most `count` on each side."""
    order: list[int] = []
    for step in range(1, count + 1):
        order.extend(i for i in (centre + step, centre - step) if unit.first <= i <= unit.last)
    return order


def _hunks(lines: list[str], shown: dict[int, str]) -> list[tuple[int, list[str]]]:
    """
    The lines shown as runs of consecutive lines (start index, texts), blank lines between two shown lines
    filled in, blank lines at either end of a run left out.
    """
    hunks: list[tuple[int, list[str]]] = []
    previous = None
    for index in sorted(shown):
        gap = range(previous + 1, index) if previous is not None else range(0)
        if previous is not None and all(not lines[i].strip() for i in gap):
            hunks[-1][1].extend([lines[i] for i in gap] + [shown[index]])
        else:
            hunks.append((index, [shown[index]]))
        previous = index
    trimmed = []
    for start, body in hunks:
        while len(body) > 1 and not body[0].strip():
            body, start = body[1:], start + 1
        while len(body) > 1 and not body[-1].strip():
            body = body[:-1]
        trimmed.append((start, body))
    return trimmed


def _section(meta: dict[str, Any]) -> str:
    """The section of a converted DOCX or HTML chunk, as the header names it ("" for other chunks)."""
    if meta.get("format") in ("docx", "html") and meta.get("heading_path"):
        return f"section {json.dumps(' › '.join(meta['heading_path']), ensure_ascii=False)} "
    return ""
