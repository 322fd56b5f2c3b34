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
    related: list[RelatedNote] = Field(default_factory=list, description="Related notes, when asked (`related`)")


class RelatedNote(BaseModel):
    """A note related to another, and why."""

    collection: str
    path: str
    title: str = ""
    score: float = Field(description="0..1: half the link relations (two direct links make 1), half the similarity")
    reasons: list[str] = Field(description='"links here", "linked from here", "shares N links", "similar"')
    similarity: float = Field(0.0, description="The cosine of the two notes' whole-file vectors (0 when not read)")

    @property
    def anchor(self) -> str:
        """`collection/path`, what `needle get` and `needle links` take."""
        return f"{self.collection}/{self.path}"


class RelatedReport(BaseModel):
    """The notes related to one note, best first."""

    collection: str
    path: str
    related: list[RelatedNote] = Field(default_factory=list)


LinkReport.model_rebuild()

__all__ = ["LinkEntry", "LinkReport", "RelatedNote", "RelatedReport"]
