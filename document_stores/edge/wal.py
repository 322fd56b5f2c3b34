"""Read a shard's write-ahead log as the engine does, and find the entries it would silently drop.

The engine's log (`wal/open-N`, `wal/closed-N`: segments of the `wal` crate) chains a CRC-32C through its
entries: a segment starts with `wal`, a version byte and a random seed; each entry is its length (u64), its
data padded to 8 bytes, and the CRC of those bytes continued from the previous entry's (the seed for the
first). Opening a segment, the engine reads entries until the first CRC that does not match and takes that
for the end of the log, so bytes garbled inside the log quietly cut off every entry after them. `read_wal`
follows the same chain and, where it breaks, looks on (up to 1 MB) for an entry that chains from the CRC
stored just before it: then the log went on past the break, and the entries from the break on are damage,
not a torn last write. Garbled bytes in the last entry look like a torn write and are not told apart.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

_MAGIC = b"wal"
_HEADER = 8
_CRC = 4
# How far past a break the log is searched for entries that still chain on.
_SCAN_BYTES = 1 << 20


def _table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _table()


def crc32c(initial: int, data: bytes) -> int:
    """
    CRC-32C of `data` continued from `initial`, as the `crc` crate's `digest_with_initial` computes it.

    :param initial: The previous entry's CRC (or the segment's seed).
    :param data: The entry's length, data and padding.
    """
    register = int(f"{initial:032b}"[::-1], 2)  # a reflected algorithm starts from the reflected value
    table = _TABLE
    for byte in data:
        register = table[(register ^ byte) & 0xFF] ^ (register >> 8)
    return register ^ 0xFFFFFFFF


@dataclass(frozen=True)
class WalReport:
    """What `read_wal` found: entries the engine reads, entries past a break in the chain, segments with one."""

    entries: int = 0
    unreadable: int = 0
    damaged_segments: tuple[str, ...] = ()


def read_wal(shard_path: str) -> WalReport:
    """
    Read every segment of a shard's write-ahead log.

    :param shard_path: The shard's folder.
    :returns: The entries read, and those the engine would drop past garbled bytes.
    """
    folder = os.path.join(shard_path, "wal")
    if not os.path.isdir(folder):
        return WalReport()
    entries, unreadable, damaged = 0, 0, []
    for name in sorted(os.listdir(folder)):
        if not name.startswith(("open-", "closed-")):
            continue
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        read, lost = _read_segment(data)
        entries += read
        if lost:
            unreadable += lost
            damaged.append(name)
    return WalReport(entries, unreadable, tuple(damaged))


def _entry(data: bytes, offset: int, crc: int) -> tuple[int, int] | None:
    """The entry at `offset`, if its CRC chains from `crc`: (offset of the next entry, its CRC)."""
    end = _entry_end(data, offset)
    if end is None:
        return None
    (stored,) = struct.unpack_from("<I", data, end)
    if crc32c(crc, data[offset:end]) != stored:
        return None
    return end + _CRC, stored


def _entry_end(data: bytes, offset: int) -> int | None:
    """Where the entry at `offset` ends (its CRC starts), when its length fits in the segment."""
    if offset + _HEADER + _CRC > len(data):
        return None
    (length,) = struct.unpack_from("<Q", data, offset)
    end = offset + _HEADER + length + ((4 - length) & 7)
    return end if length and end + _CRC <= len(data) else None


def _read_segment(data: bytes) -> tuple[int, int]:
    """(entries the engine reads, entries from a break on that the log still chains past) of one segment."""
    if len(data) < _HEADER or data[:3] != _MAGIC:
        return 0, 0
    (crc,) = struct.unpack_from("<I", data, 4)
    offset, entries = _HEADER, 0
    while (found := _entry(data, offset, crc)) is not None:
        offset, crc = found
        entries += 1
    # The chain broke at `offset`: does an entry further on chain from the CRC stored just before it?
    for resumed in range(offset + _HEADER, min(len(data), offset + _SCAN_BYTES), 8):
        (crc,) = struct.unpack_from("<I", data, resumed - _CRC)
        if crc == 0 or _entry_end(data, resumed) is None:
            continue
        after = 0
        position = resumed
        while (found := _entry(data, position, crc)) is not None:
            position, crc = found
            after += 1
        if after:
            return entries, after + 1
    return entries, 0
