"""How a component reaches the store a graph handed it: the object to call, whatever kind of store it is."""

from typing import Any

from haystack_integrations.document_stores.needle.needle_document_store import NeedleDocumentStore
from haystack_integrations.document_stores.needle.protocol import SEARCHABLE_METHODS, SearchableStore


def searchable(store: Any) -> SearchableStore:
    """
    The object a component calls for the store it was given: the engine behind a `NeedleDocumentStore`,
    qdrant-haystack's `QdrantDocumentStore` through `QdrantSearch`, or the store itself.

    :param store: What a graph handed the component as `document_store`.
    :returns: An object implementing `SearchableStore` (the same one for the same store: components that share
        a store share it).
    :raises ValueError: Naming the class and the missing methods, when the store offers too little.
    """
    if isinstance(store, NeedleDocumentStore):
        return store.engine
    if _is_qdrant_haystack(store):
        from haystack_integrations.document_stores.needle.qdrant_search import QdrantSearch

        return QdrantSearch.of(store)
    missing = [name for name in SEARCHABLE_METHODS if not callable(getattr(store, name, None))]
    if missing:
        raise ValueError(
            f"{type(store).__name__} does not provide {', '.join(f'{name}()' for name in missing)}: Needle's "
            "components take a NeedleDocumentStore, qdrant-haystack's QdrantDocumentStore, or a store "
            "implementing SearchableStore"
        )
    return store


def _is_qdrant_haystack(store: Any) -> bool:
    """Whether a store is qdrant-haystack's (or a subclass that is not already one of Needle's)."""
    return any(
        f"{base.__module__}.{base.__qualname__}"
        == "haystack_integrations.document_stores.qdrant.document_store.QdrantDocumentStore"
        for base in type(store).__mro__
    ) and not isinstance(store, SearchableStore)


__all__ = ["searchable"]
