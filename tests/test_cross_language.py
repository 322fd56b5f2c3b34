"""A question in one language finds a note in another through the user's multilingual model server.

The server is tests/embedding_server.py on 127.0.0.1 behind OpenAI's API, told that the test's Russian and German
questions translate sentences of the English notes (as bge-m3 or multilingual-e5 would embed them close together;
the offline MiniLM cannot). BM25 has no word of the question, so the hybrid graph must rank by the vectors alone.
"""

from __future__ import annotations

import pytest

from needle.core.requests import IndexRequest, SearchRequest
from tests.test_served_embedders import notes, served_needle  # noqa: F401  (the notes fixture)

pytestmark = pytest.mark.integration

QUESTIONS = {
    "Как создать слот репликации для каждого подписчика?": "create a replication slot per subscriber",
    "Wie lange soll der Sauerteig über Nacht gehen?": "A long cold proof overnight gives the crumb its open structure",
}
EXPECTED = {
    "Как создать слот репликации для каждого подписчика?": "postgres.md",
    "Wie lange soll der Sauerteig über Nacht gehen?": "bread.md",
}


@pytest.mark.parametrize("graph", ["vsearch", "query"])
def test_a_question_in_another_language_finds_the_english_note(served, tmp_path, model_dir, notes, graph):  # noqa: F811
    needle = served_needle(tmp_path / "data", model_dir, notes, "openai", served.openai_url)
    try:
        needle.index(IndexRequest())
        served.faults(translations=QUESTIONS)
        for question, expected in EXPECTED.items():
            answer = needle.search(SearchRequest(query=question, limit=3, explain=True), pipeline=graph)
            assert answer.results and answer.results[0].path == expected, (question, [r.path for r in answer.results])
            assert answer.warnings == []
    finally:
        needle.close()
