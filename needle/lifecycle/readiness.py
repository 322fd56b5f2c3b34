"""Why a search found nothing when the reason is the index, not the question.

A search of a collection that was never indexed, or whose folder has no file its masks take, answers
`NO_RESULTS` like a question the notes do not answer. These hints say which it is and name the command
that fixes it; `Needle.search` and `Needle.answer` add them to the answer's warnings when nothing was found,
so every surface (CLI, HTTP, MCP) shows them and JSON stays the same schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from needle.core.collections import Collection


def unready_hints(
    collections: Iterable[Collection], chunks: Mapping[str, int], indexed: Callable[[str], bool]
) -> list[str]:
    """
    One line per searched collection that holds no chunk, naming what to run.

    :param collections: The collections the search covered.
    :param chunks: Chunk count per collection name in the index (a collection absent holds none).
    :param indexed: Whether an index run has taken the named collection (`FileRecords.signed`).
    :returns: The hints, in the collections' order; empty when every collection holds chunks.
    """
    never: list[str] = []
    hints: list[str] = []
    for collection in collections:
        if chunks.get(collection.name):
            continue
        if not indexed(collection.name):
            never.append(collection.name)
            continue
        masks = ", ".join(collection.include)
        hints.append(
            f"collection '{collection.name}' has no indexed files: no file under {collection.root} matching {masks} was indexed; "
            f"add notes there (or other masks: `needle collection add {collection.root} --name {collection.name} "
            f"--mask GLOB`), then run `needle index {collection.name}`"
        )
    if never:
        names = ", ".join(f"'{name}'" for name in never)
        noun, verb = ("collection", "is") if len(never) == 1 else ("collections", "are")
        hints.insert(0, f"{noun} {names} {verb} not indexed yet: run `needle index`")
    return hints


__all__ = ["unready_hints"]
