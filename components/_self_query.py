"""The rules that read filters out of a question: tags, folders, fields, phrases, exclusions, dates, recency.

`SelfQueryExtractor` applies them; `LLMSelfQueryExtractor` applies them and asks a language model what they missed.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging

from haystack_integrations.components.needle._dates import period_range, reference_time, rfc3339
from haystack_integrations.components.needle._filters import (
    IndexedFiles,
    clean_tag,
    collection_condition,
    conjunction,
    date_conditions,
    path_condition,
    tag_conditions,
    where_condition,
)
from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.components.needle._vocabulary import IndexVocabulary
from haystack_integrations.document_stores.needle.access import searchable

logger = logging.getLogger(__name__)

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_RELATIVE = (
    r"(?:yesterday|today|this\s+(?:week|month|quarter|year)|last\s+(?:week|month|quarter|year)"
    r"|(?:the\s+)?(?:last|past)\s+\d{1,3}\s+(?:days?|weeks?|months?|years?)|\d{1,3}\s+(?:days?|weeks?|months?|years?)\s+ago"
    r"|an?\s+(?:week|month|year)\s+ago)"
)
_PREPOSITION = r"(since|after|from|before|until|till|in|during|on|of)"
# A date phrase: relative words, a month (with a day or year after it, or a preposition before it), an ISO
# date or month, a quarter, or a year after a preposition.
_DATE = re.compile(
    rf"(?<![\w-])(?:{_PREPOSITION}\s+)?("
    rf"{_RELATIVE}"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|{_MONTH},?\s+\d{{4}}"
    rf"|\d{{4}}-\d{{2}}(?:-\d{{2}})?|q[1-4]\s*\d{{4}}|\d{{4}}\s*q[1-4]"
    rf")(?![\w-])"
    rf"|(?<![\w-]){_PREPOSITION}\s+({_MONTH}|(?:19|20)\d{{2}})(?![\w-])",
    re.IGNORECASE,
)
# An explicit span: "from 2009 to 2014", "between March and May 2024", "2024-01 to 2024-03".
_POINT = rf"(?:{_MONTH}(?:\s+\d{{4}})?|\d{{4}}-\d{{2}}(?:-\d{{2}})?|(?:19|20)\d{{2}}|q[1-4]\s*\d{{4}})"
_SPAN = re.compile(
    rf"(?<![\w-])(?:from|between)\s+({_POINT})\s+(?:to|and|until|till|through)\s+({_POINT})(?![\w-])", re.IGNORECASE
)
_PHRASE = re.compile(r"[\"“]([^\"”]{1,200})[\"”]")
# `-term`: a word of four or more characters; shorter ones and the single-dash options of common commands
# (`set -euo`, `ls -la`, `find -name`) are flags, not exclusions.
_EXCLUDED = re.compile(r"(?:(?<=\s)|^)-([A-Za-z][\w.']{3,})(?=\s|$)")
_OPTION_WORDS = {
    "name",
    "iname",
    "exec",
    "type",
    "print",
    "print0",
    "mtime",
    "mmin",
    "size",
    "path",
    "delete",
    "user",
    "perm",
    "newer",
    "maxdepth",
    "mindepth",
    "regex",
    "empty",
    "prune",
    "version",
    "help",
    "verbose",
    "xtrace",
    "errexit",
}
_HASH_TAG = re.compile(r"(?:(?<=\s)|^)#([A-Za-z0-9_][\w/-]*)")
_PREFIXED = re.compile(r"(?:(?<=\s)|^)(tags?|in|folder|path|collection):(\"[^\"]+\"|\S+)", re.IGNORECASE)
_FOLDER_WORDS = re.compile(
    r"(?<![\w-])(?:in|under)\s+(?:the\s+|my\s+)?([\w][\w./-]*)\s+(?:folder|directory)(?![\w-])"
    r"|(?<![\w-])(?:in|under)\s+([\w][\w.-]*(?:/[\w.-]+)*/)(?=\s|$)",
    re.IGNORECASE,
)
_FIELD = re.compile(r"(?:(?<=\s)|^)([A-Za-z_][\w-]*):\s?(\"[^\"]+\"|[^\s,;]+)")
_RECENT = re.compile(
    r"(?<![\w-])(?:(?:the\s+)?(?:latest|newest|most\s+recent(?:ly)?|most\s+up[- ]to[- ]date)"
    r"|what\s+did\s+(?:i|we)\s+\w+\s+last"
    r"|(?:the\s+)?current\s+(?:version|state|status|plan|runbook|setup|config\w*|process|approach|design|decision))(?![\w-])",
    re.IGNORECASE,
)
_RESERVED_FIELDS = {"http", "https", "ftp", "file", "mailto", "tag", "tags", "in", "folder", "path", "collection"}


@dataclass
class _Extraction:
    """What the rules found in one question."""

    query: str
    loose_query: str
    tags: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)
    where: dict[str, Any] = field(default_factory=dict)
    after: Any = None
    before: Any = None
    dates: list[str] = field(default_factory=list)
    must_contain: list[str] = field(default_factory=list)
    must_not_contain: list[str] = field(default_factory=list)
    recent: bool = False

    def has_filters(self) -> bool:
        return bool(
            self.tags
            or self.paths
            or self.collections
            or self.where
            or self.after
            or self.before
            or self.must_contain
            or self.must_not_contain
        )


class SelfQueryRules:
    """
    The rules that read filters out of a question (`SelfQueryExtractor`), written once for the two
    components that apply them: `SelfQueryExtractor` alone, and `LLMSelfQueryExtractor`, which asks a
    language model what they missed. Not a component itself.
    """

    def __init__(
        self,
        document_store: Any = None,
        enabled: bool = True,
        min_results: int = 3,
        recent_on_request: bool = True,
    ) -> None:
        """
        Create the extractor.

        :param document_store: The whole-file store, read for the collections and frontmatter fields the
            index holds (`in:NAME`, `field:value`); without it those two rules are off.
        :param enabled: Read filters out of questions; a request's `enabled` overrides it.
        :param min_results: Fewer results than this from the filtered search make the caller fall back to
            the unfiltered one (0 never falls back).
        :param recent_on_request: Switch recency on when the question asks for the newest.
        :raises ValueError: When `min_results` is negative.
        """
        if isinstance(min_results, bool) or not isinstance(min_results, int) or min_results < 0:
            raise ValueError(f"min_results must be an integer >= 0, got {min_results!r}")
        store = None if document_store is None else searchable(document_store)
        self.document_store = document_store
        self._store = store
        self._files = None if store is None else IndexedFiles.of(store)
        self.enabled = enabled
        self.min_results = min_results
        self.recent_on_request = recent_on_request
        self._vocabulary = None if store is None else IndexVocabulary.of(store)
        self._counted = False

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        store = None if self.document_store is None else self.document_store.to_dict()
        return default_to_dict(
            self,
            document_store=store,
            enabled=self.enabled,
            min_results=self.min_results,
            recent_on_request=self.recent_on_request,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Deserialise the component."""
        return default_from_dict(cls, with_document_store(data, optional=True))

    @component.output_types(
        query=str,
        filters=dict[str, Any] | None,
        must_contain=list[str],
        must_not_contain=list[str],
        recent=bool,
        self_query=dict[str, Any],
        filters_engaged=bool,
    )
    def run(
        self,
        query: str,
        filters: dict[str, Any] | None = None,
        enabled: bool | None = None,
        recent: bool | None = None,
        now: str | None = None,
        fallback: bool = False,
    ) -> dict[str, Any]:
        """
        Read the question.

        :param query: The question.
        :param filters: The request's own filters, kept in any case.
        :param enabled: Read filters out of the question; the init value when `None`.
        :param recent: Recency asked for (`True`) or refused (`False`) by the request; when `None`, on when
            the question asks for the newest.
        :param now: The reference time of relative dates (ISO); the current time when `None`.
        :param fallback: Run without the extracted filters and with the question's words kept (the caller's
            second run when the filtered one found too little).
        :returns: A dictionary with:
            - `query`: the question without the words that only filtered (the question itself when nothing
              was read, or on fallback).
            - `filters`: the request's filters AND the extracted ones (Haystack syntax), or `None`.
            - `must_contain`, `must_not_contain`: quoted phrases and `-terms`, for `TextMatchFilter`.
            - `recent`: whether to rank by recency.
            - `filters_engaged`: whether any filter (the request's or the question's) narrows the search.
            - `self_query`: what was read (`{}` when the extractor is off): `original`, `query`, `filters`
              (the extracted ones by kind), `must_contain`, `must_not_contain`, `recent`, `min_results`,
              `applied` (whether any filter was read and applied) and `fallback`.
        :raises ValueError: When `query` is not a string or `now` is not a date.
        """
        if not isinstance(query, str):
            raise ValueError("query must be a string")
        active = self.enabled if enabled is None else enabled
        if not active:
            return {
                "query": query,
                "filters": filters,
                "must_contain": [],
                "must_not_contain": [],
                "recent": bool(recent),
                "self_query": {},
                "filters_engaged": filters is not None,
            }
        moment = reference_time(now)
        found = self.extract(query, moment)
        asked_recent = recent if recent is not None else (self.recent_on_request and found.recent)
        applied = found.has_filters() and not fallback
        extracted = None
        if applied:
            extracted = conjunction(
                [
                    collection_condition(found.collections),
                    *tag_conditions(found.tags),
                    *(self._path(p) for p in found.paths),
                    *(where_condition(f"{k}={v}", moment) for k, v in found.where.items()),
                    *date_conditions(found.after, found.before),
                ]
            )
        cleaned = (
            query if not found.has_filters() and not found.recent else (found.loose_query if fallback else found.query)
        )
        info = {
            "original": query,
            "query": cleaned,
            "filters": {
                key: value
                for key, value in (
                    ("tags", found.tags),
                    ("paths", found.paths),
                    ("collections", found.collections),
                    ("where", found.where),
                    ("dates", found.dates),
                    ("after", rfc3339(found.after) if found.after else None),
                    ("before", rfc3339(found.before) if found.before else None),
                )
                if value
            },
            "must_contain": found.must_contain,
            "must_not_contain": found.must_not_contain,
            "recent": bool(asked_recent),
            "recent_from_question": found.recent and recent is None and self.recent_on_request,
            "min_results": self.min_results,
            "applied": applied,
            "fallback": bool(fallback and found.has_filters()),
            **self._extra_report(),
        }
        combined = conjunction([filters, extracted])
        return {
            "query": cleaned,
            "filters": combined,
            "filters_engaged": combined is not None,
            "must_contain": [] if fallback else found.must_contain,
            "must_not_contain": [] if fallback else found.must_not_contain,
            "recent": bool(asked_recent),
            "self_query": info,
        }

    def extract(self, query: str, now: Any) -> _Extraction:
        """
        Apply the rules to a question.

        :param query: The question.
        :param now: The reference time (naive UTC datetime).
        :returns: What was found, and the question with (`query`) and without (`loose_query`) those words.
        """
        collections, fields, folders = self._known()
        found = _Extraction(query="", loose_query="")
        spans = _Spans()
        # The order matters: a span read first is not read again by a later rule.
        _read_phrases(query, found, spans)
        _read_prefixed(query, collections, found, spans)
        _read_hash_tags(query, found, spans)
        _read_folder_words(query, found, spans)
        _read_fields(query, fields, found, spans)
        if collections:
            _read_named_collections(query, collections, found, spans)
        if folders:
            _read_named_folders(query, folders, found, spans)
        _read_exclusions(query, found, spans)
        _read_date_spans(query, now, found, spans)
        for match in _DATE.finditer(query):
            _read_date(match, now, found, spans)
        _read_recent(query, found, spans)
        found.query, found.loose_query = _without(query, spans.removed)
        if not found.query:
            found.query = found.loose_query or query
        return found

    def _known(self) -> tuple[set[str], set[str], set[str]]:
        """
        The indexed collections, frontmatter field names and folders, shared by every component reading the
        same store in this process (`haystack_integrations.components.needle._vocabulary`); this instance's first read looks at the
        store's document count at once, so it sees what was written before it.
        """
        if self._vocabulary is None:
            return set(), set(), set()
        first, self._counted = not self._counted, True
        return self._vocabulary.read(check_count=first)

    def _extra_report(self) -> dict[str, Any]:
        """More to report on what was read (a subclass's); nothing here."""
        return {}

    def _path(self, pattern: str) -> dict[str, Any] | None:
        """A path read from the question as a filter; `None` (left out) for a glob without a store to list."""
        try:
            return path_condition(pattern, self._files)
        except ValueError:
            logger.info("Path {pattern} left out: no file list to match it against", pattern=pattern)
            return None


class _Spans:
    """The spans of a question read as filters: the words the cleaned question keeps in their place, and those it keeps on fallback."""

    def __init__(self) -> None:
        # (start, end, words the cleaned question keeps, words the question keeps on fallback)
        self.removed: list[tuple[int, int, str, str]] = []

    def take(self, match: re.Match[str], keep: str = "", keep_searching: str = "") -> bool:
        """
        Claim a match's span unless an earlier rule took part of it.

        :param match: The span read as a filter.
        :param keep: The words the question keeps in its place on fallback (when the filters are dropped).
        :param keep_searching: The words the cleaned question keeps in its place.
        :returns: Whether the span was claimed.
        """
        start, end = match.span()
        if any(s < end and start < e for s, e, _, _ in self.removed):
            return False
        self.removed.append((start, end, keep_searching, keep))
        return True


def _read_phrases(query: str, found: _Extraction, spans: _Spans) -> None:
    """A quoted phrase: the results must contain it."""
    for match in _PHRASE.finditer(query):
        phrase = " ".join(match.group(1).split()).strip(" .,;:!?")
        if phrase and spans.take(match, phrase, keep_searching=phrase):
            found.must_contain.append(phrase)


def _read_prefixed(query: str, collections: set[str], found: _Extraction, spans: _Spans) -> None:
    """`tag:x`, `collection:x`, `in:x`, `path:x`."""
    for match in _PREFIXED.finditer(query):
        kind, value = match.group(1).lower(), match.group(2).strip('"')
        if kind in ("tag", "tags"):
            tags = [clean_tag(t) for t in value.split(",") if clean_tag(t)]
            if tags and spans.take(match, " ".join(tags)):
                found.tags.extend(tags)
        elif kind == "collection" or (kind == "in" and value.strip("/") in collections):
            if spans.take(match, value.strip("/")):
                found.collections.append(value.strip("/"))
        elif spans.take(match, value.strip("/").replace("/", " ")):
            found.paths.append(value)


def _read_hash_tags(query: str, found: _Extraction, spans: _Spans) -> None:
    """`#tag` (not `#123`)."""
    for match in _HASH_TAG.finditer(query):
        tag = clean_tag(match.group(1))
        if tag and not tag.replace("/", "").isdigit() and spans.take(match, tag.replace("/", " ")):
            found.tags.append(tag)


def _read_folder_words(query: str, found: _Extraction, spans: _Spans) -> None:
    """A folder given as such: "in the journal folder", "under notes/work/"."""
    for match in _FOLDER_WORDS.finditer(query):
        folder = (match.group(1) or match.group(2)).strip("/")
        if spans.take(match, folder.replace("/", " ")):
            found.paths.append(folder + "/")


def _read_fields(query: str, fields: set[str], found: _Extraction, spans: _Spans) -> None:
    """`field:value` for an indexed frontmatter field."""
    for match in _FIELD.finditer(query):
        name, value = match.group(1), match.group(2).strip('"')
        if name.lower() in _RESERVED_FIELDS or name not in fields:
            continue
        if spans.take(match, value):
            found.where[name] = _typed_value(value)


def _read_named_collections(query: str, collections: set[str], found: _Extraction, spans: _Spans) -> None:
    """An indexed collection named in words."""
    for match in _collections_pattern(frozenset(collections)).finditer(query):
        name = next(c for c in collections if c.lower() == match.group(1).lower())
        if spans.take(match, ""):
            found.collections.append(name)


def _read_named_folders(query: str, folders: set[str], found: _Extraction, spans: _Spans) -> None:
    """A folder named in words: "journal entries", "meeting notes", "from my journal"."""
    pattern, names = _folders_pattern(frozenset(folders))
    for match in pattern.finditer(query):
        word = (match.group(1) or match.group(2)).lower()
        if spans.take(match, match.group(0)):
            found.paths.append(names[word] + "/")


def _read_exclusions(query: str, found: _Extraction, spans: _Spans) -> None:
    """`-term`: the results must not contain it (command options excepted)."""
    for match in _EXCLUDED.finditer(query):
        if match.group(1).lower() not in _OPTION_WORDS and spans.take(match, ""):
            found.must_not_contain.append(match.group(1))


def _read_date_spans(query: str, now: Any, found: _Extraction, spans: _Spans) -> None:
    """An explicit span: "from 2009 to 2014"."""
    for match in _SPAN.finditer(query):
        first, last = period_range(match.group(1), now), period_range(match.group(2), now)
        if first and last and first[0] < last[1] and spans.take(match, match.group(0)):
            found.dates.append(match.group(0).strip())
            found.after = max(found.after or first[0], first[0])
            found.before = min(found.before or last[1], last[1])


def _read_date(match: re.Match[str], now: Any, found: _Extraction, spans: _Spans) -> None:
    """A date phrase, bounding the period on the side its preposition says."""
    preposition = (match.group(1) or match.group(3) or "").lower()
    phrase = match.group(2) or match.group(4)
    span = period_range(phrase, now)
    if span is None or not spans.take(match, match.group(0)):
        return
    start, end = span
    found.dates.append(match.group(0).strip())
    if preposition == "since":
        found.after = max(found.after or start, start)
    elif preposition == "after":
        found.after = max(found.after or end, end)
    elif preposition == "before":
        found.before = min(found.before or start, start)
    elif preposition in ("until", "till"):
        found.before = min(found.before or end, end)
    else:
        found.after = max(found.after or start, start)
        found.before = min(found.before or end, end)


def _read_recent(query: str, found: _Extraction, spans: _Spans) -> None:
    """Recency words: "the latest", "most recent", "what did I decide last", "the current plan"."""
    for match in _RECENT.finditer(query):
        words = match.group(0)
        asked = re.match(r"(what\s+did\s+\w+\s+\w+)\s+last$", words, re.IGNORECASE)
        if spans.take(match, words, keep_searching=asked.group(1) if asked else ""):
            found.recent = True


def _typed_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _without(query: str, removed: list[tuple[int, int, str, str]]) -> tuple[str, str]:
    """The question with each span replaced by the words it keeps, and by those it keeps on fallback."""
    strict, loose, position = [], [], 0
    for start, end, keep, keep_loose in sorted(removed):
        strict.append(query[position:start] + " " + keep + " ")
        loose.append(query[position:start] + " " + keep_loose + " ")
        position = end
    strict.append(query[position:])
    loose.append(query[position:])
    return _tidy("".join(strict)), _tidy("".join(loose))


def _tidy(text: str) -> str:
    """Spaces collapsed, none before punctuation, no dangling separators at either end."""
    return re.sub(r"\s+([?.!,;:])", r"\1", " ".join(text.split())).strip(" ,;:")


# The patterns are compiled once per set of names (they change only when the index does): escaping and
# compiling a few hundred folder names took most of the stage's time on every query.
@functools.lru_cache(maxsize=16)
def _collections_pattern(collections: frozenset[str]) -> re.Pattern[str]:
    """Collections named in words: "in the work notes", "in work"."""
    alternatives = "|".join(re.escape(c) for c in sorted(collections, key=len, reverse=True))
    return re.compile(
        rf"(?<![\w-])in\s+(?:the\s+|my\s+)?({alternatives})(?:\s+(?:collection|notes))?(?![\w-])", re.IGNORECASE
    )


@functools.lru_cache(maxsize=16)
def _folders_pattern(folders: frozenset[str]) -> tuple[re.Pattern[str], dict[str, str]]:
    """Folders named in words, and the folder each lowercase form (singular and plural) names."""
    names: dict[str, str] = {}
    for folder in sorted(folders):
        last = folder.rsplit("/", 1)[-1].lower()
        for form in sorted({last, last[:-1] if last.endswith("s") else last + "s"}):
            if len(form) > 2:
                names.setdefault(form, folder)
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    pattern = re.compile(
        rf"(?<![\w/-])(?:(?:in|from)\s+(?:my\s+|the\s+)?({alternatives})"
        rf"|({alternatives})\s+(?:entry|entries|note|notes|page|pages))(?![\w/-])",
        re.IGNORECASE,
    )
    return pattern, names
