"""The argument checks (and the query-vector type) that Needle's components, retrievers and stores share."""

import numpy as np

# A dense query vector: Haystack's embedders give `list[float]`; `FastembedDenseQueryEmbedder` gives a
# float32 array, which Haystack copies between stages far faster (see that component).
QueryVector = list[float] | np.ndarray
# A stage input that also takes no vector (`FastembedDenseQueryEmbedder` gives `None` when the model failed).
# Haystack matches a union sender against a union receiver member by member, in order, so the array and
# `None` come first, as the embedder declares them (`np.ndarray | None`), and a list of floats after.
OptionalQueryVector = np.ndarray | None | list[float]


def check_top_k(top_k: int | None, optional: bool = False) -> None:
    """
    Validate a result count.

    :param top_k: The count.
    :param optional: Whether `None` (meaning "the default") is allowed.
    :raises ValueError: When `top_k` is not positive, or is `None` where a count is required.
    """
    if top_k is None:
        if optional:
            return
        raise ValueError("top_k must be > 0, got None")
    if top_k <= 0:
        raise ValueError(f"top_k must be > 0, got {top_k}")


def check_query_embedding(query_embedding: QueryVector, embedding_dim: int) -> list[float]:
    """
    Validate a dense query vector's size against the store's.

    :returns: The vector as a list of Python floats (what the Qdrant clients take).
    :raises ValueError: When the vector is not one-dimensional or the sizes differ.
    """
    values = np.asarray(query_embedding, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"query_embedding must be one vector, got an array of shape {values.shape}")
    if len(values) != embedding_dim:
        raise ValueError(f"query_embedding must have {embedding_dim} values, got {len(values)}")
    return values.tolist()
