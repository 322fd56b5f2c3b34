"""`NeedleInterface`: what every shell calls on Needle, in this process or through the process holding the index.

Two facades implement it: `needle.facade.api.Needle` runs the graphs here, `needle.owner.remote.RemoteNeedle` asks the
index's owner to run them (`needle serve`, `needle mcp`, `needle watch`) and gets the same answers back. The
shells (`needle.shells.cli`, `needle.commands.dispatch`, `needle.shells.mcp`, `needle.shells.http`, the endpoint wrappers of
`server/pipelines/`) type the facade as `NeedleInterface`, so a call one facade lacks, or takes with other
parameters, is a type error (`make lint` runs mypy, which checks both below); `tests/test_interface.py`
also compares the parameters' defaults, which the type checker does not.

Only types are imported, so a light command (`needle mcp` listing its tools) loads neither Haystack nor
pydantic through this module.

Usage example:
```python
def run(needle: NeedleInterface) -> None:
    answer = needle.search("certbot renew", pipeline="search", top_k=5)
    text = needle.core.files.read(answer.results[0].docid).text
```
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from haystack import Pipeline

    from needle.core.collections import CollectionRegistry
    from needle.core.contexts import ContextRegistry
    from needle.core.files.multi_get import FileBatch
    from needle.core.files.reading import FileText
    from needle.core.results import Answer, SearchAnswer, SearchFilters
    from needle.core.settings import Settings
    from needle.facade.api import Needle


@runtime_checkable
class FilesInterface(Protocol):
    """Reading the collections' files by reference or glob (`get`, `multi_get`): `needle.core.files` or its remote twin."""

    def read(self, ref: str, from_line: int = 1, max_lines: int | None = None) -> FileText:
        """A file or a range of its lines (`needle.core.files.reading.FileReader.read`)."""
        ...

    def read_many(self, pattern: str | None = None, refs: list[str] | None = None, max_bytes: int = ...) -> FileBatch:
        """
        The files a glob or a list of references names, within budgets
        (`needle.core.files.multi_get.FileAccess.read_many`; `max_bytes` defaults to its `DEFAULT_MAX_BYTES`).
        """
        ...


@runtime_checkable
class NeedleInterface(Protocol):
    """
    The facade the shells call: search, answer, index, maintain and inventory the index, read its files.

    Each method is documented on `needle.facade.api.Needle`; `needle.owner.remote.RemoteNeedle` refuses, with a message
    and an exit code, what only the process holding the index can do (`optimize`, `restore`, `--rebuild`).
    """

    @property
    def settings(self) -> Settings:
        """Needle's settings."""
        ...

    @property
    def collections(self) -> CollectionRegistry:
        """The user's collections (a plain file in the data folder, read and written in this process)."""
        ...

    @property
    def contexts(self) -> ContextRegistry:
        """The context annotations of collections and folders."""
        ...

    @property
    def files(self) -> FilesInterface:
        """Reading the collections' files (`get`, `multi_get`)."""
        ...

    def warm(self, name: str) -> Pipeline | None:
        """Load and warm a graph's instances (none to warm through an owner, which warmed its own)."""
        ...

    def search(
        self,
        query: str,
        pipeline: str = "query",
        top_k: int | None = None,
        collections: list[str] | None = None,
        min_score: float | None = None,
        expand: bool | None = None,
        rerank: bool | None = None,
        chunks: bool = False,
        explain: bool = False,
        overrides: Mapping[str, Any] | None = None,
        init_overrides: bool = True,
        filters: SearchFilters | None = None,
        decompose: bool | None = None,
    ) -> SearchAnswer:
        """Run a query graph (`search`, `vsearch`, `query`, ...) and shape its results."""
        ...

    def answer(
        self,
        question: str,
        top_k: int | None = None,
        collections: list[str] | None = None,
        min_score: float | None = None,
        expand: bool | None = None,
        rerank: bool | None = None,
        pipeline: str = "rag",
        overrides: Mapping[str, Any] | None = None,
        filters: SearchFilters | None = None,
        decompose: bool | None = None,
        retry: bool | None = None,
    ) -> Answer:
        """Answer a question from the notes with the configured LLM, citing its sources."""
        ...

    def index(
        self,
        names: list[str] | None = None,
        rebuild: bool = False,
        overrides: Mapping[str, Any] | None = None,
        paths: list[str] | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Index collections (all when `names` is empty); returns the run's report."""
        ...

    def status(self) -> dict[str, Any]:
        """The index's state: counts, collections, models, problems."""
        ...

    def indexed_files(self, collection: str | None = None) -> list[dict[str, Any]]:
        """The indexed files (`needle ls`)."""
        ...

    def remove_collection(self, name: str) -> int:
        """Forget a collection and delete its chunks; returns how many were deleted."""
        ...

    def optimize(self) -> dict[str, Any]:
        """Lay the index out as the `index:` settings say."""
        ...

    def backup(self, path: str) -> dict[str, Any]:
        """Back the index up into a new folder."""
        ...

    def restore(self, path: str) -> dict[str, Any]:
        """Put a backup in place of the index."""
        ...

    def check(self, repair: bool = False) -> dict[str, Any]:
        """Check the index against the collections' files (and repair what it can)."""
        ...

    def close(self) -> None:
        """Release what the facade holds (the index's stores, or the connection to the owner)."""
        ...

    def local(self, what: str) -> Needle:
        """The in-process facade, for a command that reads the index's stores itself; a remote one refuses."""
        ...


__all__ = ["FilesInterface", "NeedleInterface"]
