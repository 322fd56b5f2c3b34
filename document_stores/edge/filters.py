"""Haystack filters → Qdrant Edge filters.

The same semantics as qdrant-haystack's `convert_filters_to_qdrant` for a server, in the engine's own types.
"""

from datetime import datetime
from typing import Any

import numpy as np
import qdrant_edge as qe
from haystack.errors import FilterError

from haystack_integrations.document_stores.needle._shared import plain_filters
from haystack_integrations.document_stores.needle.edge.converters import point_id

_RANGE_OPERATORS = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}


def edge_filter(filters: dict[str, Any] | None) -> Any:
    """
    Translate Haystack filters into an Edge `Filter`.

    Comparisons follow Haystack's semantics: `==`/`!=` `None` test for a missing or null field, `!=` and
    `not in` match documents that lack the field, `NOT` negates the conjunction of its conditions, and ranges
    take numbers or ISO 8601 dates. A list field matches when one of its elements does (Qdrant's rule).

    :param filters: Haystack filters over `id`, `content` and `meta.<field>`.
    :returns: The engine's filter; `None` for no filters.
    :raises FilterError: When the filters are malformed or cannot be evaluated by the engine.
    """
    if not filters:
        return None
    if not isinstance(filters, dict):
        raise FilterError(f"filters must be a dictionary, got {type(filters).__name__}")
    return qe.Filter(must=[_condition(plain_filters(filters))])


def _condition(node: Any) -> Any:
    if not isinstance(node, dict):
        raise FilterError(f"a filter condition must be a dictionary, got {node!r}")
    if "field" in node:
        return _comparison(node)
    if "operator" not in node:
        raise FilterError(f"'operator' key missing in {node}")
    if "conditions" not in node:
        raise FilterError(f"'conditions' key missing in {node}")
    operator, conditions = node["operator"], node["conditions"]
    if not isinstance(conditions, list):
        raise FilterError(f"'conditions' must be a list, got {type(conditions).__name__}")
    children = [_condition(child) for child in conditions]
    if operator == "AND":
        return qe.Filter(must=children)
    if operator == "OR":
        return qe.Filter(should=children) if children else _nothing()
    if operator == "NOT":
        return qe.Filter(must_not=[qe.Filter(must=children)])
    raise FilterError(f"unknown logical operator '{operator}'")


def _comparison(node: dict[str, Any]) -> Any:
    for key in ("operator", "value"):
        if key not in node:
            raise FilterError(f"'{key}' key missing in {node}")
    key, operator, value = _payload_key(node["field"]), node["operator"], node["value"]
    if operator == "==":
        return _equal(key, value)
    if operator == "!=":
        return qe.Filter(must_not=[_equal(key, value)])
    if operator in ("in", "not in"):
        if not isinstance(value, list):
            raise FilterError(f"'{operator}' needs a list value, got {type(value).__name__}")
        matches = _any_of(key, value)
        return matches if operator == "in" else qe.Filter(must_not=[matches])
    if operator in _RANGE_OPERATORS:
        return _range(key, _RANGE_OPERATORS[operator], value)
    raise FilterError(f"unknown comparison operator '{operator}'")


def _payload_key(field: Any) -> str:
    if isinstance(field, str) and (field in ("id", "content") or (field.startswith("meta.") and len(field) > 5)):
        return field
    raise FilterError(f"cannot filter on {field!r}: use 'id', 'content' or 'meta.<field>'")


def _nothing() -> Any:
    """A condition no point satisfies."""
    return qe.HasIdCondition(set())


def _equal(key: str, value: Any) -> Any:
    if key == "id":
        if not isinstance(value, str):
            raise FilterError(f"document ids are strings, got {value!r}")
        return qe.HasIdCondition({point_id(value)})
    if value is None:
        return qe.IsEmptyCondition(key)
    if isinstance(value, bool):
        # A Python bool would reach the engine as the integer 1 or 0; numpy's bool converts as a boolean.
        return qe.FieldCondition(key, match=qe.MatchValue(np.bool_(value)))  # type: ignore[arg-type]  # the stub lists bool only
    if isinstance(value, (int, str)):
        return qe.FieldCondition(key, match=qe.MatchValue(value))
    if isinstance(value, float):
        return qe.FieldCondition(key, range=qe.RangeFloat(gte=value, lte=value))
    raise FilterError(f"cannot compare {key} with a {type(value).__name__} value")


def _any_of(key: str, values: list[Any]) -> Any:
    if not values:
        return _nothing()
    if key == "id":
        if not all(isinstance(value, str) for value in values):
            raise FilterError(f"document ids are strings, got {values!r}")
        return qe.HasIdCondition({point_id(value) for value in values})
    if all(isinstance(value, str) for value in values) or all(
        isinstance(value, int) and not isinstance(value, bool) for value in values
    ):
        return qe.FieldCondition(key, match=qe.MatchAny(list(values)))
    return qe.Filter(should=[_equal(key, value) for value in values])


def _range(key: str, bound: str, value: Any) -> Any:
    if value is None:
        return _nothing()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return qe.FieldCondition(key, range=qe.RangeFloat(**{bound: float(value)}))
    if isinstance(value, str) and _is_iso_date(value):
        try:
            return qe.FieldCondition(key, range=qe.RangeDateTime(**{bound: value}))
        except ValueError as error:
            raise FilterError(f"cannot compare {key} with the date {value!r}: {error}") from error
    raise FilterError(f"'{bound}' comparisons need a number or an ISO 8601 date, got {value!r}")


def _is_iso_date(value: str) -> bool:
    if len(value) < 10:
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True
