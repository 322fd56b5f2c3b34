"""The requests Needle takes (search, answer, get, multi-get), declared once: each field's name, type, default,
limits and one-line description.

Every surface is built from these tuples: the CLI's flags (`needle.shells.cli`), the MCP tools' arguments models
(`needle.core.arguments`), the HTTP routes' signatures and schemas (`needle.shells.http.endpoints.takes`), the remote
client's payloads (`needle.owner.remote`) and the limits the `SearchRequest` component checks
(`haystack_integrations.components.query.needle.search_request`). Plain data and the standard library only: the thin client builds its parser
from it without importing pydantic or Haystack. To add a filter, add a `Param` to `FILTERS` and read it in
`SearchRequest`; every surface then offers it with the same name, description and limits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

# One value per limit; every surface and the `SearchRequest` component read these.
MAX_QUERY_CHARS = 2000
MAX_LIMIT = 1000
DEFAULT_LIMIT = 10
MAX_REF_CHARS = 1024
MAX_LINES = 100_000
MAX_BYTES = 1_000_000
DEFAULT_MAX_BYTES = 20_000  # multi-get's per-file cap on every surface (the CLI's was 100,000 until it joined them)
MAX_COLLECTION_CHARS = 64
MAX_TAG_CHARS = 100
MIN_WHERE_CHARS = 3
MAX_WHERE_CHARS = 300
MAX_DATE_CHARS = 100
MAX_RUN_INPUT_CHARS = 200


@dataclass(frozen=True)
class Param:
    """
    One field of a request, as every surface offers it.

    :param name: Its name in HTTP bodies, MCP arguments and the CLI's parsed arguments.
    :param kind: `str`, `int`, `float`, `bool`, `list` (of text) or `dict` (text keys).
    :param help: One line: the CLI's help, the HTTP and MCP description.
    :param default: The value when none is sent; `None` for an optional one the graph or facade decides.
    :param required: Whether a request must name it.
    :param low: Smallest number accepted.
    :param high: Largest number accepted.
    :param min_chars: Shortest text accepted (each item of a list).
    :param max_chars: Longest text accepted (each item of a list).
    :param max_items: Most items of a list accepted (a list sent must then hold one at least).
    :param graph: The query graph's request input it feeds (`top_k` for `limit`), or `None`.
    :param flags: The CLI's option strings (default `--name` with dashes); empty for a positional argument.
    :param metavar: The CLI's placeholder for the value.
    :param nargs: The CLI's word count of a positional argument (`+`: the words, joined by spaces).
    :param cli: Whether the CLI takes it as a flag (a CLI may spell a field its own way, e.g. `get PATH:LINE`).
    :param http: Whether the HTTP route takes it.
    :param mcp: Whether the MCP tool takes it.
    """

    name: str
    kind: type
    help: str
    default: Any = None
    required: bool = False
    low: float | None = None
    high: float | None = None
    min_chars: int | None = None
    max_chars: int | None = None
    max_items: int | None = None
    graph: str | None = None
    flags: tuple[str, ...] | None = None
    metavar: str | None = None
    nargs: str | None = None
    cli: bool = True
    http: bool = True
    mcp: bool = True

    @property
    def option_strings(self) -> tuple[str, ...]:
        """The CLI's option strings; empty for a positional argument."""
        return ("--" + self.name.replace("_", "-"),) if self.flags is None else self.flags

    def limits(self) -> str:
        """The limits in words, e.g. `1 to 1000` or `each 1 to 100 characters` (empty without any)."""
        if self.low is not None and self.high is not None:
            return f"{number(self.low)} to {number(self.high)}"
        if self.low is not None:
            return f">= {number(self.low)}"
        if self.max_chars is None:
            return ""
        each = "each " if self.kind is list else "keys " if self.kind is dict else ""
        low = self.min_chars or 0
        return (
            f"{each}{low} to {self.max_chars} characters" if low > 1 else f"{each}at most {self.max_chars} characters"
        )

    def refusal(self, value: Any) -> str | None:
        """
        Why `value` is not one this field takes, in one line naming the field, or `None` when it is.

        `None` is taken for a field that is not required (it means "not sent").
        """
        if value is None:
            return f"{self.name} is required" if self.required else None
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        if self.kind is bool:
            return None if isinstance(value, bool) else f"{self.name} must be true or false, got {shown}"
        if self.kind in (int, float):
            return self._number_refusal(value, shown)
        if self.kind is dict:
            if not isinstance(value, dict):
                return f"{self.name} must be an object, got {shown}"
            texts = list(value)
        elif self.kind is list:
            if not isinstance(value, list):
                return f"{self.name} must be a list of text, got {shown}"
            if self.max_items is not None and not 1 <= len(value) <= self.max_items:
                return f"{self.name} must hold 1 to {self.max_items} items, got {len(value)}"
            texts = value
        else:
            texts = [value]
        for text in texts:
            if not isinstance(text, str):
                return f"{self.name} must be {'a list of text' if self.kind is list else 'text'}, got {shown}"
            if len(text) < (self.min_chars or 0) or (self.max_chars is not None and len(text) > self.max_chars):
                return f"{self.name} must be {self.limits()}, got {len(text)}: {shown}"
        return None

    def _number_refusal(self, value: Any, shown: str) -> str | None:
        """Why `value` is not a number this field takes (`shown` is how the refusal quotes it), or `None`."""
        number = (int,) if self.kind is int else (int, float)
        if isinstance(value, bool) or not isinstance(value, number):
            return f"{self.name} must be {'an integer' if self.kind is int else 'a number'}, got {shown}"
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            return f"{self.name} must be {self.limits()}, got {shown}"
        return None


def number(value: float) -> str:
    """A limit or default as people write it: `1000000`, `0`, `0.5`."""
    return str(int(value)) if float(value).is_integer() else str(value)


def named(params: tuple[Param, ...]) -> dict[str, Param]:
    """A request's fields by name."""
    return {p.name: p for p in params}


# ---- search ------------------------------------------------------------------------------------------
QUERY_TEXT = Param(
    "query",
    str,
    "Words or a question",
    required=True,
    min_chars=1,
    max_chars=MAX_QUERY_CHARS,
    graph="query",
    flags=(),
    nargs="+",
)
COLLECTIONS = Param(
    "collections",
    list,
    "Only these collections (names from status)",
    min_chars=1,
    max_chars=MAX_COLLECTION_CHARS,
    graph="collections",
    flags=("-c", "--collection"),
    metavar="NAME",
)
LIMIT = Param(
    "limit",
    int,
    "How many results",
    default=DEFAULT_LIMIT,
    low=1,
    high=MAX_LIMIT,
    graph="top_k",
    flags=("-n",),
    metavar="N",
)
MIN_SCORE = Param("min_score", float, "Drop results scoring below this", default=0.0, low=0.0, graph="min_score")
FULL = Param(
    "full", bool, "Add each result's whole chunk as text (default: snippet only)", default=False, cli=False, http=False
)
CHUNKS = Param("chunks", bool, "Every matching chunk, not one result per file", default=False, graph="chunks")
EXPLAIN = Param("explain", bool, "Add each result's rank and score at every stage", default=False)
FILTERS = (
    Param(
        "tags",
        list,
        "Only notes with all these tags",
        min_chars=1,
        max_chars=MAX_TAG_CHARS,
        graph="tags",
        flags=("--tag",),
        metavar="TAG",
    ),
    Param(
        "tags_any",
        list,
        "Only notes with at least one of these tags",
        min_chars=1,
        max_chars=MAX_TAG_CHARS,
        graph="tags_any",
        flags=("--tag-any",),
        metavar="TAG",
    ),
    Param(
        "tags_none",
        list,
        "Only notes with none of these tags",
        min_chars=1,
        max_chars=MAX_TAG_CHARS,
        graph="tags_none",
        flags=("--tag-none",),
        metavar="TAG",
    ),
    Param(
        "path",
        str,
        "Only notes under this folder (runbooks/) or glob",
        min_chars=1,
        max_chars=MAX_REF_CHARS,
        graph="path",
        metavar="FOLDER|GLOB",
    ),
    Param(
        "where",
        list,
        "Frontmatter conditions: status=draft, priority>=2, a|b",
        min_chars=MIN_WHERE_CHARS,
        max_chars=MAX_WHERE_CHARS,
        graph="where",
        metavar="FIELD=VALUE",
    ),
    Param(
        "after",
        str,
        "Only notes dated on or after: 2024-05-01, last week",
        min_chars=1,
        max_chars=MAX_DATE_CHARS,
        graph="after",
        metavar="DATE",
    ),
    Param(
        "before",
        str,
        "Only notes dated before this",
        min_chars=1,
        max_chars=MAX_DATE_CHARS,
        graph="before",
        metavar="DATE",
    ),
    Param("recent", bool, "Rank newer notes higher (default: if the query asks)", graph="recent"),
    Param("self_query", bool, "Read filters out of the query text (default on)", graph="self_query"),
)
RUN_INPUTS = Param(
    "set",
    dict,
    'Graph run inputs, e.g. {"bm25_retriever.top_k": 80}',
    max_chars=MAX_RUN_INPUT_CHARS,
    cli=False,
)
SWITCHES = (
    Param("expand", bool, "Query expansion on/off (default: configured)", graph="expand"),
    Param("rerank", bool, "Reranking on/off (default: configured)", graph="rerank"),
    Param("decompose", bool, "Split a multi-part question into parts searched together", graph="decompose"),
)
SEARCH = (
    replace(QUERY_TEXT, help='Words to find; #tag, in:folder/, field:value, "phrase", -word, dates work'),
    COLLECTIONS,
    LIMIT,
    MIN_SCORE,
    FULL,
    CHUNKS,
    EXPLAIN,
    *FILTERS,
    RUN_INPUTS,
)
VSEARCH = (replace(QUERY_TEXT, help="A question or description; notes may use other words"), *SEARCH[1:])
QUERY = (QUERY_TEXT, *SEARCH[1:], *SWITCHES)
SEARCHES = {"search": SEARCH, "vsearch": VSEARCH, "query": QUERY}

# ---- answer (HTTP and CLI; agents answer for themselves) -----------------------------------------------
ANSWER = (
    replace(QUERY_TEXT, name="question", help="The question; it is also the search", graph=None),
    COLLECTIONS,
    replace(LIMIT, help="How many chunks to give the LLM", default=None),
    replace(MIN_SCORE, help="Give the LLM no chunk scoring below this", default=None),
    *FILTERS,
    replace(SWITCHES[2], help="Split a multi-part question into sub-questions (default: on)"),
    Param("retry", bool, "Search again for what the citations do not cover, and answer again (default: off)"),
)

# ---- index ---------------------------------------------------------------------------------------------
# The CLI names them its own way: `needle index NAME... --path PATH`.
INDEX = (
    replace(COLLECTIONS, help="Collections to index (default all)", graph=None, cli=False),
    Param(
        "paths",
        list,
        "Only these files: absolute or relative to a collection root",
        min_chars=1,
        max_chars=MAX_REF_CHARS,
        max_items=MAX_LIMIT,
        cli=False,
    ),
)

# ---- files -------------------------------------------------------------------------------------------
GET = (
    Param(
        "ref",
        str,
        "A result's path (collection/path), #docid or anchor",
        required=True,
        min_chars=1,
        max_chars=MAX_REF_CHARS,
        flags=(),
    ),
    Param("from_line", int, "First line to return (1-based)", default=1, low=1, cli=False),
    Param("max_lines", int, "How many lines (default: to the end)", low=1, high=MAX_LINES, cli=False),
)
MULTI_GET = (
    Param(
        "pattern",
        str,
        "A glob over collection/path, e.g. notes/howto/*.md (or give refs)",
        min_chars=1,
        max_chars=MAX_REF_CHARS,
        cli=False,
    ),
    Param(
        "refs", list, "Paths or #docids from results (or give pattern)", min_chars=1, max_chars=MAX_REF_CHARS, cli=False
    ),
    Param(
        "max_bytes",
        int,
        "Larger files are listed under skipped, not read",
        default=DEFAULT_MAX_BYTES,
        low=1,
        high=MAX_BYTES,
    ),
)

__all__ = [
    "ANSWER",
    "COLLECTIONS",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_BYTES",
    "FILTERS",
    "GET",
    "INDEX",
    "LIMIT",
    "MAX_BYTES",
    "MAX_COLLECTION_CHARS",
    "MAX_DATE_CHARS",
    "MAX_LIMIT",
    "MAX_LINES",
    "MAX_QUERY_CHARS",
    "MAX_REF_CHARS",
    "MAX_RUN_INPUT_CHARS",
    "MAX_TAG_CHARS",
    "MAX_WHERE_CHARS",
    "MIN_SCORE",
    "MIN_WHERE_CHARS",
    "MULTI_GET",
    "QUERY",
    "SEARCH",
    "SEARCHES",
    "SWITCHES",
    "VSEARCH",
    "Param",
    "named",
    "number",
]
