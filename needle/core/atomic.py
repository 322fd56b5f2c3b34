"""Replacing a small file at once: a reader sees the old text or the new one, never half of either.

Needle's own files (the collection list, the contexts, the index's provenance, the owner record, a shard's
seal) are rewritten whole by `write_atomic`: the text goes to a hidden temporary file beside the target
(`.NAME.<random>.tmp`, on the same file system), which then takes the target's name (`os.replace`, atomic on
POSIX). The text is flushed to the disk (`fsync`) before the rename, so that after a power cut the file
holds the old text or the new one, never an empty file (a file system may otherwise commit the rename before
the data). A process killed halfway leaves the old file in place; a failure (a full disk) removes the
temporary file and raises.

Usage example:
```python
write_atomic(data_dir / "collections.yml", yaml.safe_dump(listing))
write_atomic(record_path, json.dumps(record), mode=0o600)  # readable by its user only, from the start
```
"""

from __future__ import annotations

import os
import tempfile
from contextlib import suppress


def write_atomic(path: str | os.PathLike[str], text: str, mode: int = 0o600) -> None:
    """
    Replace the file at `path` with `text` (UTF-8) at once.

    :param path: The file; its folder must exist.
    :param text: The whole new content.
    :param mode: Permission bits of the new file, set before anything is written (the temporary file is
        created with 0o600, so a secret is never readable by others, not even for a moment).
    :raises OSError: When the folder cannot be written; `path` is then as it was.
    """
    target = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(target))
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name.lstrip('.')}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            if mode != 0o600:
                os.fchmod(out.fileno(), mode)
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise


__all__ = ["write_atomic"]
