"""Context annotations: what the user says a collection or a folder holds, kept in `<data_dir>/contexts.yml`.

`needle context add notes/runbooks "on-call runbooks for the kestrel services"` attaches a line of text to
every file under `notes/runbooks`; each search result carries the annotations of its collection and of
every folder above it, outermost first, so that a person or an agent reading one hit knows what kind of
note it is (tobi/qmd's `context add`).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from needle.core.atomic import write_atomic

MAX_CONTEXT_CHARS = 500


class ContextError(ValueError):
    """A context annotation is malformed or unknown."""


def normalise_prefix(prefix: str) -> str:
    """`collection/folder` without surrounding slashes; `..` and empty parts refused."""
    text = str(prefix or "").strip().strip("/")
    parts = text.split("/")
    if not text or any(part in ("", ".", "..") for part in parts):
        raise ContextError(f"a context needs a collection or a collection/folder path, got {prefix!r}")
    return "/".join(parts)


class ContextRegistry:
    """Reads and writes the annotations (prefix → text); every write replaces the file atomically."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._parsed: tuple[tuple[int, int, int], dict[str, str]] | None = None

    def load(self) -> dict[str, str]:
        """
        The annotations by prefix (`collection` or `collection/folder/...`); empty when there are none.

        :raises ContextError: When the file is malformed.
        """
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return {}
        version = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if self._parsed is None or self._parsed[0] != version:
            try:
                data = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
            except yaml.YAMLError as error:
                raise ContextError(f"{self.path} is malformed: {error}") from error
            contexts = data.get("contexts", {}) if isinstance(data, dict) else None
            if not isinstance(contexts, dict):
                raise ContextError(f"{self.path} is malformed: expected contexts: {{prefix: text}}")
            self._parsed = (version, {str(k): str(v) for k, v in contexts.items()})
        return dict(self._parsed[1])

    def add(self, prefix: str, text: str) -> str:
        """
        Attach (or replace) the annotation of a prefix.

        :returns: The normalised prefix.
        :raises ContextError: When the prefix or the text is empty, or the text is over 500 characters.
        """
        prefix = normalise_prefix(prefix)
        text = " ".join(str(text or "").split())
        if not text or len(text) > MAX_CONTEXT_CHARS:
            raise ContextError(f"a context is 1 to {MAX_CONTEXT_CHARS} characters of text, got {len(text)}")
        contexts = self.load()
        contexts[prefix] = text
        self._save(contexts)
        return prefix

    def remove(self, prefix: str) -> None:
        """:raises ContextError: When the prefix has no annotation."""
        prefix = normalise_prefix(prefix)
        contexts = self.load()
        if prefix not in contexts:
            raise ContextError(f"no context for {prefix!r}; `needle context list` shows them")
        del contexts[prefix]
        self._save(contexts)

    def describe(self, collection: str, path: str, contexts: dict[str, str] | None = None) -> str | None:
        """
        The annotations of a file: its collection's, then each folder's down to its own, joined by " › ".

        :param collection: The file's collection.
        :param path: The file's path inside the collection.
        :param contexts: Annotations already loaded (read from the file when `None`).
        :returns: The combined text, or `None` when none applies.
        """
        contexts = self.load() if contexts is None else contexts
        parts = [collection, *path.split("/")]
        found = [contexts[key] for key in ("/".join(parts[: end + 1]) for end in range(len(parts))) if key in contexts]
        return " › ".join(found) if found else None

    def _save(self, contexts: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        listing = {"contexts": dict(sorted(contexts.items()))}
        write_atomic(self.path, yaml.safe_dump(listing, allow_unicode=True, sort_keys=False))
        self._parsed = None
