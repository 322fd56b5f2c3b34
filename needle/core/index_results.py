"""What the index's own commands return: an index run's report, the index's status, a check, an optimise, a
backup or restore, the list of indexed files.

pydantic models, so that every surface returns the same fields: `needle.facade.api.Needle` builds them, the
owner's HTTP routes send them (`{"result": ...}`), `needle.owner.remote.RemoteNeedle` validates the owner's JSON
back into them, and the CLI prints them (`needle.commands.render` reads their attributes; `--json` prints
`model_dump`). A field that a command leaves out when it has nothing to say (an index run's `set_aside`, a
status's `watcher`) is left out of the JSON too, as it always was.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def _absent(value: Any) -> bool:
    """Left out of the JSON: a value a command did not set."""
    return value is None


class FileNote(BaseModel):
    """A file an index run skipped, or read with a problem, and why."""

    model_config = ConfigDict(extra="allow")

    collection: str = ""
    path: str = ""
    reason: str = ""


class IndexReport(BaseModel):
    """An index run's report: the files it saw and read, what changed, the chunks it embedded, kept and deleted."""

    collections: list[str] = Field(description="The collections indexed")
    # files_seen = files_read + files_skipped_by_stat + files_not_read + files_vanished
    files_seen: int = 0
    files_read: int = 0
    files_skipped_by_stat: int = Field(0, description="Files not read: their size and times match the last run's")
    files_not_read: int = Field(0, description="Files skipped for a reason (`skipped` says which)")
    files_vanished: int = Field(0, description="Files found at the start that were gone before they were read")
    files_pending: int = Field(0, description="Files the run found to read")
    files_new: int = 0
    files_changed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    skipped: list[FileNote] = Field(default_factory=list, description="Files left out, with the reason")
    warnings: list[FileNote] = Field(default_factory=list, description="Files read with a problem, and which")
    documents: dict[str, Any] = Field(default_factory=dict, description="PDF, DOCX and HTML conversion counts")
    chunks: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = Field(0, description="Chunks whose text the index held: their vectors were reused")
    chunks_deleted: int = 0
    files_embedded: int = Field(0, description="Whole-file documents embedded")
    files_pooled: int = Field(0, description="Whole-file vectors pooled from their chunks' (no model run)")
    files_reused: int = 0
    file_points_deleted: int = 0
    deleted: int = Field(0, description="Chunks and whole-file documents deleted")
    texts_embedded: int = Field(0, description="Texts the embedding model ran over")
    batches: int = 0
    seconds: float = 0.0
    set_aside: list[str] | None = Field(
        None, exclude_if=_absent, description="Where damaged stores were moved before a rebuild"
    )


class CollectionStatus(BaseModel):
    """One collection in `status`: where it is, what it holds and what its notes can be filtered by."""

    name: str
    root: str
    files: int
    chunks: int
    languages: list[str] = Field(default_factory=list)
    fields: dict[str, Any] = Field(
        default_factory=dict, description="Frontmatter field → type, number of distinct values, the most frequent"
    )
    tags: list[tuple[str, int]] = Field(default_factory=list, description="The most frequent tags, with their files")


class FileProblem(BaseModel):
    """A file the index runs skipped, or indexed with a problem, until a run reads it without one."""

    collection: str
    path: str
    kind: str
    reason: str


class Status(BaseModel):
    """The index's state: its collections, models and place, and what needs doing."""

    collections: list[CollectionStatus]
    orphaned: dict[str, int] = Field(
        default_factory=dict,
        description="Chunks of collections no longer listed: the next `needle index` (or `collection remove`) drops them",
    )
    embedding_model: str
    embedding_provider: str = "fastembed"
    sparse_model: str
    store: str = Field(description="The index's folder, or its Qdrant server")
    index_built_with: dict[str, Any] | None = None
    index_layout: dict[str, Any] | None = None
    layout_pending: dict[str, Any] | None = None
    last_backup: dict[str, Any] | None = None
    contexts: dict[str, str] = Field(default_factory=dict)
    data_dir: str
    problems: list[FileProblem] = Field(default_factory=list)
    problems_total: int = 0
    watcher: dict[str, Any] | None = Field(None, exclude_if=_absent, description="The watcher keeping the index live")
    index_run: dict[str, Any] | None = Field(None, exclude_if=_absent, description="The index run under way")
    ab: dict[str, Any] | None = Field(
        None,
        exclude_if=_absent,
        description="On a server with graph variants: the variants its split route assigns callers to, the "
        "interaction log, and each variant's requests, errors and latency (ms) since it started",
    )


class Repaired(BaseModel):
    """What `check --repair` did."""

    reindexed: int
    chunks_embedded: int
    orphans_deleted: int


class CheckReport(BaseModel):
    """A read of the whole index: the damage a query would trip on, files lost or orphaned, what each store held."""

    problems: list[str] = Field(description="Empty for a sound index")
    damaged: bool
    lost: list[str] = Field(default_factory=list)
    orphaned: list[str] = Field(default_factory=list)
    stores: dict[str, dict[str, int]] = Field(default_factory=dict)
    seconds: float = 0.0
    repaired: Repaired | None = Field(None, exclude_if=_absent)


class OptimizeReport(BaseModel):
    """The index laid out as the `index:` settings say."""

    changed: bool
    applied: dict[str, Any] = Field(default_factory=dict)
    layout: dict[str, Any] | None = None
    seconds: float = 0.0


class BackupReport(BaseModel):
    """A backup's manifest and folder (`backup`), or the backup put in place and the counts found (`restore`)."""

    model_config = ConfigDict(extra="allow")

    kind: str = Field(description="`embedded` (a copy of the index's files) or `server` (Qdrant snapshots)")
    url: str | None = Field(None, exclude_if=_absent)
    snapshots: dict[str, Any] | None = Field(None, exclude_if=_absent)
    chunks: int
    files: int
    time: float | None = None
    seconds: float | None = None
    fingerprint: dict[str, Any] | None = None
    layout: dict[str, Any] | None = None
    collections: list[str] = Field(default_factory=list)
    path: str
    restored: dict[str, int] | None = Field(None, exclude_if=_absent)


class IndexedFile(BaseModel):
    """A file in the index (`ls`)."""

    collection: str
    path: str
    title: str
    chunks: int


__all__ = [
    "BackupReport",
    "CheckReport",
    "CollectionStatus",
    "FileNote",
    "FileProblem",
    "IndexReport",
    "IndexedFile",
    "OptimizeReport",
    "Repaired",
    "Status",
]
