"""What a costly document takes to convert, unbounded and within the converter's bounds (`needle.bounded`).

Builds a DOCX that is small on disk and within every size limit (`costly_docx_bytes`: N short paragraphs),
then converts it twice, each in a process of its own: as the converter did before (in process, unbounded)
and as it does now (a child stopped at `--max-seconds` / `--max-memory-mb`). Prints seconds and the peak
resident memory of the largest process of each.

    PYTHONPATH=. python eval/document_cost.py --paragraphs 100000
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import zipfile

CHILD = """
import json, resource, sys, time
from needle.formats import Extractor, Limits, Unreadable
data = open(sys.argv[1], 'rb').read()
limits = Limits(max_seconds=float(sys.argv[3]), max_memory_mb=int(sys.argv[4]))
extractor = Extractor(limits)
started = time.perf_counter()
try:
    text = (extractor.extract_here if sys.argv[2] == 'unbounded' else extractor.extract)(data, 'docx').text
    outcome = f'{len(text)} characters extracted'
except Unreadable as error:
    outcome = f'skipped: {error}'
seconds = time.perf_counter() - started
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({'seconds': round(seconds, 1), 'peak_mb': peak // 1024, 'outcome': outcome}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=100_000)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--max-memory-mb", type=int, default=1024)
    args = parser.parse_args()

    from needle.evaluation.documents import costly_docx_bytes

    data = costly_docx_bytes(args.paragraphs)
    unpacked = sum(e.file_size for e in zipfile.ZipFile(io.BytesIO(data)).infolist())
    path = f"/tmp/needle-costly-{args.paragraphs}.docx"
    with open(path, "wb") as handle:
        handle.write(data)
    print(f"costly DOCX: {args.paragraphs} paragraphs, {len(data) / 1e6:.1f} MB on disk, {unpacked / 1e6:.1f} MB unpacked")
    for mode in ("unbounded", "bounded"):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, path, mode, str(args.max_seconds), str(args.max_memory_mb)],
            capture_output=True, text=True, check=True,
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{mode:>9}: {result['seconds']} s, peak {result['peak_mb']} MB (largest process), {result['outcome']}")


if __name__ == "__main__":
    main()
