"""Open a shard in a child process first, so that a damaged one cannot take the command down with it.

Some damage makes the engine abort the process while it opens the shard: a garbled id in the id tracker
asks for a 50 GB allocation, and Rust aborts (exit 134, a backtrace, no Python handler runs). `probe`
opens the shard in a short-lived child (this file run as a script: the standard library and the engine,
nothing of Needle), with its address space capped so that a wild allocation fails at once instead of
swapping; when the child dies, the damage is reported as an `IndexDamagedError` and the command goes on
to say so. With `read_all` the child also reads every point with its payload and vectors (`needle check`).

Run as a script: `python -I probe.py FOLDER LIMIT_MB [read]`; prints the number of points, exits 0.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

# The child's address space: the shard's files are memory-mapped (their sparse sizes count), plus this much.
_HEADROOM_MB = 4096
# Lines of a Rust backtrace or panic note, which say nothing to the user.
_BACKTRACE = re.compile(r"^(\d+:|at |stack backtrace|note:|thread '.*' panicked)")
# A child still opening after this long is taken for one stuck on damage.
TIMEOUT_SECONDS = 300.0


def probe(path: str, read_all: bool = False) -> str | None:
    """
    Open the shard in `path` in a child process (and read it all, with `read_all`).

    :param path: The shard's folder, holding a shard.
    :param read_all: Also read every point with its payload and vectors.
    :returns: `None` when the child opened (and read) it, else what went wrong, in a few words.
    """
    limit = _mapped_mb(path) + _HEADROOM_MB
    command = [sys.executable, "-I", os.path.abspath(__file__), path, str(limit), *(["read"] if read_all else [])]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return f"opening it did not finish within {TIMEOUT_SECONDS:.0f} s"
    if done.returncode == 0:
        return None
    said = _first_line(done.stderr)
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        doing = "reading" if read_all else "opening"
        return f"the engine crashed {doing} it ({name}{': ' + said if said else ''})"
    return said or f"opening it failed (exit {done.returncode})"


def _first_line(text: str) -> str:
    """The engine's own message: the first line of what the child said that is not part of a backtrace."""
    for line in (line.strip() for line in text.splitlines()):
        if line and not _BACKTRACE.match(line):
            return line[:300]
    return ""


def _mapped_mb(path: str) -> int:
    """The sparse size of every file in the folder, in MB: what the engine may map."""
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total // (1024 * 1024) + 1


def _main(argv: list[str]) -> int:
    """The child: open the shard (read it all), print the number of points."""
    import resource

    path, limit_mb, *mode = argv
    limit = int(limit_mb) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import qdrant_edge as qe

    try:
        shard = qe.EdgeShard.load(path)
        count = int(shard.count(qe.CountRequest(exact=True)))
        if mode == ["read"]:
            offset = None
            while True:
                request = qe.ScrollRequest(offset=offset, limit=256, with_payload=True, with_vector=True)
                _, offset = shard.scroll(request)
                if offset is None:
                    break
        shard.close()
    except BaseException as error:
        print(f"{type(error).__name__}: {error}".splitlines()[0], file=sys.stderr)
        return 1
    print(count)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
