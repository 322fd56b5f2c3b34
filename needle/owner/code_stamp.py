"""The code stamp: which Needle code a process runs, cheap enough for the thin client to compute per command.

A background owner keeps running after an upgrade (or a `git pull` in a clone), and a client of the new code
sending it a request the old code reads otherwise (a renamed parameter, a new output) gets a wrong answer.
The owner writes its stamp into its record (`needle.owner.record.OwnerRecord.code`); a client compares it with its
own (`needle.owner.thin_client`). The stamp is the installed version (read from the `needle_search-VERSION.dist-info`
folder's name on `sys.path`: `importlib.metadata` costs a tenth of a second to import) and a digest of the
path, size and modification time of every source file Needle runs (the package, the YAML graphs, the endpoint
wrappers): an upgrade rewrites them, a `git pull` or an edit touches the ones it changes. Standard library
only; a few milliseconds.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import Any

from needle.core.resources import PACKAGE_DIR, PIPELINES_DIR, ROOT, SERVER_PIPELINES_DIR

DIST_PREFIX = "needle_search-"
SOURCE_SUFFIXES = (".py", ".yml", ".yaml")
SKIPPED_DIRS = ("__pycache__",)


def sha256(data: bytes = b"") -> Any:
    """
    A SHA-256 hash object from the interpreter's own module when it has one (`_sha2`, `_sha256` before Python
    3.12): `hashlib` loads OpenSSL's library first, about 4 ms of every command a thin client sends.
    """
    try:
        from _sha2 import sha256 as new  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from _sha256 import sha256 as new  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            from hashlib import sha256 as new  # type: ignore[assignment,unused-ignore]
    return new(data)


def hmac_sha256(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 (RFC 2104) of `message` under `key`, in hexadecimal: what `hmac.new(key, message, "sha256")`
    gives, without importing `hmac` (which loads OpenSSL's library, as `hashlib` does)."""
    block = 64
    if len(key) > block:
        key = sha256(key).digest()
    key = key.ljust(block, b"\0")
    inner = sha256(bytes(byte ^ 0x36 for byte in key) + message).digest()
    return str(sha256(bytes(byte ^ 0x5C for byte in key) + inner).hexdigest())


@lru_cache(maxsize=1)
def code_stamp() -> str:
    """`VERSION+DIGEST` of the code this process runs (computed once per process)."""
    return f"{installed_version()}+{source_digest()}"


def installed_version() -> str:
    """Needle's installed version, from its metadata folder's name; `unknown` when none is on `sys.path`."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(DIST_PREFIX) and name.endswith((".dist-info", ".egg-info")):
                return name[len(DIST_PREFIX) :].rsplit(".", 1)[0]
    return "unknown"


def source_digest() -> str:
    """12 hexadecimal digits naming the path, size and mtime of every source file (a change changes them)."""
    digest = sha256()
    roots = dict.fromkeys(
        [PACKAGE_DIR, PIPELINES_DIR, SERVER_PIPELINES_DIR, ROOT / "components", ROOT / "document_stores"]
    )
    for root in roots:
        for line in sorted(_files(str(root))):
            digest.update(line.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:12]


def _files(root: str) -> list[str]:
    """`path:size:mtime_ns` of the source files under `root` (none when it does not exist)."""
    found = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRS:
                        stack.append(entry.path)
                elif entry.name.endswith(SOURCE_SUFFIXES):
                    info = entry.stat()
                    found.append(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}\n")
            except OSError:
                continue
    return found


__all__ = ["code_stamp", "hmac_sha256", "installed_version", "sha256", "source_digest"]
