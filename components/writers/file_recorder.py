"""Record the stat of the files an index run wrote, once their chunks are in the store."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.component.types import Variadic

from haystack_integrations.components.needle._index_models import FROM_SETTINGS, records_path_or_settings, without
from needle.core.file_records import UNREAD, FileRecords, FileStat, split_key

logger = logging.getLogger(__name__)


@component
class FileRecorder:
    """
    Writes the stat record (`needle.core.file_records`) of the files a batch read, after the writers are done.

    The next full run reads only files whose size, times or inode differ from the record, so a row may be
    written only once the file's chunks are stored: the `done` input takes the writers' counts, which
    Haystack delivers after the writers ran; a run killed before leaves the files unrecorded, to be read
    again. A file that could not be read gets no row (it is tried again next time); a file that left the
    index loses its row. The collections compared in full with the index are marked, so that later runs
    find deleted files by the record instead of listing the index. The row keeps the checksum of the text read, which tells a touched file from an
    edited one. Haystack's `CacheChecker` keys documents by one field and has no notion of a file's stat.

    Usage example:
    ```python
    recorder = FileRecorder(records_path="~/.needle/index/files.sqlite")
    recorder.run(file_stats=scanner["file_stats"], files=read_files, gone=["notes:old.md"], done=[3, 1])
    # {"recorded": 12, "forgotten": 1}
    ```
    """

    def __init__(self, records_path: str | None = FROM_SETTINGS) -> None:
        """
        Create the recorder.

        :param records_path: The SQLite file of the record; default: the index's, from Needle's settings.
            `None` records nothing.
        :raises ValueError: When `records_path` is an empty string.
        """
        self._from_settings = {"records_path"} if records_path is FROM_SETTINGS else set()
        self.records_path = records_path_or_settings(records_path)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return without(default_to_dict(self, records_path=self.records_path), self._from_settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FileRecorder":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(recorded=int, forgotten=int)
    def run(
        self,
        file_stats: dict[str, dict[str, int]],
        files: list[Document],
        done: Variadic[int],
        gone: list[str] | None = None,
        listed: list[str] | None = None,
        unwritten: Variadic[list[str]] = None,  # type: ignore[assignment]  # optional: an older graph sends none
    ) -> dict[str, int]:
        """
        Record the files read and written, forget the files removed.

        :param file_stats: `collection:path` → stat as the scanner took it before reading (a file changed
            after that has another stat next time, and is read again).
        :param files: The files as read (meta `collection`, `path`, `content_hash`); a file in `file_stats`
            that is not among them was not read and gets no row.
        :param done: What the writers and refreshers report; only its arrival matters.
        :param gone: `collection:path` of files deleted on disk (their chunks left the index).
        :param listed: Collections the differs compared in full in this batch: from now on the record knows
            every indexed file of theirs (`FileRecords.mark_listed`).
        :param unwritten: `collection:path` of files the writers left out (a vector failed its check): recorded
            as not read, so that the next run reads them again instead of finding them unchanged.
        :returns: A dictionary with `recorded` (rows written) and `forgotten` (rows dropped).
        """
        del done  # the writers ran: their chunks are stored
        if not self.records_path:
            return {"recorded": 0, "forgotten": 0}
        left_out = {key for group in unwritten or [] if isinstance(group, list) for key in group}
        checksums = {
            f"{doc.meta.get('collection', '')}:{doc.meta.get('path', '')}": doc.meta.get("content_hash")
            for doc in files
        }
        checksums = {key: value for key, value in checksums.items() if key not in left_out}
        rows = [
            (*split_key(key), FileStat(**stat), checksums[key]) for key, stat in file_stats.items() if key in checksums
        ]
        records = FileRecords(self.records_path)
        recorded = records.put(rows)
        # A file that could not be read keeps its row; a new one gets a row that never matches, so that the
        # record knows it (should it be indexed from before and leave) and it is tried again.
        records.put([(*split_key(key), UNREAD, None) for key in file_stats if key not in checksums], keep=True)
        forgotten = records.forget(split_key(key) for key in gone or [])
        records.mark_listed(listed or [])
        return {"recorded": recorded, "forgotten": forgotten}
