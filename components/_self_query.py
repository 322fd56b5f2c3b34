"""The rules that read filters out of a question: tags, folders, fields, phrases, exclusions, dates, recency.

`SelfQueryExtractor` applies them; `LLMSelfQueryExtractor` applies them and asks a language model what they missed.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging

from haystack_integrations.components.needle._date_phrases import DateMention, find_dates
from haystack_integrations.components.needle._dates import reference_time, rfc3339
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
from haystack_integrations.components.needle._index_models import FROM_SETTINGS, records_file, without
from haystack_integrations.components.needle._link_questions import LINKS_TO, notes_linking_to
from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.components.needle._vocabulary import Holdings, IndexVocabulary
from haystack_integrations.document_stores.needle.access import searchable
from needle.core.schema import FILE_ID

logger = logging.getLogger(__name__)

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
# A question in words ("what does the -healthcheck flag do?"): its `-words` are command options, not exclusions,
# which are a keyword query's syntax ("backups -restic").
_QUESTION = re.compile(
    r"^\s*(?:what|what's|why|how|when|where|which|who|whom|whose|is|are|do|does|did|can|could|should|would|will"
    r"|was|were|has|have|shall)\b|\?\s*$",
    re.IGNORECASE,
)
_HASH_TAG = re.compile(r"(?:(?<=\s)|^)#([A-Za-z0-9_][\w/-]*)")
_PREFIXED = re.compile(r"(?:(?<=\s)|^)(tags?|in|folder|path|collection):(\"[^\"]+\"|\S+)", re.IGNORECASE)
_FOLDER_WORDS = re.compile(
    r"(?<![\w-])(?:in|under)\s+(?:the\s+|my\s+)?([\w][\w./-]*)\s+(?:folder|directory)(?![\w-])"
    r"|(?<![\w-])(?:in|under)\s+([\w][\w.-]*(?:/[\w.-]+)*/)(?=\s|$)",
    re.IGNORECASE,
)
# Words that name no folder: "in a directory", "under a folder", "in which directory", "in this folder".
_GENERIC = frozenset(
    [
        "a",
        "an",
        "the",
        "which",
        "what",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
        "each",
        "every",
        "one",
        "my",
        "your",
        "our",
        "their",
        "his",
        "her",
        "its",
        "same",
        "other",
        "another",
        "new",
        "given",
        "specific",
        "certain",
        "separate",
        "single",
    ]
)
_FIELD = re.compile(r"(?:(?<=\s)|^)([A-Za-z_][\w-]*):\s?(\"[^\"]+\"|[^\s,;]+)")
# Nouns naming notes of a kind: a date after one dates the note ("meeting notes from March 2024", "kestrel sync in
# April", "Notizen zu DDIA im Jahr 2024").
_NOTE_NOUN = (
    r"(?:notes?|entry|entries|journal|diary|logbook|meetings?|syncs?|stand-?ups?|retros?|retrospectives?"
    r"|1:1s?|1on1s?|one-on-ones?|minutes|kick-?offs?|post-?mortems?|incidents?|write-?ups?|memos?"
    r"|notiz(?:en)?|eintr[aä]g(?:e)?|tagebuch|protokoll(?:e)?|besprechung(?:en)?|sitzung(?:en)?|versammlung(?:en)?"
    r"|entr[ée]es?|r[ée]unions?|comptes?[- ]rendus?)"
)
# What "the latest" asks the newest of: notes of a kind, or a plan, a runbook, a decision...
_RECENT_NOUN = (
    rf"(?:{_NOTE_NOUN}|runbooks?|plans?|drafts?|versions?|updates?|status|reports?|reviews?|check-?ins?|decisions?"
    r"|thoughts|ideas|docs?|documents?|logs?)"
)
_RECENT = re.compile(
    r"(?<![\w:/@-])(?:(?:the\s+)?(?:latest|newest|most\s+recent(?:ly)?|most\s+up[- ]to[- ]date)"
    rf"(?=(?:\s+[\w'-]+){{0,2}}?\s+{_RECENT_NOUN}(?![\w-]))"
    r"|what\s+did\s+(?:i|we)\s+\w+\s+last(?!\s+\w+\s+of\b)"
    r"|(?:the\s+)?current\s+(?:plan|runbook|setup|config\w*|process|approach|design|decision))(?![\w-])",
    re.IGNORECASE,
)
_NOTE_NOUN_BEFORE = re.compile(rf"(?<![\w-]){_NOTE_NOUN}(?![\w-])", re.IGNORECASE)
# The asker's own past: "what did I cook", "books I read", "Was habe ich gelesen", "Qu'est-ce que j'ai cuisiné".
_FIRST_PERSON_PAST = re.compile(
    r"(?<![\w-])(?:(?:did|have|had)\s+(?:i|we)|(?:i|we)\s+(?:(?!need|feed|seed|speed|proceed)\w+ed|read|wrote|took|made|had|went|saw|met|ate|bought"
    r"|spent|did|said|thought|got|ran|rode|drove|flew|heard|felt|found|began|paid|sent|sold|built|kept|left|lost|won"
    r"|brought|knew|gave|came|was|were|shot)"
    r"|(?:habe|hatte|haben|hatten|bin|war|waren)\s+(?:ich|wir)|(?:ich|wir)\s+(?:habe|hatte|haben|hatten|war|waren|bin)"
    r"|j['’](?:ai|avais|étais)|ai-je|avons-nous|nous\s+avons|on\s+a\s+\w+[éiu]e?s?|qu['’]ai-je)(?![\w-])",
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
    # a date that may date the note or only something in it ("the 1099 that arrived in March"): ranked first
    boost_after: Any = None
    boost_before: Any = None
    boost_dates: list[str] = field(default_factory=list)
    must_contain: list[str] = field(default_factory=list)
    must_not_contain: list[str] = field(default_factory=list)
    recent: bool = False
    linked_from: list[str] | None = None  # the notes linking to a note the question names ("linking to X")

    def has_filters(self) -> bool:
        return bool(
            self.linked_from is not None
            or self.tags
            or self.paths
            or self.collections
            or self.where
            or self.after
            or self.before
            or self.must_contain
            or self.must_not_contain
        )

    def period(self, fallback: bool) -> dict[str, Any] | None:
        """The dates to rank first: the question's date filter (dated notes before undated ones) or its boost."""
        if (self.after or self.before) and not fallback:
            after, before, filtered = self.after, self.before, True
        elif self.after or self.before:
            after, before, filtered = self.after, self.before, False
        else:
            after, before, filtered = self.boost_after, self.boost_before, False
        if not (after or before):
            return None
        return {
            "after": rfc3339(after) if after else None,
            "before": rfc3339(before) if before else None,
            "filtered": filtered,
        }


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
        records_path: str | None = FROM_SETTINGS,
    ) -> None:
        """
        Create the extractor.

        :param document_store: The whole-file store, read for the collections, folders, tags and frontmatter
            fields the index holds; without it, `in:NAME` and `field:value` are off and the other rules read
            what the question spells out (`#tag`, "in the x folder").
        :param enabled: Read filters out of questions; a request's `enabled` overrides it.
        :param min_results: Fewer results than this from the filtered search make the caller fall back to
            the unfiltered one (0 never falls back).
        :param recent_on_request: Switch recency on when the question asks for the newest.
        :param records_path: The stat record the link table lives in: "notes linking to X" keeps the notes
            linking to the note named X (its file name, path or alias); default: the index's, from Needle's
            settings; `None` turns that rule off.
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
        self._records_from_settings = {"records_path"} if records_path is FROM_SETTINGS else set()
        self.records_path = records_file() if records_path is FROM_SETTINGS else records_path
        self._vocabulary = None if store is None else IndexVocabulary.of(store)
        self._counted = False

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        store = None if self.document_store is None else self.document_store.to_dict()
        return without(
            default_to_dict(
                self,
                document_store=store,
                enabled=self.enabled,
                min_results=self.min_results,
                recent_on_request=self.recent_on_request,
                records_path=self.records_path,
            ),
            self._records_from_settings,
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
        period=dict[str, Any] | None,
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
            - `period`: the dates the question named, to rank notes dated in them first (`after`, `before`
              as RFC 3339 or `None`, and `filtered`: whether the search is also restricted to them), or
              `None`.
            - `filters_engaged`: whether any filter (the request's or the question's) narrows the search.
            - `self_query`: what was read (`{}` when the extractor is off): `original`, `query`, `filters`
              (the extracted ones by kind, and under `boost` the dates only ranked first), `must_contain`,
              `must_not_contain`, `recent`, `min_results`, `applied` (whether any filter was read and
              applied) and `fallback`.
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
                "period": None,
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
                    _linked_condition(found.linked_from),
                ]
            )
        said = found.has_filters() or found.recent
        cleaned = query if not said else (found.loose_query if fallback else found.query)
        boost = {
            key: value
            for key, value in (
                ("dates", found.boost_dates),
                ("after", rfc3339(found.boost_after) if found.boost_after else None),
                ("before", rfc3339(found.boost_before) if found.boost_before else None),
            )
            if value
        }
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
                    ("boost", boost),
                    ("linked_from", found.linked_from),
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
            "period": found.period(fallback),
            "self_query": info,
        }

    def extract(self, query: str, now: Any) -> _Extraction:
        """
        Apply the rules to a question.

        :param query: The question.
        :param now: The reference time (naive UTC datetime).
        :returns: What was found, and the question with (`query`) and without (`loose_query`) those words.
        """
        held = self._holdings()
        known = self._vocabulary is not None
        found = _Extraction(query="", loose_query="")
        spans = _Spans()
        # The order matters: a span read first is not read again by a later rule.
        _read_phrases(query, found, spans)
        _read_prefixed(query, held.collections, found, spans)
        _read_hash_tags(query, held.tags if known else None, found, spans)
        _read_folder_words(query, held.folders if known else None, found, spans)
        _read_fields(query, held, found, spans)
        if held.collections:
            _read_named_collections(query, held.collections, found, spans)
        if held.folders:
            _read_named_folders(query, held.folders, found, spans)
        _read_exclusions(query, found, spans)
        _read_dates(query, now, found, spans)
        _read_recent(query, found, spans)
        _read_links_to(query, self.records_path, found, spans)
        found.query, found.loose_query = _without(query, spans.removed)
        if not found.query:
            found.query = found.loose_query or query
        return found

    def _holdings(self) -> Holdings:
        """
        What the index holds (`haystack_integrations.components.needle._vocabulary`), shared by every component
        reading the same store in this process; this instance's first read looks at the store's document count at
        once, so it sees what was written before it. Nothing without a store.
        """
        if self._vocabulary is None:
            return Holdings()
        first, self._counted = not self._counted, True
        return self._vocabulary.holdings(check_count=first)

    def _known(self) -> tuple[set[str], set[str], set[str]]:
        """The indexed collections, frontmatter field names and folders (see `_holdings`)."""
        held = self._holdings()
        return held.collections, held.fields, held.folders

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

    def free(self, start: int, end: int) -> bool:
        """Whether no rule took any part of `[start, end)` yet."""
        return not any(s < end and start < e for s, e, _, _ in self.removed)

    def take(self, match: re.Match[str], keep: str = "", keep_searching: str = "") -> bool:
        """
        Claim a match's span unless an earlier rule took part of it.

        :param match: The span read as a filter.
        :param keep: The words the question keeps in its place on fallback (when the filters are dropped).
        :param keep_searching: The words the cleaned question keeps in its place.
        :returns: Whether the span was claimed.
        """
        return self.take_span(*match.span(), keep, keep_searching)

    def take_span(self, start: int, end: int, keep: str = "", keep_searching: str = "") -> bool:
        """`take` for a span given by its offsets."""
        if not self.free(start, end):
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
    """`tag:x`, `collection:x`, `in:x`, `path:x`: filters spelled out as such."""
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


def _read_hash_tags(query: str, tags: set[str] | None, found: _Extraction, spans: _Spans) -> None:
    """`#tag` (not `#123`), when the index has the tag (any, without a store to ask)."""
    for match in _HASH_TAG.finditer(query):
        tag = clean_tag(match.group(1))
        if not tag or tag.replace("/", "").isdigit() or (tags is not None and tag not in tags):
            continue
        if spans.take(match, tag.replace("/", " ")):
            found.tags.append(tag)


def _read_folder_words(query: str, folders: set[str] | None, found: _Extraction, spans: _Spans) -> None:
    """A folder given as such: "in the journal folder", "under notes/work/", when the index has it."""
    for match in _FOLDER_WORDS.finditer(query):
        folder = (match.group(1) or match.group(2)).strip("/")
        if folder.lower() in _GENERIC:
            continue
        if folders is not None:
            named = _known_folder(folder, folders)
            if named is None:
                continue
            folder = named
        if spans.take(match, folder.replace("/", " ")):
            found.paths.append(folder + "/")


def _known_folder(name: str, folders: set[str]) -> str | None:
    """The indexed folder a name means: itself, or a folder whose last part it is (singular or plural)."""
    if name in folders:
        return name
    lowered = name.lower()
    forms = {lowered, lowered[:-1] if lowered.endswith("s") else lowered + "s"}
    matches = sorted(f for f in folders if f.lower() in forms or f.rsplit("/", 1)[-1].lower() in forms)
    return matches[0] if matches else None


def _read_fields(query: str, held: Holdings, found: _Extraction, spans: _Spans) -> None:
    """`field:value` for a frontmatter field the index holds with that value."""
    for match in _FIELD.finditer(query):
        name, value = match.group(1), match.group(2).strip('"')
        if name.lower() in _RESERVED_FIELDS or name not in held.fields:
            continue
        if value.lower() not in held.values.get(name, set()):
            continue
        if spans.take(match, value):
            found.where[name] = _typed_value(value)


def _read_named_collections(query: str, collections: set[str], found: _Extraction, spans: _Spans) -> None:
    """An indexed collection named in words: "in work", "in the work notes" (not "in golden hour")."""
    for match in _collections_pattern(frozenset(collections)).finditer(query):
        name = next(c for c in collections if c.lower() == match.group(1).lower())
        if spans.take(match, ""):
            found.collections.append(name)


def _read_named_folders(query: str, folders: set[str], found: _Extraction, spans: _Spans) -> None:
    """A folder named in words: "journal entries", "meeting notes", "my journal entry", "from my journal"."""
    pattern, names = _folders_pattern(frozenset(folders))
    for match in pattern.finditer(query):
        word = next(g for g in match.groups() if g).lower()
        if spans.take(match, match.group(0)):
            found.paths.append(names[word] + "/")


def _read_exclusions(query: str, found: _Extraction, spans: _Spans) -> None:
    """`-term` in a keyword query: the results must not contain it (command options and questions excepted)."""
    if _QUESTION.search(query):
        return
    for match in _EXCLUDED.finditer(query):
        word = match.group(1)
        if word.lower() in _OPTION_WORDS or any(c.isupper() for c in word[1:]):
            continue
        before = query[: match.start()].split()
        after = query[match.end() :].split()
        if (before and before[-1].startswith("-")) or (
            after and after[0].lower() in ("flag", "flags", "option", "options")
        ):
            continue  # `exiftool -b -PreviewImage`, "the -healthcheck flag"
        if spans.take(match, ""):
            found.must_not_contain.append(word)


def _read_dates(query: str, now: Any, found: _Extraction, spans: _Spans) -> None:
    """Dates: those that date the note filter, the others are ranked first (`_dates_the_note`)."""
    for mention in find_dates(query, now):
        if not spans.free(mention.start, mention.end):
            continue
        if _dates_the_note(mention, query):
            spans.take_span(mention.start, mention.end, mention.text)
            found.dates.append(mention.text.strip())
            if mention.after is not None:
                found.after = max(found.after or mention.after, mention.after)
            if mention.before is not None:
                found.before = min(found.before or mention.before, mention.before)
        else:
            found.boost_dates.append(mention.text.strip())
            if found.boost_after is None:
                found.boost_after, found.boost_before = mention.after, mention.before


def _dates_the_note(mention: DateMention, query: str) -> bool:
    """
    Whether a date names when the note was written (a filter) rather than something the note talks about: it
    counts from today, bounds a range, or follows a kind of note or the asker's own past.
    """
    if mention.kind == "relative" or mention.side is not None:
        return True
    before = query[: mention.start]
    if _NOTE_NOUN_BEFORE.search(before):
        return True
    # "what did I put in my wins log about the October incident?": a date naming a thing ("the October
    # incident") dates that thing, not the note, even in the asker's own past.
    attributive = _ARTICLE_BEFORE.search(before) and _WORD_AFTER.match(query[mention.end :])
    return bool(_FIRST_PERSON_PAST.search(before)) and not attributive


_ARTICLE_BEFORE = re.compile(r"(?<![\w-])(?:the|this|that|der|die|das|dem|den|le|la|l')\s*$", re.IGNORECASE)
_WORD_AFTER = re.compile(r"\s+[^\W\d_]")


def _read_recent(query: str, found: _Extraction, spans: _Spans) -> None:
    """Recency words: "the latest kestrel sync", "most recent journal entry", "what did I decide last"."""
    for match in _RECENT.finditer(query):
        words = match.group(0)
        asked = re.match(r"(what\s+did\s+\w+\s+\w+)\s+last$", words, re.IGNORECASE)
        if spans.take(match, words, keep_searching=asked.group(1) if asked else ""):
            found.recent = True


def _read_links_to(query: str, records_path: str | None, found: _Extraction, spans: _Spans) -> None:
    """ "notes linking to X": the notes whose links resolve to the note X names (file name, path or alias)."""
    match = LINKS_TO.search(query) if records_path else None
    named = notes_linking_to(match.group(1), records_path) if match else None
    if match is not None and named is not None and spans.take(match, match.group(1)):
        found.linked_from = named[1]


def _linked_condition(sources: list[str] | None) -> dict[str, Any] | None:
    """The notes a "linking to" question keeps, by their `collection:path`."""
    return None if sources is None else {"field": f"meta.{FILE_ID}", "operator": "in", "value": sources}


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
    """Collections named in words: "in the work notes", "in work" (then the end, a comma or a preposition)."""
    alternatives = "|".join(re.escape(c) for c in sorted(collections, key=len, reverse=True))
    return re.compile(
        rf"(?<![\w-])in\s+(?:the\s+|my\s+)?({alternatives})(?:\s+(?:collection|notes))?(?![\w-])"
        r"(?=\s*(?:$|[?.!,;:)]|(?:about|for|on|with|from|since|before|after|in|that|where|which|regarding)\b))",
        re.IGNORECASE,
    )


@functools.lru_cache(maxsize=16)
def _folders_pattern(folders: frozenset[str]) -> tuple[re.Pattern[str], dict[str, str]]:
    """
    Folders named in words, and the folder each lowercase form (singular and plural) names: "from my journal",
    "in our meetings", "meeting notes", "journal entries", "my journal entry" (not "in the journal", "from home",
    "a runbook entry" or "recipe pages", which name something else as often as the folder).
    """
    names: dict[str, str] = {}
    for folder in sorted(folders):
        last = folder.rsplit("/", 1)[-1].lower()
        for form in sorted({last, last[:-1] if last.endswith("s") else last + "s"}):
            if len(form) > 2:
                names.setdefault(form, folder)
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    pattern = re.compile(
        rf"(?<![\w/-])(?:(?:in|from)\s+(?:my|our)\s+({alternatives})(?:\s+(?:folder|notes|entries))?"
        rf"|({alternatives})\s+(?:entries|notes)"
        rf"|(?<!\ba\s)(?<!\ban\s)(?<!\bany\s)(?<!\bone\s)({alternatives})\s+(?:entry|note))(?![\w/-])",
        re.IGNORECASE,
    )
    return pattern, names
