"""Needle's search filters as Haystack filter dictionaries, which both document stores apply inside their searches.

One place turns what a person asks for (tags, a folder or path glob, `field=value`, a date range, a
collection) into Haystack's filter syntax over the metadata `MarkdownChunker` writes: `meta.tags` and
`meta.folders` (keyword lists: a list field matches when one element does), `meta.date` (RFC 3339, a
datetime index), `meta.frontmatter.<field>` (typed scalars) and the file id (`FILE_ID`). `SearchRequest`
builds the filters a request names; `SelfQueryExtractor` builds the same ones from the question.
"""

from __future__ import annotations

import datetime
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from haystack_integrations.components.needle._dates import parse_bound, rfc3339
from haystack_integrations.components.needle._per_store import PerStore
from haystack_integrations.document_stores.needle._shared import Values
from needle.core.schema import FILE_ID

Filter = dict[str, Any]
_WHERE = re.compile(r"^\s*([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*)\s*(<=|>=|!=|=|<|>|:)\s*(.*?)\s*$", re.DOTALL)
_RANGE = {">=": ">=", "<=": "<=", ">": ">", "<": "<"}
# `where` keys that name Needle's own metadata rather than a frontmatter field.
_OWN_FIELDS = {
    "date": "meta.date",
    "tag": "meta.tags",
    "tags": "meta.tags",
    "folder": "meta.folders",
    "identifier": "meta.identifiers",
    "identifiers": "meta.identifiers",
    "collection": "meta.collection",
    "title": "meta.title",
}
_GLOB_CHARS = set("*?[")


class IndexedFiles(PerStore):
    """
    The indexed files of a store that match a path glob, as file ids (`FILE_ID`).

    Listing every file costs a scroll over the whole store (about 250 ms for SciFact's 5,183 files) and
    matching them all a few dozen ms more, so the list and each pattern's matches are kept, and listed
    again when 30 s have passed or the store's document count changed. `of` gives the one list of a store
    object in this process, shared by every component (and every pooled graph instance) that reads it.
    """

    ttl_seconds = 30.0
    count_check_seconds = 5.0  # a count costs about 0.5 ms: looked at no more often than this

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self._listed: tuple[float, int, list[tuple[str, str]]] | None = None
        self._checked = 0.0
        self._matches: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def __call__(self, pattern: str) -> list[str]:
        """The file ids of the indexed files whose path matches the glob, sorted."""
        from needle.core.globs import Glob

        with self._lock:
            listed, now = self._listed, time.monotonic()
            count = listed[1] if listed is not None else -1
            if listed is None or now - self._checked >= self.count_check_seconds:
                count, self._checked = self.store.count_documents(), now
            if listed is None or listed[1] != count or now - listed[0] > self.ttl_seconds:
                rows = self.store.list_documents_meta(fields=[FILE_ID, "path"])
                files = [(row["meta"].get(FILE_ID, ""), row["meta"].get("path", "")) for row in rows]
                self._listed, self._matches = (time.monotonic(), count, files), {}
            if pattern not in self._matches:
                glob, listed_files = Glob(pattern), self._listed[2] if self._listed is not None else []
                self._matches = {
                    **dict(list(self._matches.items())[-63:]),
                    pattern: sorted({doc_id for doc_id, path in listed_files if glob.matches(path)}),
                }
            return self._matches[pattern]


def conjunction(conditions: Iterable[Filter | None]) -> Filter | None:
    """The AND of the conditions given (`None`s left out); `None` when there are none, the one when one."""
    kept = [c for c in conditions if c]
    if not kept:
        return None
    if len(kept) == 1:
        return kept[0]
    return {"operator": "AND", "conditions": kept}


def clean_tag(tag: str) -> str:
    """A tag as the index keeps it: lower case, without `#` or surrounding slashes."""
    return str(tag).strip().lstrip("#").strip().strip("/").lower()


def tag_conditions(all_of: Iterable[str] = (), any_of: Iterable[str] = (), none_of: Iterable[str] = ()) -> list[Filter]:
    """
    Tag conditions: every tag of `all_of`, at least one of `any_of`, none of `none_of`.

    :raises ValueError: When a tag is empty.
    """
    groups = {}
    for name, tags in (("tags", all_of), ("tags_any", any_of), ("tags_none", none_of)):
        cleaned = [clean_tag(t) for t in tags or []]
        if any(not t for t in cleaned):
            raise ValueError(f"{name} must be non-empty tag names, got {list(tags)!r}")
        groups[name] = list(dict.fromkeys(cleaned))
    conditions: list[Filter] = [{"field": "meta.tags", "operator": "==", "value": t} for t in groups["tags"]]
    if groups["tags_any"]:
        conditions.append({"field": "meta.tags", "operator": "in", "value": groups["tags_any"]})
    if groups["tags_none"]:
        conditions.append(
            {"operator": "NOT", "conditions": [{"field": "meta.tags", "operator": "in", "value": groups["tags_none"]}]}
        )
    return conditions


def folder_of(pattern: str) -> str | None:
    """
    The folder a path pattern names when it is only a folder (`runbooks`, `runbooks/`, `runbooks/**`,
    `runbooks/**/*`); `None` for any other glob.
    """
    text = pattern.strip().strip("/")
    for suffix in ("/**/*", "/**", "/*"):
        if text.endswith(suffix) and not _GLOB_CHARS & set(text[: -len(suffix)]):
            text = text[: -len(suffix)]
            return text if suffix != "/*" or not text else None
    return text if text and not _GLOB_CHARS & set(text) else None


def path_condition(pattern: str, match_files: Callable[[str], list[str]] | None) -> Filter:
    """
    Files under a folder or matching a glob relative to their collection's root.

    A folder is one keyword match on `meta.folders` (or on `meta.path` for a file); another glob is matched
    against the indexed files, with Needle's linear-time glob engine, and becomes the list of those files.

    :param pattern: `runbooks/`, `runbooks/k8s/**`, `**/2024-*.md`, `journal/2024-01-01-goals.md`.
    :param match_files: The file ids of the indexed files matching a glob (`IndexedFiles`); needed
        for globs only.
    :raises ValueError: When the pattern is empty, or is a glob and no file list is available.
    """
    stripped = pattern.strip()
    if not stripped or stripped in ("/", "**", "**/*"):
        raise ValueError(f"path must name a folder, a file or a glob, got {pattern!r}")
    folder = folder_of(stripped)
    if folder is not None:
        if not stripped.endswith("/") and "." in folder.rsplit("/", 1)[-1]:
            return {
                "operator": "OR",
                "conditions": [
                    {"field": "meta.path", "operator": "==", "value": folder},
                    {"field": "meta.folders", "operator": "==", "value": folder},
                ],
            }
        return {"field": "meta.folders", "operator": "==", "value": folder}
    if match_files is None:
        raise ValueError(f"path {pattern!r} is a glob: this graph cannot list its files (only folders work here)")
    return {"field": f"meta.{FILE_ID}", "operator": "in", "value": Values(match_files(stripped.lstrip("/")))}


def _typed(raw: str) -> Any:
    text = raw.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def field_key(name: str) -> str:
    """The payload key a `where` field names: Needle's own (`date`, `tag`, `folder`...) or a frontmatter field."""
    return _OWN_FIELDS.get(name.lower(), f"meta.frontmatter.{name}")


def where_condition(expression: str, now: datetime.datetime) -> Filter:
    """
    One `field=value` condition: `=` (or `:`) equals, `a|b` any of, `!=`, and `>`, `>=`, `<`, `<=` on numbers
    or dates (ISO or plain language). A frontmatter field's equality matches its `name=value` keyword in
    `meta.fields` (indexed; case-insensitive; `2` matches a number 2 or a text "2"), its ranges the typed
    value in `meta.frontmatter.<field>`.

    :raises ValueError: When the expression is not `field<op>value` or a range has no number or date.
    """
    match = _WHERE.match(expression or "")
    if not match or not match.group(3):
        raise ValueError(f"where must read field=value (also !=, >, >=, <, <=; a|b for any of), got {expression!r}")
    name, operator, raw = match.groups()
    key = field_key(name)
    if operator in _RANGE:
        value = _typed(raw)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            bound = parse_bound(str(value), now, end=operator in (">", "<="))
            value = rfc3339(bound)
            operator = {">": ">=", "<=": "<"}.get(operator, operator)
        return {"field": key, "operator": _RANGE[operator], "value": value}
    values = [_typed(part) for part in raw.split("|")] if "|" in raw else [_typed(raw)]
    if key == "meta.tags":
        values = [clean_tag(str(v)) for v in values]
    condition: Filter
    if key.startswith("meta.frontmatter."):
        # Equality on a frontmatter field is one keyword match on the indexed `meta.fields` (`status=draft`).
        from haystack_integrations.components.needle._frontmatter import field_value

        keywords = [field_value(name, value) for value in values]
        condition = (
            {"field": "meta.fields", "operator": "==", "value": keywords[0]}
            if len(keywords) == 1
            else {"field": "meta.fields", "operator": "in", "value": keywords}
        )
    elif len(values) == 1:
        condition = {"field": key, "operator": "==", "value": values[0]}
    else:
        condition = {"field": key, "operator": "in", "value": values}
    if operator == "!=":
        return {"operator": "NOT", "conditions": [condition]}
    return condition


def date_conditions(after: datetime.datetime | None, before: datetime.datetime | None) -> list[Filter]:
    """`meta.date >= after` and `meta.date < before` (either may be `None`)."""
    conditions = []
    if after is not None:
        conditions.append({"field": "meta.date", "operator": ">=", "value": rfc3339(after)})
    if before is not None:
        conditions.append({"field": "meta.date", "operator": "<", "value": rfc3339(before)})
    return conditions


def collection_condition(collections: Iterable[str]) -> Filter | None:
    """Documents of these collections; `None` for all."""
    names = list(collections or [])
    return {"field": "meta.collection", "operator": "in", "value": names} if names else None
