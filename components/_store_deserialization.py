"""Rebuilding a serialised store inside a component's `from_dict` (Haystack 2.x and 3.x alike).

Haystack 2.x offered `deserialize_document_store_in_init_params_inplace`; 3.x removed it. What a component
calls on the store it gets is `haystack_integrations.document_stores.needle.protocol.searchable`'s business.
"""

from typing import Any, cast

from haystack.core.errors import DeserializationError
from haystack.core.serialization import import_class_by_name
from haystack.document_stores.types import DocumentStore

# How a graph names one half of Needle's index (the settings locate it).
NEEDLE_STORE = "haystack_integrations.document_stores.needle.needle_document_store.NeedleDocumentStore"


def with_document_store(data: dict[str, Any], key: str = "document_store", optional: bool = False) -> dict[str, Any]:
    """
    A copy of a component's serialised form whose store under `key` is rebuilt from its `type`.

    :param data: `{"type": ..., "init_parameters": {"document_store": {"type": ..., ...}, ...}}`.
    :param key: The init parameter that holds the store.
    :param optional: Leave a missing or `None` store as it is.
    :returns: The same form with a `DocumentStore` instance in place of its dictionary.
    :raises DeserializationError: When the store has no `type`, or is a role name of an older graph file.
    """
    init_parameters = dict(data.get("init_parameters", {}))
    store = init_parameters.get(key)
    if optional and store is None:
        return {**data, "init_parameters": init_parameters}
    if isinstance(store, str):
        raise DeserializationError(
            f"{key}: {store!r} names a store by role, as older graph files did; write "
            f"{{type: {NEEDLE_STORE}, init_parameters: {{role: {store}}}}} (Needle's own loader still reads the old form)"
        )
    if not isinstance(store, dict) or "type" not in store:
        raise DeserializationError(f"Missing 'type' in the serialised {key}")
    store_class = cast("type[DocumentStore]", import_class_by_name(store["type"]))
    init_parameters[key] = store_class.from_dict(store)
    return {**data, "init_parameters": init_parameters}
