"""`NeedleInterface`: what every shell calls on Needle, in this process or through the process holding the index.

Two facades implement it: `needle.facade.api.Needle` runs the graphs here, `needle.owner.remote.RemoteNeedle` asks the
index's owner to run them (`needle serve`, `needle mcp`, `needle watch`) and gets the same answers back. Each
command's method takes its request (`needle.core.requests`) and returns its typed result (`needle.core.results`,
`needle.core.index_results`); the command table (`needle.commands.table`) names the method each command calls. The
shells (`needle.shells.cli`, `needle.commands.dispatch`, `needle.shells.mcp`, `needle.shells.http`, the endpoint
wrappers of `server/pipelines/`) type the facade as `NeedleInterface`, so a call one facade lacks, or takes with
other parameters, is a type error (`make lint` runs mypy, which checks both below); `tests/test_interface.py`
also compares the parameters' defaults, which the type checker does not.

Only types are imported, so a light command (`needle mcp` listing its tools) loads neither Haystack nor
pydantic through this module.

Usage example:
```python
def run(needle: NeedleInterface) -> None:
    answer = needle.search(SearchRequest(query="certbot renew", limit=5), pipeline="search")
    text = needle.read(GetRequest(ref=answer.results[0].docid)).text
```
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from haystack import Pipeline

    from needle.core.collections import CollectionRegistry
    from needle.core.contexts import ContextRegistry
    from needle.core.files.batches import FileBatch
    from needle.core.files.reading import FileText
    from needle.core.index_results import BackupReport, CheckReport, IndexedFile, IndexReport, OptimizeReport, Status
    from needle.core.link_results import LinkReport, RelatedReport
    from needle.core.requests import (
        AnswerRequest,
        BackupRequest,
        CheckRequest,
        CollectionRemoveRequest,
        GetRequest,
        IndexRequest,
        LinksRequest,
        ListRequest,
        MultiGetRequest,
        RelatedRequest,
        RestoreRequest,
        SearchRequest,
    )
    from needle.core.results import Answer, SearchAnswer
    from needle.core.settings import Settings
    from needle.facade.api import Needle


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

    def warm(self, name: str) -> Pipeline | None:
        """Load and warm a graph's instances (none to warm through an owner, which warmed its own)."""
        ...

    def search(self, request: SearchRequest, pipeline: str = "query", init_overrides: bool = True) -> SearchAnswer:
        """Run a query graph (`search`, `vsearch`, `query`, ...) and shape its results."""
        ...

    def answer(self, request: AnswerRequest, pipeline: str = "rag") -> Answer:
        """Answer a question from the notes with the configured LLM, citing its sources."""
        ...

    def index(self, request: IndexRequest, progress: Callable[[IndexReport], None] | None = None) -> IndexReport:
        """Index collections (all when none is named); returns the run's report."""
        ...

    def status(self) -> Status:
        """The index's state: counts, collections, models, problems."""
        ...

    def ls(self, request: ListRequest) -> list[IndexedFile]:
        """The indexed files (`needle ls`)."""
        ...

    def read(self, request: GetRequest) -> FileText:
        """A note, or a range of its lines (`needle get`)."""
        ...

    def read_many(self, request: MultiGetRequest) -> FileBatch:
        """The notes a glob or a list of references names, within budgets."""
        ...

    def links(self, request: LinksRequest) -> LinkReport:
        """A note's outgoing links and backlinks, each with its line (`needle links`)."""
        ...

    def related(self, request: RelatedRequest) -> RelatedReport:
        """The notes related to one note by links and by meaning, with reasons (`needle related`)."""
        ...

    def remove_collection(self, request: CollectionRemoveRequest) -> int:
        """Forget a collection and delete its chunks; returns how many were deleted."""
        ...

    def optimize(self) -> OptimizeReport:
        """Lay the index out as the `index:` settings say."""
        ...

    def backup(self, request: BackupRequest) -> BackupReport:
        """Back the index up into a new folder."""
        ...

    def restore(self, request: RestoreRequest) -> BackupReport:
        """Put a backup in place of the index."""
        ...

    def check(self, request: CheckRequest) -> CheckReport:
        """Check the index against the collections' files (and repair what it can)."""
        ...

    def close(self) -> None:
        """Release what the facade holds (the index's stores, or the connection to the owner)."""
        ...

    def local(self, what: str) -> Needle:
        """The in-process facade, for a command that reads the index's stores itself; a remote one refuses."""
        ...


__all__ = ["NeedleInterface"]
