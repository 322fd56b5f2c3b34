"""The notes one note is related to by its links: backlinks, outgoing links and shared neighbours."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._index_models import FROM_SETTINGS, records_file, without
from needle.core.file_records import split_key
from needle.core.schema import FILE_ID

# How much each relation adds to a note's link score: a direct link either way counts fully, each link
# target the two notes share a quarter.
_DIRECT = 1.0
_SHARED = 0.25


@component
class LinkNeighbourRetriever:
    """
    Finds the notes linked to one note, each with the reasons: "links here", "linked from here", "shares N links".

    Reads the link table (`needle.core.link_table`, beside the stat record): the notes whose links resolve to
    the note (backlinks), the notes its own links resolve to, and the notes that link to the same notes it
    links to (shared neighbours). Each note found is a Document with `meta.collection`, `meta.path`,
    its file id (`meta[FILE_ID]`), `meta.reasons` and a `score`: 1 for each direct link either way, 0.25 for each
    link target the two notes share. Haystack has no component for a note graph.

    Usage example:
    ```python
    retriever = LinkNeighbourRetriever(records_path="~/.needle/index/files.sqlite")
    retriever.run(file_id="notes:Recipes/Snert.md")["documents"][0].meta["reasons"]  # ["links here"]
    ```
    """

    def __init__(self, records_path: str | None = FROM_SETTINGS, top_k: int = 20) -> None:
        """
        Create the retriever.

        :param records_path: The stat record's SQLite file the link table lives in; default: the index's, from
            Needle's settings. `None` finds nothing.
        :param top_k: How many related notes to return at most.
        :raises ValueError: When `top_k` is not a positive integer.
        """
        self._from_settings = {"records_path"} if records_path is FROM_SETTINGS else set()
        if records_path is FROM_SETTINGS:
            records_path = records_file()
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        self.records_path = records_path
        self.top_k = top_k

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return without(default_to_dict(self, records_path=self.records_path, top_k=self.top_k), self._from_settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LinkNeighbourRetriever":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, file_id: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """
        The notes related to one note by links.

        :param file_id: The note, `collection:path`.
        :param top_k: How many at most; the init value when `None`.
        :returns: A dictionary with `documents`, best linked first.
        """
        if not self.records_path:
            return {"documents": []}
        collection, path = split_key(file_id)
        from needle.core.link_table import LinkTable  # read when run: importing the component stays light

        table = LinkTable(self.records_path)
        resolver = table.resolver(collection)
        scores: dict[str, float] = {}
        reasons: dict[str, list[str]] = {}

        def add(other: str, score: float, reason: str) -> None:
            if other == path:
                return
            scores[other] = scores.get(other, 0.0) + score
            if reason not in reasons.setdefault(other, []):
                reasons[other].append(reason)

        for link in table.backlinks(collection, path, resolver):
            add(link.source, _DIRECT, "links here")
        targets = {link.target for link in table.outgoing(collection, path, resolver) if link.target}
        for target in sorted(targets):
            add(target, _DIRECT, "linked from here")
        shared: dict[str, int] = {}
        for target in sorted(targets):
            for other in {link.source for link in table.backlinks(collection, target, resolver)}:
                if other != path:
                    shared[other] = shared.get(other, 0) + 1
        for other, count in shared.items():
            add(other, _SHARED * count, f"shares {count} link{'s' if count > 1 else ''}")
        ranked = sorted(scores, key=lambda other: (-scores[other], other))[: top_k or self.top_k]
        documents = [
            Document(
                id=f"{collection}:{other}",
                content="",
                score=scores[other],
                meta={
                    "collection": collection,
                    "path": other,
                    FILE_ID: f"{collection}:{other}",
                    "reasons": reasons[other],
                },
            )
            for other in ranked
        ]
        return {"documents": documents}
