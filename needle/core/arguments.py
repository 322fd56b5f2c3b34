"""The arguments of the HTTP routes and MCP tools as pydantic models, built from `needle.core.requests`.

Imports pydantic only, so `needle mcp` lists its tools before Haystack or a model has loaded. Each field's
name, default, limits and description come from the request's declaration in `needle.core.requests`; this module
only turns them into types. The types are lax about numbers and booleans sent as strings (`"3"`, `"true"`:
the MCP Inspector sends them so) and strict about everything else; `annotation(param, strict_numbers=True)`
gives the HTTP routes' JSON-strict form of the same type. Each tool's arguments are one model (`TOOLS`) that
refuses a name it does not know; the endpoint wrapper of the same name takes the same fields
(`needle.shells.http.endpoints.takes`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import GenerateJsonSchema

from needle.core import requests
from needle.core.requests import (
    DEFAULT_MAX_BYTES,
    MAX_BYTES,
    MAX_LIMIT,
    MAX_LINES,
    MAX_QUERY_CHARS,
    MAX_REF_CHARS,
    Param,
)


def annotation(param: Param, strict_numbers: bool = False) -> Any:
    """
    The type of a request field, its limits attached: text strict, numbers lax unless `strict_numbers`.

    :param param: The field, as `needle.core.requests` declares it.
    :param strict_numbers: Refuse a number sent as text (`"3"`), as the HTTP routes do.
    """
    text = {"min_length": param.min_chars, "max_length": param.max_chars}
    text_kwargs: dict[str, Any] = {key: value for key, value in text.items() if value is not None}
    kind: Any
    if param.kind is str:
        kind = Annotated[str, Field(strict=True, **text_kwargs)]
    elif param.kind is list:
        kind = list[Annotated[str, Field(strict=True, **text_kwargs)]]
        if param.max_items is not None:
            kind = Annotated[kind, Field(min_length=1, max_length=param.max_items)]
    elif param.kind is dict:
        kind = dict[Annotated[str, Field(**text_kwargs)], Any]
    elif param.kind is bool:
        kind = bool
    else:
        bounds: dict[str, Any] = {"ge": param.low, "le": param.high, "strict": True if strict_numbers else None}
        kind = Annotated[param.kind, Field(**{key: value for key, value in bounds.items() if value is not None})]
    return kind if param.required or param.default is not None else kind | None


def field(param: Param) -> Any:
    """The pydantic field of a request field: its default (none when required) and its description."""
    if param.required:
        return Field(description=param.help)
    return Field(param.default, description=param.help)


class ToolArguments(BaseModel):
    """A tool's arguments: an unknown name is refused, naming the valid ones (`needle.shells.mcp`)."""

    model_config = ConfigDict(extra="forbid")


def arguments_model(tool: str, params: Iterable[Param]) -> type[ToolArguments]:
    """The MCP tool `tool`'s arguments model, titled `<tool> arguments`, from the fields the tool takes."""
    fields: dict[str, Any] = {p.name: (annotation(p), field(p)) for p in params if p.mcp}
    name = "".join(part.title() for part in tool.split("_")) + "Arguments"
    return create_model(name, __base__=ToolArguments, __cls_kwargs__={"title": f"{tool} arguments"}, **fields)


SearchArguments = arguments_model("search", requests.SEARCH)
VSearchArguments = arguments_model("vsearch", requests.VSEARCH)
QueryArguments = arguments_model("query", requests.QUERY)
GetArguments = arguments_model("get", requests.GET)
MultiGetArguments = arguments_model("multi_get", requests.MULTI_GET)
StatusArguments = arguments_model("status", ())
IndexArguments = arguments_model("index", requests.INDEX)

TOOLS: dict[str, type[ToolArguments]] = {
    "search": SearchArguments,
    "vsearch": VSearchArguments,
    "query": QueryArguments,
    "get": GetArguments,
    "multi_get": MultiGetArguments,
    "status": StatusArguments,
    "index": IndexArguments,
}


class FilterValues(BaseModel):
    """Filters and switches of a search, the same on every surface (CLI flags, HTTP fields, MCP arguments)."""

    def request_inputs(self) -> dict[str, Any]:
        """The set values, as a query graph's `request` takes them."""
        return {key: value for key, value in self.model_dump().items() if value is not None}


_NOW = Param(
    "now", str, "Reference time of relative dates and recency (ISO; default now)", max_chars=requests.MAX_DATE_CHARS
)
if TYPE_CHECKING:
    SearchFilters = FilterValues
else:
    # The facade's filters (`needle.core.results.SearchFilters`): the declared filters and the reference time, typed
    # but not limited (the query graph's `SearchRequest` checks the limits, with the facade's error messages).
    SearchFilters = create_model(
        "SearchFilters",
        __base__=FilterValues,
        **{p.name: ({list: list[str]}.get(p.kind, p.kind) | None, field(p)) for p in (*requests.FILTERS, _NOW)},
    )


class CompactSchema(GenerateJsonSchema):
    """
    JSON schema without what an agent does not need to write a call: `null` alternatives, `default: null`,
    field titles and text length limits (a text over its limit is still refused, naming the limit).
    """

    def str_schema(self, schema: Any) -> Any:
        """Text is text: its length limits stay in the model."""
        return {"type": "string"}

    def nullable_schema(self, schema: Any) -> Any:
        """An optional value is described by its type alone (leaving it out is how to send nothing)."""
        return self.generate_inner(schema["schema"])

    def field_title_should_be_set(self, schema: Any) -> bool:
        """Field names are their titles; the description says the rest."""
        return False

    def default_schema(self, schema: Any) -> Any:
        """Defaults other than `null` stay."""
        result = super().default_schema(schema)
        if result.get("default", ...) is None:
            result.pop("default")
        return result


def input_schema(model: type[ToolArguments]) -> dict[str, Any]:
    """The model's compact JSON schema, as `tools/list` offers it."""
    return model.model_json_schema(schema_generator=CompactSchema)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_BYTES",
    "MAX_LIMIT",
    "MAX_LINES",
    "MAX_QUERY_CHARS",
    "MAX_REF_CHARS",
    "TOOLS",
    "CompactSchema",
    "FilterValues",
    "GetArguments",
    "IndexArguments",
    "MultiGetArguments",
    "QueryArguments",
    "SearchArguments",
    "SearchFilters",
    "StatusArguments",
    "ToolArguments",
    "VSearchArguments",
    "annotation",
    "arguments_model",
    "field",
    "input_schema",
]
