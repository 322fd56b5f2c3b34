"""What Needle's document stores and the components that hold one share.

Rebuilding a serialised store inside a component's `from_dict` (Haystack 2.x and 3.x alike): Haystack 2.x
offered `deserialize_document_store_in_init_params_inplace`; 3.x removed it. The check that a store offers
the methods a component calls.
"""

from typing import Any

from haystack.core.errors import DeserializationError
from haystack.core.serialization import import_class_by_name


def with_document_store(data: dict[str, Any], key: str = "document_store", optional: bool = False) -> dict[str, Any]:
    """
    A copy of a component's serialised form whose store under `key` is rebuilt from its `type`.

    :param data: `{"type": ..., "init_parameters": {"document_store": {"type": ..., ...}, ...}}`.
    :param key: The init parameter that holds the store.
    :param optional: Leave a missing or `None` store as it is.
    :returns: The same form with a `DocumentStore` instance in place of its dictionary.
    :raises DeserializationError: When the store has no `type`.
    """
    init_parameters = dict(data.get("init_parameters", {}))
    store = init_parameters.get(key)
    if (optional and store is None) or isinstance(store, str):  # a store named by role: the environment injects it
        return {**data, "init_parameters": init_parameters}
    if not isinstance(store, dict) or "type" not in store:
        raise DeserializationError(f"Missing 'type' in the serialised {key}")
    store_class = import_class_by_name(store["type"])
    init_parameters[key] = store_class.from_dict(store)  # type: ignore[attr-defined]
    return {**data, "init_parameters": init_parameters}


def require_store_methods(document_store: Any, *methods: str) -> None:
    """
    Check that a store offers the query methods a component calls (Needle's stores go beyond Haystack's protocol).

    :raises ValueError: Naming the store's class and the first missing method, or, for a store named by role
        (`chunks`), saying how to inject it.
    """
    if isinstance(document_store, str):
        raise ValueError(
            f"document store {document_store!r} is named by role: build the graph with Needle's environment "
            "(needle.loader.load_pipeline, or Pipeline.from_dict(..., callbacks=Environment(settings).callbacks()))"
        )
    for method in methods:
        if not callable(getattr(document_store, method, None)):
            raise ValueError(f"{type(document_store).__name__} does not provide {method}()")
