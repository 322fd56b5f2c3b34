"""The arguments of the HTTP routes and MCP tools, declared once: types, limits and one-line descriptions.

Imports pydantic only, so `needle mcp` lists its tools before Haystack or a model has loaded. The types are
lax about numbers and booleans sent as strings (`"3"`, `"true"`: the MCP Inspector sends them so) and strict
about everything else; `strict()` gives the HTTP routes' JSON-strict form of the same type. Each tool's
arguments are one model (`TOOLS`) that refuses a name it does not know, and whose fields the matching
endpoint wrapper's `run_api` takes (a test keeps the two in step).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import GenerateJsonSchema

MAX_QUERY_CHARS = 2000
MAX_LIMIT = 1000
MAX_REF_CHARS = 1024
MAX_LINES = 100_000
MAX_BYTES = 1_000_000
DEFAULT_MAX_BYTES = 20_000


Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, strict=True)]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT)]
MinScore = Annotated[float, Field(ge=0.0)]
Ref = Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS, strict=True)]
LineNumber = Annotated[int, Field(ge=1)]
LineCount = Annotated[int, Field(ge=1, le=MAX_LINES)]
ByteCap = Annotated[int, Field(ge=1, le=MAX_BYTES)]
CollectionNames = list[Annotated[str, Field(min_length=1, max_length=64, strict=True)]] | None
Tags = list[Annotated[str, Field(min_length=1, max_length=100, strict=True)]] | None
PathFilter = Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS, strict=True)] | None
Where = list[Annotated[str, Field(min_length=3, max_length=300, strict=True)]] | None
DateBound = Annotated[str, Field(min_length=1, max_length=100, strict=True)] | None
IndexPaths = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS, strict=True)]] | None,
    Field(min_length=1, max_length=MAX_LIMIT),
]
RunInputs = dict[Annotated[str, Field(max_length=200)], Any] | None


def strict(kind: Any) -> Any:
    """The JSON-strict form of a number type (`Limit`...), as the HTTP routes take it: `"3"` is refused."""
    return Annotated[kind, Field(strict=True)]


class ToolArguments(BaseModel):
    """A tool's arguments: an unknown name is refused, naming the valid ones (`needle.mcp`)."""

    model_config = ConfigDict(extra="forbid")


class GetArguments(ToolArguments):
    model_config = ConfigDict(title="get arguments")

    ref: Ref = Field(description="A result's path (collection/path), #docid or anchor")
    from_line: LineNumber = Field(1, description="First line to return (1-based)")
    max_lines: LineCount | None = Field(None, description="How many lines (default: to the end)")


class MultiGetArguments(ToolArguments):
    model_config = ConfigDict(title="multi_get arguments")

    pattern: Ref | None = Field(None, description="A glob over collection/path, e.g. notes/howto/*.md (or give refs)")
    refs: list[Ref] | None = Field(None, description="Paths or #docids from results (or give pattern)")
    max_bytes: ByteCap = Field(DEFAULT_MAX_BYTES, description="Larger files are listed under skipped, not read")


class StatusArguments(ToolArguments):
    model_config = ConfigDict(title="status arguments")


class IndexArguments(ToolArguments):
    model_config = ConfigDict(title="index arguments")

    collections: CollectionNames = Field(None, description="Collections to index (default all)")
    paths: IndexPaths = Field(None, description="Only these files: absolute or relative to a collection root")


class SearchArguments(ToolArguments):
    model_config = ConfigDict(title="search arguments")

    query: Query = Field(description="Words to find; #tag, in:folder/, field:value, \"phrase\", -word, dates work")
    collections: CollectionNames = Field(None, description="Only these collections (names from status)")
    limit: Limit = Field(10, description="How many results")
    min_score: MinScore = Field(0.0, description="Drop results scoring below this")
    full: bool = Field(False, description="Add each result's whole chunk as text (default: snippet only)")
    chunks: bool = Field(False, description="Every matching chunk, not one result per file")
    explain: bool = Field(False, description="Add each result's rank and score at every stage")
    tags: Tags = Field(None, description="Only notes with all these tags")
    tags_any: Tags = Field(None, description="Only notes with at least one of these tags")
    tags_none: Tags = Field(None, description="Only notes with none of these tags")
    path: PathFilter = Field(None, description="Only notes under this folder (runbooks/) or glob")
    where: Where = Field(None, description="Frontmatter conditions: status=draft, priority>=2, a|b")
    after: DateBound = Field(None, description="Only notes dated on or after: 2024-05-01, last week")
    before: DateBound = Field(None, description="Only notes dated before this")
    recent: bool | None = Field(None, description="Rank newer notes higher (default: if the query asks)")
    self_query: bool | None = Field(None, description="Read filters out of the query text (default on)")
    set: RunInputs = Field(None, description="Graph run inputs, e.g. {\"bm25_retriever.top_k\": 80}")


class VSearchArguments(SearchArguments):
    model_config = ConfigDict(title="vsearch arguments")

    query: Query = Field(description="A question or description; notes may use other words")


class QueryArguments(SearchArguments):
    model_config = ConfigDict(title="query arguments")

    query: Query = Field(description="Words or a question")
    expand: bool | None = Field(None, description="Query expansion on/off (default: configured)")
    rerank: bool | None = Field(None, description="Reranking on/off (default: configured)")
    decompose: bool | None = Field(None, description="Split a multi-part question into parts searched together")


TOOLS: dict[str, type[ToolArguments]] = {
    "search": SearchArguments,
    "vsearch": VSearchArguments,
    "query": QueryArguments,
    "get": GetArguments,
    "multi_get": MultiGetArguments,
    "status": StatusArguments,
    "index": IndexArguments,
}


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
    "ByteCap", "CollectionNames", "CompactSchema", "DateBound", "GetArguments", "IndexArguments", "IndexPaths",
    "LineCount", "LineNumber", "Limit", "MinScore", "MultiGetArguments", "PathFilter", "Query", "QueryArguments",
    "Ref", "RunInputs", "SearchArguments", "StatusArguments", "TOOLS", "Tags", "ToolArguments", "VSearchArguments",
    "Where", "input_schema", "strict",
]
