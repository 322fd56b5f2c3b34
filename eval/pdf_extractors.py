"""PDF text extraction compared: pypdf (Haystack's PyPDFToDocument, what Needle uses), pdfminer.six
(Haystack's PDFMinerToDocument) and pypdfium2 (no Haystack converter), on the demo notes as one PDF.

    pip install --target /tmp/pdfx pdfminer.six pypdfium2   # not Needle's dependencies: only for this comparison
    PYTHONPATH=/tmp/pdfx python -m eval.pdf_extractors

Prints pages per second (best of three runs) and how much of the source text comes back: the share of its
words found, and of its adjacent word pairs found adjacent (reading order). A library that is not installed
is left out.
"""

from __future__ import annotations

import argparse
import itertools
import re
from collections.abc import Callable

from eval.demo_data import demo_texts
from eval.stopwatch import best_seconds
from needle.evaluation import sample_documents as make


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def fidelity(extracted: str, source: list[str]) -> tuple[float, float]:
    got = words(extracted)
    found, pairs = set(got), set(itertools.pairwise(got))
    return (
        sum(w in found for w in source) / len(source),
        sum(p in pairs for p in itertools.pairwise(source)) / (len(source) - 1),
    )


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m eval.pdf_extractors", description=__doc__.split("\n")[0]).parse_args(argv)
    from haystack.dataclasses import ByteStream

    texts = demo_texts()
    data = make.pdf_bytes([f"## {title}\n\n{body}" for title, body in texts], title="Demo notes")
    source = [w for title, body in texts for w in words(f"{title} {body}")]
    extractors: dict[str, Callable[[bytes], str]] = {}
    from haystack.components.converters import PyPDFToDocument

    pypdf = PyPDFToDocument()
    extractors["pypdf (PyPDFToDocument)"] = lambda d: pypdf.run(sources=[ByteStream(d)])["documents"][0].content
    try:
        from haystack.components.converters import PDFMinerToDocument

        miner = PDFMinerToDocument()
        extractors["pdfminer.six (PDFMinerToDocument)"] = lambda d: (
            miner.run(sources=[ByteStream(d)])["documents"][0].content
        )
    except ImportError:
        pass
    try:
        import pypdfium2

        def pdfium(d: bytes) -> str:
            document = pypdfium2.PdfDocument(d)
            return "\f".join(document[i].get_textpage().get_text_range() for i in range(len(document)))

        extractors["pypdfium2 (no Haystack converter)"] = pdfium
    except ImportError:
        pass
    pages = None
    print("| extractor | pages/s | words found | word pairs in order |")
    print("|---|---|---|---|")
    for name, extract in extractors.items():
        try:
            seconds, text = best_seconds(lambda extract=extract: extract(data))
        except Exception as error:
            print(f"| {name} | failed: {error} | | |")
            continue
        pages = pages or text.count("\f") + 1
        recall, order = fidelity(text, source)
        print(f"| {name} | {pages / seconds:.0f} | {recall:.3f} | {order:.3f} |")
    print(f"\n{len(texts)} demo notes as one PDF of {pages} pages, {len(data)} bytes (fpdf2)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
