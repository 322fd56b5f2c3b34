"""An owner gives back the memory a finished index run freed: glibc keeps freed heap mapped below the last
block still in use, which a process that lives all day would hold; `give_back_memory` returns it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

FREED_BELOW_A_LIVE_BLOCK = """
from pathlib import Path

def anonymous_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) // 1024

held = [b"x" * 50_000 + bytes([i % 256]) for i in range(6000)]  # about 300 MB on the heap
last = b"y" * 50_000 + b"z"  # allocated last and kept: the heap's top stays in use
del held
before = anonymous_mb()
from needle.owner.routes import give_back_memory
give_back_memory()
print(before, anonymous_mb())
"""


def test_memory_freed_by_a_run_goes_back_to_the_system():
    done = subprocess.run(
        [sys.executable, "-c", FREED_BELOW_A_LIVE_BLOCK], cwd=REPO, capture_output=True, text=True, check=True
    )
    before, after = map(int, done.stdout.split())
    assert before > 200 and after < before - 200, (before, after)


def test_an_index_run_in_the_owner_gives_its_memory_back():
    from needle.owner.routes import GIVES_BACK

    assert {"index", "optimize", "restore"} <= GIVES_BACK
