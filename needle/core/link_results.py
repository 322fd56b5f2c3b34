"""What `needle links` returns: a note's outgoing links and its backlinks, each with its line.

pydantic models like every result (`needle.core.results`): the facade builds them from the link table
(`needle.core.link_table`), the owner's route and the MCP tool send them, the CLI prints them.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class LinkEntry(BaseModel):
    """One link: the note that holds it and its line, the note it resolves to, and how it is written."""

    collection: str
    source: str = Field(description="The linking note's path in its collection")
    line: int = Field(description="The line of the linking note that holds the link (1-based)")
    target: str | None = Field(description="The note it resolves to; null when none does (unresolved)")
    written: str = Field(description="The target as written (a name, a path or a relative markdown path)")
    heading: str | None = None
    block: str | None = None
    embed: bool = False
    display: str | None = Field(None, description="The text a reader sees; null for an embed")
    kind: str = Field("wiki", description="wiki or markdown")
    raw: str = Field(description="The link exactly as written")

    @property
    def anchor(self) -> str:
        """`collection/path:LINE`, what `needle get` reads the link's line with."""
        return f"{self.collection}/{self.source}:{self.line}"


class LinkReport(BaseModel):
    """A note's links both ways."""

    collection: str
    path: str
    outgoing: list[LinkEntry] = Field(default_factory=list, description="The links the note holds, in order")
    backlinks: list[LinkEntry] = Field(default_factory=list, description="The links of notes that point here")


__all__ = ["LinkEntry", "LinkReport"]
