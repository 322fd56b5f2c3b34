"""The golden sets' answer keys can be shown: each is text a chunk of an expected file holds."""

from pathlib import Path

import pytest

from needle.core.links import as_display_text
from needle.evaluation.golden import load_golden

GOLDEN = Path(__file__).resolve().parents[2] / "eval" / "golden"


@pytest.mark.parametrize("name", ["demo", "notes", "vault", "cjk"])
def test_every_answer_key_is_in_an_expected_file_as_a_reader_sees_it(name):
    # A chunk holds a note's links as their display text (`[[Snert]]` reads `Snert`, `[[Lotte de Vries|Lotte]]`
    # reads `Lotte`), and "answer shown" looks for a key in the snippet as it is: a key quoting a link as written
    # could never be shown.
    golden = load_golden(GOLDEN / f"{name}.yml")
    keyed = [q for q in golden.queries if q.answers]
    assert keyed
    missing = []
    for query in keyed:
        shown = [as_display_text((golden.corpus / path).read_text(encoding="utf-8")) for path in query.expected]
        missing += [(query.id, key) for key in query.answers if not any(key in text for text in shown)]
    assert missing == []
