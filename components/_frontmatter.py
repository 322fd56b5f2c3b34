"""A note's file-level metadata: bounded YAML frontmatter, tags, folders, a document date and identifiers.

`MarkdownChunker` calls these for every file. Frontmatter comes from the user's notes, so it is parsed
within bounds: PyYAML's `safe_load` builds every alias as a shared object, and anything that walks the
result (making it JSON-safe, copying it into each chunk) expands every alias: ten lines of nested
aliases (a "billion laughs") then grow without end. Here the YAML is first composed into its node graph,
where an alias is one pointer, and measured (bytes, aliases, nesting, and the size it would have once
every alias is expanded) before any Python object is built from it.
"""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

# Bounds of a note's frontmatter: far above what notes carry (a few dozen short fields), far below harm.
MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_ALIASES = 100
MAX_DEPTH = 32
MAX_EXPANDED_NODES = 10_000
MAX_IDENTIFIERS = 200
MAX_FIELD_VALUES = 200
MAX_FIELD_VALUE_CHARS = 200
_MAX_NAME_CHARS = 60
# Integers a payload index holds (64-bit); larger ones are kept as text.
_INT64 = 2**63

# Obsidian's tag syntax: `#` after a space or line start, letters, digits, `_`, `-` and `/` (nested tags), not
# only digits. `(`, `[`, `&` and word characters before `#` mean a link anchor, an entity or a URL fragment.
_INLINE_TAG = re.compile(r"(?<![\w#&(\[/\\`])#([A-Za-z0-9_][\w/-]*)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_DATE_KEYS = ("date", "created", "updated")
# Tokens people search for verbatim: ticket ids (KES-142), error and constant names (SQLITE_BUSY,
# ERR_CONNECTION_REFUSED), codes with letters then digits (E1234, CVE-2024-3094), versions (v1.4, 2.31.0).
_IDENTIFIERS = re.compile(
    r"(?<![\w.-])(?:"
    r"[A-Z][A-Z0-9]{1,9}(?:-\d+)+"
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
    r"|[A-Z]{1,5}\d{3,}"
    r"|v\d+(?:\.\d+)+(?:-[\w.]+)?"
    r"|\d+\.\d+\.\d+(?:-[\w.]+)?"
    r")(?![\w-])"
)


class FrontmatterLimitError(ValueError):
    """Frontmatter past one of the bounds above; the message names the bound."""


@dataclass(frozen=True)
class Frontmatter:
    """What the frontmatter gave: its mapping, the first body line, and why it was not used ("" when it was)."""

    data: dict[str, Any]
    body_start: int
    warning: str = ""


def parse_frontmatter(lines: list[str]) -> Frontmatter:
    """
    Read the YAML frontmatter between a first line `---` and the next `---` or `...`, within bounds.

    Invalid YAML is read as text (the block stays in the body, with a warning). YAML past a bound is left
    out: its lines are skipped, the body after them is indexed, and the warning says which bound. A field
    whose value cannot be built (`date: 2024-13-45`) is left out alone, and the warning names it.

    :param lines: The file's lines.
    :returns: The mapping (empty when there is none), the index of the first body line and a warning.
    """
    if not lines or lines[0].rstrip() != "---":
        return Frontmatter({}, 0)
    size = 0
    for i in range(1, len(lines)):
        size += len(lines[i].encode("utf-8", "surrogatepass")) + 1
        if lines[i].rstrip() in ("---", "..."):
            break
        if size > MAX_FRONTMATTER_BYTES:
            return Frontmatter({}, 0, f"frontmatter left out: over {MAX_FRONTMATTER_BYTES} bytes, read as text")
    else:
        return Frontmatter({}, 0)
    try:
        data, left_out = load_fields_bounded("\n".join(lines[1:i]))
    except FrontmatterLimitError as error:
        return Frontmatter({}, i + 1, f"frontmatter left out: {error}")
    except (yaml.YAMLError, RecursionError) as error:
        return Frontmatter({}, 0, f"invalid YAML frontmatter, read as text: {_first_line(error)}")
    if data is None:
        return Frontmatter({}, i + 1)
    if not isinstance(data, dict):
        return Frontmatter({}, 0)  # a thematic break (or a lone value) rather than frontmatter
    warning = "; ".join(f"frontmatter field {name} left out: {reason}" for name, reason in left_out)
    return Frontmatter(json_safe(data), i + 1, warning)


def load_fields_bounded(text: str) -> tuple[Any, list[tuple[str, str]]]:
    """
    `yaml.safe_load` that refuses, before building anything, YAML past the aliases, nesting or expanded-size
    bounds, and leaves out a top-level field whose value cannot be built instead of failing.

    PyYAML checks a value only when it builds it: `date: 2024-13-45` scans as a timestamp and then fails in
    `datetime.date`, `!!int high` in `int()`, a 5,000-digit integer on Python's digit limit. Each such error
    costs its field alone; the other fields are kept.

    :param text: One YAML document.
    :returns: The value (a mapping, another value, or None) and `(field, reason)` per field left out.
    :raises FrontmatterLimitError: Naming the bound that was passed.
    :raises yaml.YAMLError: When the text is not valid YAML, or a root that is not a mapping cannot be built.
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, []
        _check_node(node)
        try:
            return loader.construct_document(node), []
        except Exception as error:
            if not isinstance(node, yaml.MappingNode):
                raise yaml.YAMLError(_first_line(error)) from error
    finally:
        loader.dispose()
    return _construct_fields(node)


def _construct_fields(node: yaml.MappingNode) -> tuple[dict[Any, Any], list[tuple[str, str]]]:
    """Build a mapping node field by field, each with a constructor of its own; the fields that fail are left out."""
    yaml.SafeLoader("").flatten_mapping(node)  # merge keys (`<<: *base`) become ordinary fields
    data: dict[Any, Any] = {}
    left_out: list[tuple[str, str]] = []
    for key_node, value_node in node.value:
        name = key_node.value if isinstance(key_node, yaml.ScalarNode) else f"on line {key_node.start_mark.line + 1}"
        constructor = yaml.SafeLoader("")
        try:
            key = constructor.construct_object(key_node, deep=True)
            hash(key)
            data[key] = constructor.construct_object(value_node, deep=True)
        except Exception as error:
            left_out.append((str(name)[:_MAX_NAME_CHARS], _first_line(error)))
    return data, left_out


def _first_line(error: BaseException) -> str:
    """An error's first line, at most 200 characters (its type when it has no message)."""
    lines = str(error).strip().splitlines()
    return (lines[0] if lines else type(error).__name__)[:MAX_FIELD_VALUE_CHARS]


def _check_node(root: yaml.Node) -> None:
    """Walk the node graph once (aliases are shared nodes), measuring what expanding it would give."""
    expanded: dict[int, int] = {}
    seen_aliases = 0
    # Iterative post-order walk: (node, depth, children done).
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if depth > MAX_DEPTH:
            raise FrontmatterLimitError(f"nested deeper than {MAX_DEPTH} levels")
        children = _children(node)
        if done:
            total = 1 + sum(expanded[id(child)] for child in children)
            if total > MAX_EXPANDED_NODES:
                raise FrontmatterLimitError(f"over {MAX_EXPANDED_NODES} values once its aliases are expanded")
            expanded[id(node)] = total
            continue
        if id(node) in expanded:
            seen_aliases += 1
            if seen_aliases > MAX_ALIASES:
                raise FrontmatterLimitError(f"more than {MAX_ALIASES} aliases")
            continue
        expanded[id(node)] = -1  # on the current path: a node reached again before it is done is a cycle
        stack.append((node, depth, True))
        for child in children:
            if expanded.get(id(child)) == -1:
                raise FrontmatterLimitError("an alias refers to a value that contains it")
            stack.append((child, depth + 1, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def json_safe(value: Any) -> Any:
    """Frontmatter made JSON-safe and typed: dates become ISO strings, keys strings, odd values their `str`."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and not -_INT64 <= value < _INT64:
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def field_value(name: str, value: Any) -> str:
    """One `name=value` keyword of `field_values`: lower case, booleans as `true`/`false`."""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return f"{name.strip().lower()}={' '.join(text.split()).lower()}"


def field_values(frontmatter: dict[str, Any]) -> list[str]:
    """
    The frontmatter's scalar fields as exact-match keywords, `status=draft`, one per element of a list of
    scalars (`attendees=priya raman`), so that a field's equality is one indexed keyword match.

    :returns: At most 200 keywords, values over 200 characters left out.
    """
    found: list[str] = []
    for name, value in frontmatter.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, (str, int, float, bool)) and len(str(item)) <= MAX_FIELD_VALUE_CHARS:
                keyword = field_value(str(name), item)
                if keyword not in found:
                    found.append(keyword)
                    if len(found) == MAX_FIELD_VALUES:
                        return found
    return found


def split_tags(value: Any) -> list[str]:
    """Tags from a frontmatter list or a comma or space separated string, without `#`, lower-cased, deduplicated."""
    if value is None:
        return []
    raw = [str(v) for v in value] if isinstance(value, (list, tuple, set)) else re.split(r"[,\s]+", str(value))
    return unique_tags(raw)


def unique_tags(raw: list[str]) -> list[str]:
    """Tags lower-cased without `#`, each nested tag (`home/network`) followed by its parents, deduplicated."""
    tags: list[str] = []
    for tag in raw:
        tag = tag.strip().lstrip("#").strip().strip("/").lower()
        if not tag:
            continue
        parts = tag.split("/")
        for end in range(len(parts), 0, -1):
            name = "/".join(parts[:end])
            if name and name not in tags:
                tags.append(name)
    return tags


def inline_tags(lines: list[str], code_lines: set[int], first: int) -> list[str]:
    """
    `#tags` written in the body, outside fenced code (`code_lines`) and inline code spans.

    :param lines: The file's lines.
    :param code_lines: Indices of lines inside fenced code blocks.
    :param first: Index of the first body line (after the frontmatter).
    :returns: The tags in order of appearance, as `unique_tags` shapes them.
    """
    found: list[str] = []
    for index in range(first, len(lines)):
        line = lines[index]
        if index in code_lines or "#" not in line or line.startswith("    ") or line.startswith("\t"):
            continue
        line = _INLINE_CODE.sub(" ", line)
        found.extend(tag for tag in _INLINE_TAG.findall(line) if not tag.replace("/", "").isdigit())
    return unique_tags(found)


def folders(path: str) -> tuple[str, list[str]]:
    """A file's folder (`""` at the root) and every folder above it, outermost first (`a`, `a/b`)."""
    parts = PurePosixPath(path).parts[:-1]
    return "/".join(parts), ["/".join(parts[: end + 1]) for end in range(len(parts))]


def document_date(frontmatter: dict[str, Any], path: str, mtime: Any) -> tuple[str | None, str | None]:
    """
    A note's date as RFC 3339 in UTC: frontmatter `date`, `created` or `updated`, else a date in the file
    name (`2024-05-11-standup.md`, `okrs-2025-q3.md`, `brittany-august-2025.md`), else in its folders
    (`journal/2024/05/11.md`), else the file's modification time.

    :returns: The date and where it came from (`frontmatter`, `file name`, `path`, `mtime`); `(None, None)`
        when none.
    """
    for key in _DATE_KEYS:
        parsed = _parse_date(frontmatter.get(key))
        if parsed is not None:
            try:
                return _rfc3339(parsed), "frontmatter"
            except (OverflowError, ValueError):  # a moment past year 1 or 9999 once in UTC
                continue
    from haystack_integrations.components.needle._dates import path_date

    from_path = path_date(path)
    if from_path is not None:
        return _rfc3339(from_path[0]), from_path[1]
    if isinstance(mtime, (int, float)) and not isinstance(mtime, bool) and math.isfinite(mtime):
        try:
            return _rfc3339(datetime.datetime.fromtimestamp(mtime, tz=datetime.timezone.utc)), "mtime"
        except (OverflowError, OSError, ValueError):
            pass
    return None, None


def _parse_date(value: Any) -> datetime.datetime | None:
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            return datetime.datetime.fromisoformat(text)
        except ValueError:
            return None
    return None


def _rfc3339(moment: datetime.datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment.replace(microsecond=0).isoformat() + "Z"


def identifiers(text: str) -> list[str]:
    """The exact-match tokens of a text (ticket ids, error constants, codes, versions), in order, at most 200."""
    found: list[str] = []
    for match in _IDENTIFIERS.finditer(text):
        token = match.group(0)
        if token not in found:
            found.append(token)
            if len(found) == MAX_IDENTIFIERS:
                break
    return found
