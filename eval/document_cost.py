"""What a costly document takes to convert, unbounded and within the converter's bounds (`needle.core.bounded`).

Builds a DOCX that is small on disk and within every size limit (`costly_docx_bytes`: N short paragraphs),
then converts it twice, each in a process of its own: as the converter did before (in process, unbounded)
and as it does now (a child stopped at `--max-seconds` / `--max-memory-mb`). Prints seconds and the peak
resident memory of the largest process of each (the converter's child included: `needle.evaluation.memory`).

    python -m eval.document_cost --paragraphs 300000

It also prints what the child costs a small DOCX (medians, in process and in a child).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import zipfile

CHILD = """
import json, sys, time
from needle.core.file_formats import Extractor, Limits, Unreadable
data = open(sys.argv[1], 'rb').read()
limits = Limits(max_seconds=float(sys.argv[3]), max_memory_mb=int(sys.argv[4]))
extractor = Extractor(limits)
started = time.perf_counter()
try:
    text = (extractor.extract_here if sys.argv[2] == 'unbounded' else extractor.extract)(data, 'docx').text
    outcome = f'{len(text)} characters extracted'
except Unreadable as error:
    outcome = f'skipped: {error}'
print(json.dumps({'seconds': round(time.perf_counter() - started, 1), 'outcome': outcome}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.document_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=300_000)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--max-memory-mb", type=int, default=1024)
    args = parser.parse_args(argv)

    from needle.evaluation.memory import run_measured
    from needle.evaluation.sample_documents import costly_docx_bytes

    data = costly_docx_bytes(args.paragraphs)
    unpacked = sum(e.file_size for e in zipfile.ZipFile(io.BytesIO(data)).infolist())
    path = f"/tmp/needle-costly-{args.paragraphs}.docx"
    with open(path, "wb") as handle:
        handle.write(data)
    print(
        f"costly DOCX: {args.paragraphs} paragraphs, {len(data) / 1e6:.1f} MB on disk, {unpacked / 1e6:.1f} MB unpacked"
    )
    print(_overhead())
    for mode in ("unbounded", "bounded"):
        done = run_measured([sys.executable, "-c", CHILD, path, mode, str(args.max_seconds), str(args.max_memory_mb)])
        if done.returncode != 0:
            raise SystemExit(done.stderr[-2000:])
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{mode:>9}: {result['seconds']} s, peak {done.peak_process_mb} MB (largest process), "
            f"{done.peak_total_mb} MB (all its processes), {result['outcome']}"
        )
    return 0


def _overhead(repeats: int = 11) -> str:
    """What the child process costs a small document: medians of `repeats` conversions each way."""
    import statistics
    import time

    from needle.core.file_formats import Extractor
    from needle.evaluation.sample_documents import docx_bytes

    data = docx_bytes("# Small\n\nOne short paragraph about otters.")
    extractor = Extractor()
    extractor.extract(data, "docx")  # starts the server process once
    timings = {}
    for mode, extract in (("in process", extractor.extract_here), ("in a child", extractor.extract)):
        seconds = []
        for _ in range(repeats):
            started = time.perf_counter()
            extract(data, "docx")
            seconds.append(time.perf_counter() - started)
        timings[mode] = statistics.median(seconds) * 1000
    return ", ".join(f"small DOCX {mode}: {ms:.0f} ms" for mode, ms in timings.items()) + f" (medians of {repeats})"


if __name__ == "__main__":
    raise SystemExit(main())
