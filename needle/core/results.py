"""What a search and an answer return, on every surface: CLI `--json`, HTTP, MCP and the remote client.

A query graph ends in chunk `Document`s; `hit()` shapes each as a `Hit`, the graph's trust label joins
them in a `SearchAnswer`, and an answer graph's output becomes an `Answer`. pydantic models, so hayhooks
and the MCP server derive their schemas from the same classes the CLI prints. The index's own commands
return the models of `needle.core.index_results`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from needle.core.file_formats import format_of
from needle.core.files.references import docid
from needle.core.schema import FILE_ID

if TYPE_CHECKING:
    from haystack import Document

LABELS = (
    "PASS (confident enough), NO_RESULTS (nothing relevant enough), IRRELEVANT (no result judged relevant) or "
    "HALLUCINATION_RISK (similar-looking results judged irrelevant, or an answer its citations do not cover: do not "
    "trust it)"
)
CONFIDENCE = (
    "How likely the top result answers the query, 0..1 (a probability fitted on judged queries; 0 without "
    "results); the label is PASS at or above the graph's threshold (`label.min_confidence`), so the two always agree"
)


class Hit(BaseModel):
    """One search result: the file, the lines of the matching chunk and its text."""

    docid: str = Field(description="Short id of the file, accepted by `get` as `#abc123`")
    collection: str
    path: str = Field(description="Path of the file inside its collection")
    title: str
    heading_path: list[str] = Field(description="Headings above the chunk, outermost first")
    start_line: int = Field(description="First line of the chunk in the file (1-based)")
    end_line: int = Field(description="Last line of the chunk in the file (inclusive)")
    score: float = Field(description="Final score (0..1 for search and vsearch; the rerank or fused score for query)")
    snippet: str = Field(
        description="Lines around the best match, headed `@@ -start,count +start,count @@ collection/path` "
        "(the chunk's text when the graph makes no snippets)"
    )
    text: str | None = Field(None, description="The whole matching chunk (MCP: only with `full`)")
    format: str = Field(
        "markdown", description="markdown, text, pdf, docx or html (PDF, DOCX and HTML as extracted text)"
    )
    page: int | None = Field(None, description="PDF: the page the chunk starts on (1-based)")
    page_end: int | None = Field(None, description="PDF: the page the chunk ends on")
    anchor: str = Field(
        "",
        description="A reference `get` reads the chunk's place with: `collection/path:start:count` (lines of "
        "the file, or of a document's extracted text), `collection/path#page=3:12:5` for a PDF (lines within the "
        "page), `collection/path#section=Setup › Linux` for a section of a DOCX or HTML file",
    )
    explain: dict[str, Any] | None = Field(None, description="Rank and score at every stage, when asked for")
    context: str | None = Field(
        None,
        description="What the user wrote about this file's collection and folders (`needle context add`), "
        "outermost first; null when nothing was written",
    )


class SelfQuery(BaseModel):
    """What the question itself said to filter by, and whether the search had to do without it."""

    original: str = Field(description="The question as asked")
    query: str = Field(description="The question the searches ran, without the words that only filtered")
    filters: dict[str, Any] = Field(
        description="Filters read from the question: tags, paths, collections, where, dates, after, before"
    )
    must_contain: list[str] = Field(description="Quoted phrases every result contains")
    must_not_contain: list[str] = Field(description="-terms no result contains")
    recent: bool = Field(description="Whether newer notes ranked higher")
    recent_from_question: bool = Field(description="Whether the question itself asked for the newest")
    min_results: int = Field(
        description="Fewer results than this with the question's filters make the search fall back"
    )
    applied: bool = Field(description="Whether filters were read from the question and applied")
    fallback: bool = Field(description="Whether the search also ran without the question's filters (too few results)")
    fallback_reason: str | None = Field(None, description="Why it fell back")
    llm: dict[str, Any] | None = Field(
        None, description="With an LLM extractor: what the model added to the rules' reading, or why it added nothing"
    )


class SearchAnswer(BaseModel):
    """Results and how far they can be trusted."""

    label: str = Field(description=LABELS)
    results: list[Hit]
    confidence: float | None = Field(None, description=CONFIDENCE)
    warnings: list[str] = Field(
        default_factory=list, description="What went wrong but did not stop the search (a stage that fell back)"
    )
    explain: dict[str, Any] | None = Field(
        None, description="When asked for: the confidence's signals and the sub-questions the query was split into"
    )
    self_query: SelfQuery | None = Field(
        None, description="What the question itself said to filter by (null when it said nothing of the kind)"
    )


class Answer(BaseModel):
    """An answer from the notes, with the chunks it was given and the ones it cites."""

    answer: str = Field(description="The LLM's answer, citing chunks as [path:start-end]")
    label: str = Field(description="The search's trust label: " + LABELS)
    results: list[Hit] = Field(description="Every chunk the LLM was given, best first")
    cited: list[Hit] = Field(description="The chunks the answer cites")
    unknown_citations: list[str] = Field(description="Citations of chunks the LLM was not given (path:start-end)")
    confidence: float | None = Field(
        None,
        description=CONFIDENCE.replace("top result answers the query", "answer is supported by the notes")
        + "; an answer's claim coverage lowers it",
    )
    coverage: float | None = Field(
        None, description="Share of the answer's claims (its sentences) that the chunks they cite support, 0..1"
    )
    retries: int = Field(
        0, description="How many times the answer was searched for again and rewritten to cover its claims"
    )
    uncovered_claims: list[str] = Field(
        default_factory=list, description="The answer's sentences its citations do not support"
    )
    sub_questions: list[str] = Field(default_factory=list, description="The parts a multi-part question was split into")
    warnings: list[str] = Field(default_factory=list, description="What went wrong but did not stop the answer")


def explain(meta: dict[str, Any], score: float) -> dict[str, Any]:
    """How a result got its place: rank and score at every stage that ran (from its metadata)."""
    stages: dict[str, Any] = {}
    if "fusion" in meta:
        stages["lists"] = {
            name: {"rank": entry["rank"] + 1, "score": entry.get("score"), "kind": entry.get("kind")}
            for name, entry in meta["fusion"].items()
        }
    if "raw_score" in meta:
        stages["raw_score"] = meta["raw_score"]
    for key in ("bonus", "term_hits", "hybrid", "rerank", "blend", "fused_score", "recency"):
        if key in meta:
            stages[key] = meta[key]
    stages["final_score"] = score
    return stages


def hit(doc: Document, with_explain: bool = False) -> Hit:
    """
    Shape a chunk `Document` from a graph as a `Hit`.

    :param doc: A chunk with Needle's metadata (collection, path, title, lines, snippet).
    :param with_explain: Add the per-stage trace.
    :returns: The hit.
    """
    meta = doc.meta
    score = float(doc.score or 0.0)
    text = doc.content or ""
    start, end = int(meta.get("start_line", 0)), int(meta.get("end_line", 0))
    return Hit(
        docid=f"#{docid(meta.get(FILE_ID, ''))}",
        collection=meta.get("collection", ""),
        path=meta.get("path", ""),
        title=meta.get("title", ""),
        heading_path=list(meta.get("heading_path", [])),
        start_line=start,
        end_line=end,
        score=score,
        snippet=meta.get("snippet") or text,
        text=text,
        explain=explain(meta, score) if with_explain else None,
        format=meta.get("format") or format_of(str(meta.get("path", ""))),
        page=meta.get("page"),
        page_end=meta.get("page_end"),
        anchor=anchor(meta, start, end),
    )


def anchor(meta: dict[str, Any], start: int, end: int) -> str:
    """The reference `get` reads a chunk's place with (see `Hit.anchor`)."""
    where = f"{meta.get('collection', '')}/{meta.get('path', '')}"
    count = max(end - start + 1, 1)
    if meta.get("page") is not None:
        page_line = int(meta.get("page_line") or 1)
        if meta.get("page_end", meta["page"]) != meta["page"]:
            return f"{where}#page={meta['page']}-{meta['page_end']}:{page_line}"
        return f"{where}#page={meta['page']}:{page_line}:{count}"
    if meta.get("format") in ("docx", "html") and meta.get("heading_path"):
        return f"{where}#section={' › '.join(meta['heading_path'])}"
    return f"{where}:{start}:{count}"


__all__ = ["Answer", "Hit", "SearchAnswer", "SelfQuery", "anchor", "docid", "explain", "hit"]
