"""What a collection's notes hold to filter by: their frontmatter fields and tags, counted at index time.

An agent writing a filter (`where: status=draft`, `tags: [postgres]`) needs the fields that exist, their
types and their frequent values. Listing every file's frontmatter on each `status` would grow with the
index; the engine already keeps every file's `name=value` keywords (`meta.fields`) and tags in keyword
indexes, so an index run counts them once per collection with two facets over the whole-file store, and
`status` reads what it recorded (`needle.lifecycle.provenance`).
"""

from __future__ import annotations

import re
from typing import Any

# Most frequent values (and tags) kept per field.
TOP_VALUES = 10
# Fields kept per collection, the most widespread first.
MAX_FIELDS = 50

_INTEGER = re.compile(r"-?\d+")
_NUMBER = re.compile(r"-?(\d+\.\d*|\.\d+)(e-?\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([t ]\d{2}:\d{2}(:\d{2})?.*)?")


def value_type(value: str) -> str:
    """The type a frontmatter value's keyword text reads as: boolean, integer, number, date or string."""
    if value in ("true", "false"):
        return "boolean"
    if _INTEGER.fullmatch(value):
        return "integer"
    if _NUMBER.fullmatch(value):
        return "number"
    if _DATE.fullmatch(value):
        return "date"
    return "string"


def _type_of(values: dict[str, int]) -> str:
    """One type for a field: the values' common type, `number` for integers mixed with numbers, else `string`."""
    types = {value_type(v) for v in values}
    if len(types) == 1:
        return types.pop()
    return "number" if types == {"integer", "number"} else "string"


def _top(counts: dict[str, int]) -> list[list[Any]]:
    """The most frequent values with their counts, most frequent first (ties by value)."""
    return [[value, count] for value, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_VALUES]]


def summarise_fields(keywords: dict[str, int]) -> dict[str, dict[str, Any]]:
    """
    Fields from their `name=value` keyword counts (`haystack_integrations.components.needle._frontmatter.field_values`, lower-cased).

    :param keywords: `name=value` → number of files holding it.
    :returns: Field name → `type`, `values` (how many distinct values) and `top` ([value, files] pairs, most
        frequent first), for the `MAX_FIELDS` fields the most files hold.
    """
    by_field: dict[str, dict[str, int]] = {}
    for keyword, count in keywords.items():
        name, sep, value = keyword.partition("=")
        if sep and name:
            by_field.setdefault(name, {})[value] = count
    fields = {
        name: {"type": _type_of(values), "values": len(values), "top": _top(values)}
        for name, values in by_field.items()
    }
    widest = sorted(fields, key=lambda name: (-sum(by_field[name].values()), name))[:MAX_FIELDS]
    return {name: fields[name] for name in widest}


def summarise(file_store: Any, collection: str) -> dict[str, Any]:
    """
    A collection's filterable fields and tags, from two facets over the whole-file store's keyword indexes.

    :param file_store: The store of whole-file documents (one per file, `meta.fields` and `meta.tags`).
    :param collection: The collection's name.
    :returns: `fields` (see `summarise_fields`) and `tags` ([tag, files] pairs, most frequent first).
    """
    in_collection = {"field": "meta.collection", "operator": "==", "value": collection}
    return {
        "fields": summarise_fields(file_store.count_values("fields", in_collection)),
        "tags": _top(file_store.count_values("tags", in_collection)),
    }


def summaries(store: Any, file_store: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    """
    What an index run records of each collection named: its chunk and file counts (two facets over the
    collection keyword) with its fields and tags (`summarise`), so that `status` reads instead of counting.

    :param store: The chunk store.
    :param file_store: The whole-file store.
    :param names: The collections to summarise.
    :returns: Collection → `chunks`, `files`, `fields`, `tags`.
    """
    if not names:
        return {}
    chunk_counts = store.count_values("collection")
    file_counts = file_store.count_values("collection")
    return {
        name: {"chunks": chunk_counts.get(name, 0), "files": file_counts.get(name, 0), **summarise(file_store, name)}
        for name in names
    }
