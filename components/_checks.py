"""The argument checks that Needle's components, retrievers and stores share."""


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


def check_query_embedding(query_embedding: list[float], embedding_dim: int) -> None:
    """
    Validate a dense query vector's size against the store's.

    :raises ValueError: When the sizes differ.
    """
    if len(query_embedding) != embedding_dim:
        raise ValueError(f"query_embedding must have {embedding_dim} values, got {len(query_embedding)}")
