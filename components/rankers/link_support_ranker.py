"""A small boost for a result that the query's other top results link to, or that links to them."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._index_models import FROM_SETTINGS, records_file, without
from needle.core.documents import replace
from needle.core.file_records import split_key
from needle.core.schema import FILE_ID, LINK_SUPPORT


@component
class LinkSupportRanker:
    """
    Raises the results that the query's best other results link to, or that link to them, then re-sorts.

    A note that several good hits link to (a concept note whose words live in the notes that use it) or that
    links to several of them (a hub or map-of-content note grouping them) is often what the question is
    about, even when its own words match the query less well. For each of the first `candidates` results,
    the stage counts the other notes among the first `top_hits` that link to it (`in`) and that it links to
    (`out`), reading the link table beside the stat record (`needle.core.link_table`); a result linked with
    at least `min_hits` of them (either way) gets `min(max_boost, in_weight · in + out_weight · out)` added
    to its score. It records the counts and what it added in `meta["link_support"]`. A note's links to
    itself, links that resolve to nothing and notes of other collections count for nothing; a collection
    without links (a folder of plain documents) leaves every score and the order exactly as given. Haystack
    has no ranker that reads links between documents.

    The defaults are those of `pipelines/query-links.yml`, which is off by default: on a linked vault they
    lifted nDCG@10 by 0.009 and cost the bundled notes one first place (docs/evaluation.md, "Links as a
    ranking signal").

    Usage example:
    ```python
    ranker = LinkSupportRanker(records_path="~/.needle/index/files.sqlite", in_weight=0.05, min_hits=2)
    ranker.run(documents=blended)["documents"]
    ```
    """

    def __init__(
        self,
        records_path: str | None = FROM_SETTINGS,
        top_hits: int = 5,
        candidates: int = 10,
        in_weight: float = 0.05,
        out_weight: float = 0.0,
        max_boost: float = 0.1,
        min_hits: int = 2,
    ) -> None:
        """
        Create the stage.

        :param records_path: The stat record's SQLite file the link table lives in; default: the index's,
            from Needle's settings. `None` switches the stage off.
        :param top_hits: How many of the first results count as the query's good hits.
        :param candidates: How many of the first results may be raised.
        :param in_weight: Added for each good hit that links to the result.
        :param out_weight: Added for each good hit the result links to.
        :param max_boost: The most the stage adds to one result.
        :param min_hits: How many distinct good hits must be linked with a result (either way) before it is raised.
        :raises ValueError: When a count is not a positive integer or a weight is negative.
        """
        for name, count in (("top_hits", top_hits), ("candidates", candidates), ("min_hits", min_hits)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"{name} must be a positive integer, got {count!r}")
        if min(in_weight, out_weight, max_boost) < 0:
            raise ValueError(
                f"in_weight, out_weight and max_boost must be >= 0, got {in_weight}, {out_weight}, {max_boost}"
            )
        self._from_settings = {"records_path"} if records_path is FROM_SETTINGS else set()
        if records_path is FROM_SETTINGS:
            records_path = records_file()
        self.records_path = records_path
        self.top_hits = top_hits
        self.candidates = candidates
        self.in_weight = in_weight
        self.out_weight = out_weight
        self.max_boost = max_boost
        self.min_hits = min_hits

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        data = default_to_dict(
            self,
            records_path=self.records_path,
            top_hits=self.top_hits,
            candidates=self.candidates,
            in_weight=self.in_weight,
            out_weight=self.out_weight,
            max_boost=self.max_boost,
            min_hits=self.min_hits,
        )
        return without(data, self._from_settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LinkSupportRanker":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], enabled: bool = True) -> dict[str, list[Document]]:
        """
        Apply the boost.

        :param documents: Results, best first, each with its file id (`meta[FILE_ID]`, `collection:path`);
            a file's several chunks count as one note.
        :param enabled: `False` passes the documents through untouched.
        :returns: A dictionary with `documents`, re-sorted by score (stable) when any was raised, else as given.
        """
        if not enabled or not documents or not self.records_path:
            return {"documents": documents}
        order: list[str] = []
        for doc in documents:
            file_id = doc.meta.get(FILE_ID)
            if isinstance(file_id, str) and file_id not in order:
                order.append(file_id)
        hits, raised = order[: self.top_hits], set(order[: self.candidates])
        targets = self._targets(set(hits) | raised)
        boosts: dict[str, tuple[int, int, float]] = {}
        for file_id in raised:
            sources = {hit for hit in hits if hit != file_id and file_id in targets.get(hit, set())}
            cited = {hit for hit in hits if hit != file_id and hit in targets.get(file_id, set())}
            if len(sources | cited) < self.min_hits:
                continue
            linked_from, links_to = len(sources), len(cited)
            boost = min(self.max_boost, self.in_weight * linked_from + self.out_weight * links_to)
            if boost > 0:
                boosts[file_id] = (linked_from, links_to, boost)
        if not boosts:
            return {"documents": documents}
        out = []
        for doc in documents:
            found = boosts.get(doc.meta.get(FILE_ID, ""))
            if found is None:
                out.append(doc)
                continue
            linked_from, links_to, boost = found
            trace = {"in": linked_from, "out": links_to, "boost": boost}
            out.append(replace(doc, score=(doc.score or 0.0) + boost, meta={**doc.meta, LINK_SUPPORT: trace}))
        out.sort(key=lambda d: -(d.score or 0.0))
        return {"documents": out}

    def _targets(self, file_ids: set[str]) -> dict[str, set[str]]:
        """The file ids each note's links resolve to, for the notes given (those of a collection without links: none)."""
        if not self.records_path:
            return {}
        from needle.core.link_table import LinkTable  # read when run: importing the component stays light

        table = LinkTable(self.records_path)
        by_collection: dict[str, list[str]] = {}
        for file_id in sorted(file_ids):
            collection, path = split_key(file_id)
            by_collection.setdefault(collection, []).append(path)
        known = set(table.collections())
        targets: dict[str, set[str]] = {}
        for collection, paths in by_collection.items():
            if collection not in known:
                continue
            resolver = table.resolver(collection)
            for path in paths:
                resolved = {link.target for link in table.outgoing(collection, path, resolver) if link.target}
                targets[f"{collection}:{path}"] = {f"{collection}:{target}" for target in resolved if target != path}
        return targets
