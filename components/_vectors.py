"""Vectors that a graph hands from stage to stage without copying them.

A Haystack pipeline deep-copies every component's inputs before it runs, so that no stage changes what
another sees. A document's vector is a list of 384 floats (and a sparse vector two lists), and `copy`
walks a list value by value: an index run's thousand new chunks cost seconds of copying across the ingest
graph's stages. No Needle component changes a vector in place (a component returns new documents with
`dataclasses.replace`), so a vector made by the index's embedders is a `SharedVector`, a list that a deep
copy returns as it is. It is a list in every other respect: the stores, JSON and pydantic read it as one.
"""

from typing import Any

from haystack.dataclasses import SparseEmbedding


class SharedVector(list):
    """A list of numbers that `copy.deepcopy` does not copy (see the module's docstring)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> "SharedVector":
        """Return the vector itself: nobody changes it in place."""
        return self


def shared_sparse(embedding: SparseEmbedding) -> SparseEmbedding:
    """A sparse vector whose indices and values are `SharedVector`s."""
    return SparseEmbedding(indices=SharedVector(embedding.indices), values=SharedVector(embedding.values))
