"""What Needle's index holds, declared once: the stores' roles and the metadata of every chunk.

A graph names the store a component reads or writes by its role; each role is one store (an embedded engine
folder, or a Qdrant server collection) whose folder or collection name takes the role's suffix.

A chunk is a Haystack `Document` whose `meta` is a `ChunkMeta`: what `MarkdownChunker` writes (the file's
metadata, the chunk's place in it), what `FileDocumentBuilder` writes on a whole-file document (the same keys,
`kind: "file"`), and the traces the query stages add on their way (`fusion`, `bonus`, `rerank`, ...). Code
reads a key through its constant here (`meta[FILE_ID]`), so a key is spelled once; docs/architecture.md
describes the schema for the reader.
"""

from __future__ import annotations

from typing import Any, TypedDict

# Store roles a graph may name, and the suffix of each one's folder / server collection: `chunks` holds the
# chunks of every file, `files` one document per whole file (kept apart so each level has its own BM25 statistics).
STORE_ROLES = {"chunks": "", "files": "_files"}

# The file a chunk belongs to, `<collection>:<path>`: chunks are grouped, fused, rescored and listed by it.
FILE_ID = "source_doc_id"
# Metadata that describes the whole file (the same on each of its chunks and on its whole-file document). A change
# there alone (a tag edited in the frontmatter, a file touched) keeps every chunk id: `meta_checksum` tells the
# differ to refresh the stored metadata without embedding anything again. The title is the exception: it is
# embedded with each chunk (`context`), so a new title gives new chunk ids and new vectors.
FILE_META_KEYS = (
    "title",
    "aliases",
    "tags",
    "frontmatter",
    "fields",
    "folder",
    "folders",
    "date",
    "date_source",
    "identifiers",
)
# The headings above a chunk, outermost first (`["Runbook", "1. Confirm it"]`).
HEADING_PATH = "heading_path"
# What a retriever's score means (`bm25` or `cosine`) and the store's score before it was put on 0..1.
SCORE_KIND = "score_kind"
RAW_SCORE = "raw_score"
# A whole-file document says `kind: "file"`; a chunk has no `kind`.
KIND = "kind"
FILE_KIND = "file"
# The checksum of the text a chunk's vectors were embedded from (context included): reused vectors are found by it.
CONTENT_CHECKSUM = "content_checksum"

# Traces the query stages leave on a result, each read by the stages after it and by `--explain`.
FUSION = "fusion"  # WeightedRRFJoiner: list name -> {"rank": 0-based, "score", "kind"}
BONUS = "bonus"  # TopRankBonus: what it added
RERANK = "rerank"  # CandidateReranker: {"score", "raw", "input_rank"}
HYBRID = "hybrid"  # HybridScoreRanker: the exact scores it read per signal and level
BLEND = "blend"  # PositionAwareBlender: the weights it mixed with
RECENCY = "recency"  # RecencyRanker: the decay it mixed in
TERM_HITS = "term_hits"  # BestChunkSelector: query terms found in the chunk
LINK_SUPPORT = "link_support"  # LinkSupportRanker: {"in", "out", "boost"}: top hits linking here, linked from here


class ChunkMeta(TypedDict, total=False):
    """
    The metadata of a chunk (and, with `kind: "file"`, of a whole-file document) as the stores keep it.

    Keys of the file (the same on each of its chunks): `collection`, `path`, `title`, `aliases` (the
    frontmatter's other names of the note, embedded with its title in `context`), `tags`, `frontmatter`,
    `fields`, `folder`, `folders`, `date`, `date_source`, `identifiers`, `language`, `format`, `meta_checksum`
    (of the file's metadata alone: a change there refreshes the stored metadata without embedding again),
    `content_hash` (of the file's text) and `source_doc_id` (`FILE_ID`). Keys of the chunk: its place
    (`heading_path`, `chunk_index`, `start_line`, `end_line`, `char_start`, `char_end`, and for paged documents
    `page`, `page_end`, `page_line`), `checksum` of its normalised text, `context` (title and headings, embedded
    with the text) and `content_checksum` of what was embedded. Retrieved documents add `score_kind` and
    `raw_score`; the query stages add their traces (`fusion`, `bonus`, `rerank`, `hybrid`, `blend`, `recency`,
    `term_hits`, `snippet`, `snippet_line`, `snippet_lines`).
    """

    collection: str
    path: str
    title: str
    aliases: list[str]
    tags: list[str]
    frontmatter: dict[str, Any]
    fields: list[str]
    folder: str
    folders: list[str]
    date: str | None
    date_source: str | None
    identifiers: list[str]
    language: str
    format: str
    meta_checksum: str
    content_hash: str
    source_doc_id: str
    kind: str
    heading_path: list[str]
    chunk_index: int
    start_line: int
    end_line: int
    char_start: int
    char_end: int
    page: int
    page_end: int
    page_line: int
    checksum: str
    context: str
    content_checksum: str
    score_kind: str
    raw_score: float
    fusion: dict[str, dict[str, Any]]
    bonus: float
    rerank: dict[str, Any]
    hybrid: dict[str, Any]
    blend: dict[str, Any]
    recency: dict[str, Any]
    term_hits: int
    snippet: str
    snippet_line: int
    snippet_lines: list[int]


__all__ = [
    "BLEND",
    "BONUS",
    "CONTENT_CHECKSUM",
    "FILE_ID",
    "FILE_KIND",
    "FILE_META_KEYS",
    "FUSION",
    "HEADING_PATH",
    "HYBRID",
    "KIND",
    "LINK_SUPPORT",
    "RAW_SCORE",
    "RECENCY",
    "RERANK",
    "SCORE_KIND",
    "STORE_ROLES",
    "TERM_HITS",
    "ChunkMeta",
]
