"""Reading notes by reference, for `get` and multi-get over the CLI, HTTP and MCP alike, one job per module.

- `needle.core.files.references`: what a user's reference is (`#docid`, `collection/path`, `collection:path`, a
  path inside some collection, `PATH:LINE:COUNT`), and the references refused before any lookup.
- `needle.core.files.walking`: listing a collection's files by its rules (`walk_collection`), which the
  ingestion scanner (`haystack_integrations.components.fetchers.needle.collection_scanner`) and multi-get share.
- `needle.core.files.reading`: finding the file a reference names and reading it, whole or a range of lines
  (`FileReader`), within the collection's rules and never outside its root.
- `needle.core.files.batches`: reading the files a glob or a list of references names within byte, file-count
  and time budgets (`FileAccess`, the `FileReader` that the facade hands to every shell).

A file is served exactly when the ingestion scanner would index it: both ask the same `CollectionRules`
(include globs, excludes, hidden parts, names that are not UTF-8) and list folders with the same
`walk_collection` (links leading out refused, loops cut). Everything a caller can get wrong ends as a
`CollectionError` with a message a person can act on, never as an `OSError`:

- `FileNotServed` (a `CollectionError`; HTTP 404): no such file, or not one the collection serves (a hidden
  file, an excluded folder, a file its include globs leave out, a broken link). Messages start with
  `no file` or `no indexed file`.
- `CollectionError` otherwise (HTTP 400): a reference that could only be meant to leave a collection (`..`,
  absolute, `~`, URL-encoded, NUL or control characters, a link leading outside the root), a name too long
  for the file system, a line past the end, an ambiguous docid, a file too large, bad arguments.

PDF, DOCX and HTML files are served as the text the index holds (`needle.core.file_formats.Extractor`, the extraction
ingestion runs), and a reference can name a part of one: `papers/raft.pdf#page=3` or `#page=3-5` (pages of
a PDF), `specs/deploy.docx#section=Rollout › Canary` (a section of a DOCX or HTML file: its heading path, or
its last heading alone). Line numbers then count within that part, as a search result's anchor counts them.

The package imports nothing itself: the ingestion scanner's walk loads neither pydantic nor the document converters.
"""
