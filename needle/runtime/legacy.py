"""Graph files written for an older Needle, read as today's, with a `DeprecationWarning` naming each change.

Needle's loader (`needle.runtime.loader`) passes every file it reads through `modernise`, so a user's graph or
overlay keeps loading while its author moves it over; plain Haystack (`Pipeline.loads`) takes only today's form,
and refuses an old one naming the new form where it can (`_store_deserialization`). What changed:

- components were a top-level package `components.<module>.<Class>`; they install as
  `haystack_integrations.components.<kind>.needle.<module>.<Class>`;
- the stores were `needle.document_stores...`; they are `haystack_integrations.document_stores.needle...`;
- a store was named by role (`document_store: chunks`); it is a store like any Haystack one,
  `{type: ...NeedleDocumentStore, init_parameters: {role: chunks}}`;
- `CachedReranker` caches only per-document scores and is `CandidateReranker`;
- an `OpenAIChatGenerator` without a server got the `llm:` server from Needle; `LLMServerChatGenerator` reads it;
- the contract was `metadata: {contract: {inputs, outputs: {socket: name}, parameters}}`; it is the top-level
  `inputs`, `outputs: {name: socket}` and `parameters` hayhooks reads, and the result count is `limit`.
"""

from __future__ import annotations

import copy
import importlib.util
import warnings
from collections.abc import Mapping
from functools import cache
from typing import Any

from needle.core.schema import STORE_ROLES

NEEDLE_STORE = "haystack_integrations.document_stores.needle.needle_document_store.NeedleDocumentStore"
LLM_GENERATOR = "haystack_integrations.components.generators.needle.llm_server_chat_generator.LLMServerChatGenerator"
_OPENAI_GENERATOR = "haystack.components.generators.chat.openai.OpenAIChatGenerator"
_KINDS = (
    "caching",
    "classifiers",
    "converters",
    "embedders",
    "extractors",
    "fetchers",
    "generators",
    "joiners",
    "preprocessors",
    "query",
    "rankers",
    "retrievers",
    "routers",
    "samplers",
    "validators",
    "writers",
)
_RENAMED = {
    "cached_reranker.CachedReranker": "haystack_integrations.components.rankers.needle.candidate_reranker.CandidateReranker",
}
# Public input names that changed with the request model (`needle.core.requests`).
_INPUT_NAMES = {"top_k": "limit"}


def modernise(graph: Mapping[str, Any], source: str) -> dict[str, Any]:
    """
    A graph's dictionary in today's form; each older form found is announced once as a `DeprecationWarning`.

    :param graph: The file's mapping (a whole graph or an overlay).
    :param source: The file, for the warning.
    :returns: A new dictionary (the given one is not changed).
    """
    changes: dict[str, str] = {}
    data = copy.deepcopy(dict(graph))
    for name, definition in (data.get("components") or {}).items():
        if isinstance(definition, dict):
            _component(definition, str(name), changes)
    metadata = data.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("contract"), Mapping):
        contract = metadata.pop("contract")
        if not metadata:
            data.pop("metadata")
        _contract(data, contract)
        changes["metadata.contract"] = "top-level inputs: {name: [sockets]} and outputs: {name: socket}"
    for old, new in changes.items():
        warnings.warn(f"{source}: {old} is an older form; write {new}", DeprecationWarning, stacklevel=3)
    return data


def _component(definition: dict[str, Any], where: str, changes: dict[str, str]) -> None:
    """Bring one component (and the components and stores nested in it) up to date, in place."""
    kind = definition.get("type")
    if isinstance(kind, str):
        new = _new_type(kind, definition.get("init_parameters") or {})
        if new != kind:
            definition["type"] = changes[kind] = new
    params = definition.get("init_parameters")
    if not isinstance(params, dict):
        return
    for key, value in params.items():
        if key.endswith("document_store") and isinstance(value, str) and value in STORE_ROLES:
            params[key] = {"type": NEEDLE_STORE, "init_parameters": {"role": value}}
            changes[f"{where}.{key}: {value}"] = f"{{type: {NEEDLE_STORE}, init_parameters: {{role: {value}}}}}"
        elif isinstance(value, dict) and isinstance(value.get("type"), str):
            _component(value, f"{where}.{key}", changes)


def _new_type(kind: str, params: Mapping[str, Any]) -> str:
    """Today's name of a component or store type (the same string when it has not changed)."""
    if kind.startswith("components."):
        rest = kind.removeprefix("components.")
        return _RENAMED.get(rest) or _namespaced(rest) or kind
    if kind.startswith("needle.document_stores."):
        return "haystack_integrations.document_stores.needle." + kind.removeprefix("needle.document_stores.")
    if kind.endswith(".needle.cached_reranker.CachedReranker"):
        return _RENAMED["cached_reranker.CachedReranker"]
    if kind == _OPENAI_GENERATOR and "api_base_url" not in params:
        return LLM_GENERATOR
    return kind


@cache
def _namespaced(module_and_class: str) -> str | None:
    """`module.Class` of the old top-level `components` package as installed today (its kind folder found)."""
    module, _, name = module_and_class.rpartition(".")
    for kind in _KINDS:
        full = f"haystack_integrations.components.{kind}.needle.{module}"
        try:
            found = importlib.util.find_spec(full)
        except ModuleNotFoundError:
            found = None
        if found is not None:
            return f"{full}.{name}"
    return None


def _contract(data: dict[str, Any], contract: Mapping[str, Any]) -> None:
    """Move a `metadata.contract` block to the top-level keys (outputs turned round: name -> socket)."""
    inputs = dict(data.get("inputs") or {})
    for name, paths in (contract.get("inputs") or {}).items():
        inputs.setdefault(_INPUT_NAMES.get(str(name), str(name)), paths)
    outputs = dict(data.get("outputs") or {})
    for socket, name in (contract.get("outputs") or {}).items():
        outputs.setdefault(str(name), socket)
    data["inputs"], data["outputs"] = inputs, outputs
    if contract.get("parameters"):
        data["parameters"] = {**dict(contract["parameters"]), **dict(data.get("parameters") or {})}


__all__ = ["LLM_GENERATOR", "NEEDLE_STORE", "modernise"]
