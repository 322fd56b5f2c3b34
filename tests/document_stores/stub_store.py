"""A stand-in store for component tests: every `SearchableStore` method, each failing when called."""

from haystack_integrations.document_stores.needle.protocol import SEARCHABLE_METHODS


class StubStore:
    """Satisfies `SearchableStore`; a test subclasses it and defines the methods it expects to be called."""


def _unexpected(name: str):
    def method(*args, **kwargs):
        raise AssertionError(f"{name}() was not expected to be called")

    return method


for _name in SEARCHABLE_METHODS:
    setattr(StubStore, _name, _unexpected(_name))
