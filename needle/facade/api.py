"""Needle's one facade over the YAML graphs, shared by the CLI, the server, the MCP tools and the eval runner.

`Needle` is a few collaborators, each named by what it does, and delegates every call to one of them:
`GraphRuntime` loads each graph once in one environment (one store object per location, see
`needle.runtime.environment`), `Searcher` feeds a request to a query or answer graph by its contract
(`needle.runtime.contract`) and shapes its named outputs into `needle.core.results`, `Indexer` runs the ingest
graph batch by batch, `Maintainer` checks, repairs, optimises, backs up and restores the index, `Inventory` says
what it holds and reads its files. None implements a retrieval step itself. Each method takes its request
(`needle.core.requests`) and returns a typed result (`needle.core.results`, `needle.core.index_results`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from haystack import Pipeline

from needle.core.collections import CollectionError, CollectionRegistry
from needle.core.contexts import ContextRegistry
from needle.core.errors import LLMError
from needle.core.files.batches import FileAccess, FileBatch
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
from needle.core.settings import Settings, load_settings
from needle.facade.graph_loading import INGEST, GraphRuntime, configured_graph, reported_stages
from needle.facade.index_handle import IndexHandle
from needle.facade.indexing import Indexer
from needle.facade.inventory import STATUS_PROBLEMS, Inventory
from needle.facade.maintenance import Maintainer
from needle.facade.searching import Searcher, sub_questions, warnings
from needle.runtime.environment import Environment
from needle.runtime.loader import overrides_apply_somewhere


class Needle:
    """
    Runs Needle's graphs for one configuration; thread-safe, each graph (and override set) loaded once.

    Usage example:
    ```python
    needle = Needle()
    needle.index(IndexRequest())
    answer = needle.search(QueryRequest(query="pod restarts", limit=5), pipeline="query")
    needle.read(GetRequest(ref=answer.results[0].docid, max_lines=20)).text
    ```
    """

    def __init__(
        self, settings: Settings | None = None, progress_bar: bool = False, environment: Environment | None = None
    ) -> None:
        """
        :param settings: Needle's settings; loaded from the environment when `None` (or the environment's).
        :param progress_bar: Whether indexing shows progress bars.
        :param environment: Share another Needle's stores (`other.environment.derive(settings)`); one store
            object per index folder in a process, since the embedded engine opens a folder once.
        :raises PipelineError: When the configuration's `set` names a component or parameter no graph has.
        """
        settings = settings or (environment.settings if environment else load_settings())
        if settings.set:
            overrides_apply_somewhere(settings.set)
        environment = environment or Environment(settings, progress_bar=progress_bar)
        self._handle = IndexHandle(settings, environment)
        self.runtime = GraphRuntime(settings, environment)
        self.searcher = Searcher(self._handle, self.runtime)
        self.indexer = Indexer(self._handle, self.runtime)
        self.maintainer = Maintainer(self._handle, self.runtime, self.indexer)
        self.inventory = Inventory(self._handle, self.runtime, lambda: self.indexer.index_run)

    # ---- what the index is ------------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """Needle's settings."""
        return self._handle.settings

    @property
    def environment(self) -> Environment:
        """The stores and models the graphs share (`derive` it to share them with another Needle)."""
        return self._handle.environment

    @property
    def collections(self) -> CollectionRegistry:
        """The user's collections."""
        return self._handle.collections

    @property
    def contexts(self) -> ContextRegistry:
        """The context annotations of collections and folders."""
        return self._handle.contexts

    @property
    def store(self) -> Any:
        """The chunk store every graph of this Needle shares."""
        return self._handle.store

    @property
    def file_store(self) -> Any:
        """The store of whole-file documents beside the chunks."""
        return self._handle.file_store

    @property
    def index_lock(self) -> Any:
        """The lock index runs, optimising, checks and backups take turns on (a reentrant lock)."""
        return self._handle.lock

    @property
    def files(self) -> FileAccess:
        """Reading the collections' files by reference or glob, within each collection's rules."""
        return self.inventory.files

    @property
    def index_run(self) -> dict[str, Any] | None:
        """The index run under way in this process (`Indexer.index_run`), `None` between runs."""
        return self.indexer.index_run

    # ---- the graphs -------------------------------------------------------------------------------------
    def pipeline(self, name: str, overrides: dict[str, Any] | None = None) -> Pipeline:
        """A graph, loaded and warmed once per set of overrides (`GraphRuntime.pipeline`)."""
        return self.runtime.pipeline(name, overrides)

    def warm(self, name: str) -> Pipeline:
        """Load and warm every instance of a graph that concurrent runs may need (`GraphRuntime.warm`)."""
        return self.runtime.warm(name)

    def ingest_graph(self) -> dict[str, Any]:
        """The ingest graph's dictionary with the configuration's overrides (for the index's provenance)."""
        return self.runtime.ingest_graph()

    # ---- searching --------------------------------------------------------------------------------------
    def search(self, request: SearchRequest, pipeline: str = "query", init_overrides: bool = True) -> SearchAnswer:
        """Run a query graph and shape its results (`Searcher.search`; the self-query fallback included)."""
        return self.searcher.search(request, pipeline, init_overrides)

    def answer(self, request: AnswerRequest, pipeline: str = "rag") -> Answer:
        """Answer a question from the notes with the configured LLM, citing its sources (`Searcher.answer`)."""
        return self.searcher.answer(request, pipeline)

    def query_languages(self, collections: list[str] | None = None) -> dict[str, int]:
        """The languages of the chunks a query searches (`Searcher.query_languages`)."""
        return self.searcher.query_languages(collections)

    def prime(self) -> None:
        """One search, paying before the first request what a first run builds once (`Searcher.prime`)."""
        self.searcher.prime()

    def read_ahead(self) -> int:
        """Read the stores ahead of the queries (`Searcher.read_ahead`); returns the points read."""
        return self.searcher.read_ahead()

    # ---- indexing and upkeep ----------------------------------------------------------------------------
    def index(self, request: IndexRequest, progress: Callable[[IndexReport], None] | None = None) -> IndexReport:
        """Index collections (all when none is named): new and changed chunks embedded (`Indexer.run`)."""
        return self.indexer.run(request, progress)

    def check(self, request: CheckRequest) -> CheckReport:
        """Read the whole index for damage, and repair what can be repaired (`Maintainer.check`)."""
        return self.maintainer.check(request.repair)

    def optimize(self) -> OptimizeReport:
        """Lay the index out as the `index:` settings say (`Maintainer.optimize`)."""
        return self.maintainer.optimize()

    def backup(self, request: BackupRequest) -> BackupReport:
        """Back the index up into a new folder (`Maintainer.backup`)."""
        return self.maintainer.backup(request.path)

    def restore(self, request: RestoreRequest) -> BackupReport:
        """Put a backup in place of the index (`Maintainer.restore`)."""
        return self.maintainer.restore(request.path)

    def remove_collection(self, request: CollectionRemoveRequest) -> int:
        """Forget a collection and delete its chunks; returns how many (`Maintainer.remove_collection`)."""
        return self.maintainer.remove_collection(request.name)

    def delete_chunks(self, name: str) -> int:
        """Delete a collection's chunks, leaving the collection list as it is (`Maintainer.delete_chunks`)."""
        return self.maintainer.delete_chunks(name)

    @contextmanager
    def writes_paused(self) -> Iterator[None]:
        """Hold off index runs and every write to the stores while the block runs (`Maintainer.writes_paused`)."""
        with self.maintainer.writes_paused():
            yield

    # ---- inventory --------------------------------------------------------------------------------------
    def status(self) -> Status:
        """The index's state: counts, collections, models, problems (`Inventory.status`)."""
        return self.inventory.status()

    def ls(self, request: ListRequest) -> list[IndexedFile]:
        """The indexed files, sorted (`Inventory.ls`)."""
        return self.inventory.ls(request)

    def read(self, request: GetRequest) -> FileText:
        """A note, or a range of its lines (`Inventory.read`)."""
        return self.inventory.read(request)

    def read_many(self, request: MultiGetRequest) -> FileBatch:
        """The notes a glob or a list of references names, within budgets (`Inventory.read_many`)."""
        return self.inventory.read_many(request)

    def links(self, request: LinksRequest) -> LinkReport:
        """A note's outgoing links and backlinks with their lines (`Inventory.links`)."""
        return self.inventory.links(request)

    def related(self, request: RelatedRequest) -> RelatedReport:
        """The notes related to one note by links and meaning, with reasons (`Inventory.related`)."""
        return self.inventory.related(request)

    # ---- the process ------------------------------------------------------------------------------------
    def attach_watcher(self, watcher: Any) -> None:
        """
        Show a watcher keeping this index live (`needle.lifecycle.watch.Watcher`) in `status`.

        :param watcher: Anything with a `state()` returning a JSON-able dictionary; `None` detaches it.
        """
        self.inventory.watcher = watcher

    def close(self) -> None:
        """Release the stores (the embedded index unlocks); the graphs stay loaded and reopen them on next use."""
        self._handle.close()

    def local(self, what: str) -> Needle:
        """
        This facade, for a command that reads the index's stores itself (`needle migrate`).

        :param what: The command, as the refusal of a remote facade names it.
        :returns: `self`: the index is open in this process.
        """
        return self


__all__ = [
    "INGEST",
    "STATUS_PROBLEMS",
    "CollectionError",
    "LLMError",
    "Needle",
    "configured_graph",
    "reported_stages",
    "sub_questions",
    "warnings",
]
