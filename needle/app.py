"""Needle's one facade over the YAML graphs, shared by the CLI, the server, the MCP tools and the eval runner.

It loads each graph once in one environment (one store object per location, see `needle.environment`),
feeds it by the names its contract declares (`needle.contract`), and shapes its named outputs into the
schema of `needle.results`; it implements no retrieval step itself. Each job lives in its own module of
`needle.facade` (graphs, search, indexing, maintenance, inventory); `Needle` puts them together.
"""

from __future__ import annotations

from needle.collections import CollectionError
from needle.errors import LLMError
from needle.facade.graphs import INGEST, configured_graph, reported_stages
from needle.facade.inventory import STATUS_PROBLEMS, Inventory
from needle.facade.maintenance import Maintenance
from needle.facade.search import Searching, sub_questions, warnings


class Needle(Searching, Maintenance, Inventory):
    """
    Runs Needle's graphs for one configuration; thread-safe, each graph (and override set) loaded once.

    `Needle(settings=None, progress_bar=False, environment=None)`: see `needle.facade.base.FacadeBase`.
    Searching and answering come from `needle.facade.search`, indexing from `needle.facade.indexing`,
    check, optimise, backup, restore and collection removal from `needle.facade.maintenance`, and
    `status`, `indexed_files` and `files` from `needle.facade.inventory`.
    """


__all__ = [
    "Needle", "CollectionError", "LLMError", "INGEST", "STATUS_PROBLEMS", "configured_graph", "reported_stages",
    "sub_questions", "warnings",
]
