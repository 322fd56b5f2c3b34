"""Rebuilding a serialised document store inside a component's `from_dict` (Haystack 2.x and 3.x alike).

Haystack 2.x offered `deserialize_document_store_in_init_params_inplace`; 3.x removed it. Components that
hold a store call this instead.
"""

from typing import Any

from haystack.core.errors import DeserializationError
from haystack.core.serialization import import_class_by_name


def with_document_store(data: dict[str, Any]) -> dict[str, Any]:
    """
    A copy of a component's serialised form whose `document_store` is rebuilt from its `type`.

    :param data: `{"type": ..., "init_parameters": {"document_store": {"type": ..., ...}, ...}}`.
    :returns: The same form with a `DocumentStore` instance in place of its dictionary.
    :raises DeserializationError: When the store has no `type`.
    """
    init_parameters = dict(data.get("init_parameters", {}))
    store = init_parameters.get("document_store")
    if not isinstance(store, dict) or "type" not in store:
        raise DeserializationError("Missing 'type' in the serialised document_store")
    store_class = import_class_by_name(store["type"])
    init_parameters["document_store"] = store_class.from_dict(store)  # type: ignore[attr-defined]
    return {**data, "init_parameters": init_parameters}
