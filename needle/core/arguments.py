"""The HTTP bodies and MCP tool arguments as pydantic models, generated from the requests of `needle.core.requests`.

Imports pydantic only, so `needle mcp` lists its tools before Haystack or a model has loaded. Each field's
name, default, limits and description come from the request's dataclass; this module only turns them into
types. An unknown name is refused (`extra="forbid"`). The MCP form is lax about numbers and booleans sent as
strings (`"3"`, `"true"`: the MCP Inspector sends them so) and strict about everything else; the HTTP form
refuses a number sent as text, as JSON clients are expected to send numbers. `build(request, values)` turns a
validated model back into the request it describes.

Usage example:
```python
Arguments = arguments_model("search", SearchRequest, "mcp")
request = build(SearchRequest, Arguments.model_validate({"query": "certbot", "limit": "3"}))
```
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import GenerateJsonSchema

from needle.core.requests import Param, params

R = TypeVar("R")


def annotation(param: Param, strict_numbers: bool = False) -> Any:
    """
    The type of a request field, its limits attached: text strict, numbers lax unless `strict_numbers`.

    :param param: The field, as `needle.core.requests.params` reads it.
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


class Arguments(BaseModel):
    """A request's arguments over HTTP or MCP: an unknown name is refused, naming the valid ones."""

    model_config = ConfigDict(extra="forbid")


@cache
def arguments_model(name: str, request: type | None, surface: str = "mcp") -> type[Arguments]:
    """
    The arguments model of a request on one surface (`mcp` or `http`): the fields that surface takes.

    :param name: The tool or route, e.g. `get`: an MCP model is titled `<name> arguments`, an HTTP one is named
        `<name>RunRequest`, as hayhooks names a route's request model.
    :param request: The request's dataclass; `None` for a command that takes none (a model without fields).
    :param surface: `mcp` (numbers lax) or `http` (numbers strict).
    """
    fields: dict[str, Any] = {
        p.name: (annotation(p, strict_numbers=surface == "http"), field(p))
        for p in (params(request) if request is not None else ())
        if getattr(p, surface)
    }
    if surface == "http":
        return create_model(f"{name}RunRequest", __base__=Arguments, **fields)
    model = "".join(part.title() for part in name.split("_")) + "Arguments"
    return create_model(model, __base__=Arguments, __cls_kwargs__={"title": f"{name} arguments"}, **fields)


def build(request: type[R], values: BaseModel | dict[str, Any]) -> R:
    """The request a validated model (or its fields' values) describes; the fields it does not take keep their defaults."""
    given = values.model_dump() if isinstance(values, BaseModel) else values
    return request(**given)


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


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's compact JSON schema, as `tools/list` offers it."""
    return model.model_json_schema(schema_generator=CompactSchema)


__all__ = ["Arguments", "CompactSchema", "annotation", "arguments_model", "build", "field", "input_schema"]
