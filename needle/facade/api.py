"""Needle's one facade over the YAML graphs, shared by the CLI, the server, the MCP tools and the eval runner.

It loads each graph once in one environment (one store object per location, see `needle.runtime.environment`),
feeds it by the names its contract declares (`needle.runtime.contract`), and shapes its named outputs into the
schema of `needle.core.results`; it implements no retrieval step itself. Each job lives in its own module of
`needle.facade` (graphs, search, indexing, maintenance, inventory); `Needle` puts them together.
"""

from __future__ import annotations

from needle.core.collections import CollectionError
from needle.core.errors import LLMError
from needle.facade.graph_loading import INGEST, configured_graph, reported_stages
from needle.facade.inventory import STATUS_PROBLEMS, Inventory
from needle.facade.maintenance import Maintenance
from needle.facade.searching import Searching, sub_questions, warnings


class Needle(Searching, Maintenance, Inventory):
    """
    Runs Needle's graphs for one configuration; thread-safe, each graph (and override set) loaded once.

    `Needle(settings=None, progress_bar=False, environment=None)`: see `needle.facade.base.FacadeBase`.
    Searching and answering come from `needle.facade.searching`, indexing from `needle.facade.indexing`,
    check, optimise, backup, restore and collection removal from `needle.facade.maintenance`, and
    `status`, `indexed_files` and `files` from `needle.facade.inventory`.
    """

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
