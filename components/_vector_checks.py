"""Vectors checked at the door: finite, not all zero, of the index's size, before anything is written.

An embedding server (or a model gone wrong) can answer NaN, infinite or all-zero vectors for some texts. Such a
vector cannot be compared with anything: written, its chunk is never found by a dense search again, and the stat
record would call its file unchanged on every later run. The document embedders mark a vector that fails with
where it came from (`checked`: a `SpoiledVector` naming the server or model); the writers check every vector
again (`vector_problem`), whoever made it, and leave out every point of a file that has one, with its reason,
so that the next run reads the file again.

Usage example:
```python
vector = checked(answer, "the embedding server at http://127.0.0.1:8089/v1 (model minilm)")
vector_problem(vector, 384)  # None, or e.g. "a vector with NaN values from the embedding server at …"
```
"""

from collections.abc import Sequence
from typing import Any

from haystack_integrations.components.needle._vectors import SharedVector
from needle.core.vectors import describe


class SpoiledVector(SharedVector):
    """A vector that failed its check, carrying why and where it came from (`problem`)."""

    problem: str = ""

    def __deepcopy__(self, memo: dict[int, Any]) -> "SpoiledVector":
        """Return the vector itself, its problem with it."""
        return self


def checked(vector: Sequence[float], source: str, dim: int | None = None) -> SharedVector:
    """
    The vector as a `SharedVector`, or a `SpoiledVector` saying what is wrong with it and where it came from.

    :param vector: The embedder's answer for one text.
    :param source: Where it came from, e.g. `the embedding server at http://… (model minilm)`.
    :param dim: The index's vector size, when known.
    """
    problem = describe(vector, dim)
    if problem is None:
        return SharedVector(vector)
    spoiled = SpoiledVector(vector)
    spoiled.problem = f"{problem} from {source}"
    return spoiled


def vector_problem(vector: Sequence[float] | None, dim: int | None = None) -> str | None:
    """
    Why a document's dense vector may not be written (`None` when it may, or when it has none): the embedder's
    own account of a `SpoiledVector`, else what the check finds.
    """
    if vector is None:
        return None
    found = describe(vector, dim)
    if found is None:
        return None
    return getattr(vector, "problem", "") or found


__all__ = ["SpoiledVector", "checked", "describe", "vector_problem"]
