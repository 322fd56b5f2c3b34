"""The record a shard's folder keeps of its last clean close, so that only a folder that may be damaged is probed.

Probing a shard in a child process (`probe.py`) costs a process start and a second open, too much for every
command. A shard closed by Needle is sealed: `seal` writes the size and modification time of every file
of the folder into `.needle_sealed`. The next open breaks the seal (`unseal`: the record is removed before
the engine opens the folder, so a process killed while the shard is open leaves none) and probes only when
the folder is not as sealed: no seal (the last process died with the shard open, or an older Needle wrote
it), or a file added, removed, resized or written since. Damage that changes no file's size or time (a
failing disk) is not seen here; `needle check` always probes.
"""

from __future__ import annotations

import json
import os
from contextlib import suppress

from needle.core.atomic import write_atomic

SEAL_FILE_NAME = ".needle_sealed"
_SEAL_BEING_WRITTEN = f"{SEAL_FILE_NAME}."  # `write_atomic`'s temporary file (`.needle_sealed.<random>.tmp`)


def seal(path: str, skip: frozenset[str] = frozenset()) -> None:
    """
    Record the folder as it is now, closed cleanly. A failure to write it only costs a probe later.

    :param path: The shard's folder, closed.
    :param skip: File names (at the top of the folder) that are not the shard's, such as its lock file.
    """
    with suppress(OSError):
        write_atomic(os.path.join(path, SEAL_FILE_NAME), json.dumps(_state(path, skip)))


def unseal(path: str, skip: frozenset[str] = frozenset()) -> bool:
    """
    Break the folder's seal before it is opened.

    :param path: The shard's folder, about to be opened.
    :param skip: File names (at the top of the folder) that are not the shard's.
    :returns: Whether the folder is exactly as it was sealed (no probe needed).
    """
    target = os.path.join(path, SEAL_FILE_NAME)
    try:
        with open(target, encoding="utf-8") as handle:
            sealed = json.load(handle)
    except (OSError, ValueError):
        return False
    finally:
        with suppress(OSError):
            os.remove(target)
    return sealed == _state(path, skip)


def is_sealed(path: str, skip: frozenset[str] = frozenset()) -> bool:
    """
    Whether the folder is exactly as its last clean close sealed it, leaving the seal in place.

    :param path: The shard's folder, not open.
    :param skip: File names (at the top of the folder) that are not the shard's.
    :returns: True when no probe is needed.
    """
    try:
        with open(os.path.join(path, SEAL_FILE_NAME), encoding="utf-8") as handle:
            sealed = json.load(handle)
    except (OSError, ValueError):
        return False
    return sealed == _state(path, skip)


def _state(path: str, skip: frozenset[str]) -> dict[str, list[int]]:
    """
    Relative path → [size, modification time in ns] of every file of the folder but the seal and `skip`.

    Read with `os.scandir`, the relative paths built as it descends: `status` checks the seal of a folder it
    does not open on every call, and `os.walk` with `os.path.relpath` per file took about 10 ms a store at
    300,000 chunks (some 440 files in 190 folders; `python eval/hotpath.py status`). What is recorded is what
    that walk recorded (symbolic links as themselves, linked folders neither listed nor entered), so a seal
    written by an older Needle still matches.
    """
    state: dict[str, list[int]] = {}
    ignored = skip | {SEAL_FILE_NAME}
    pending = [(path, "")]
    while pending:
        folder, prefix = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            relative = prefix + entry.name
            try:
                is_folder = entry.is_dir()
            except OSError:
                is_folder = False
            if is_folder:
                if not entry.is_symlink():
                    pending.append((entry.path, relative + os.sep))
                continue
            if relative in ignored or relative.startswith(_SEAL_BEING_WRITTEN):
                continue
            with suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                state[relative] = [info.st_size, info.st_mtime_ns]
    return state
