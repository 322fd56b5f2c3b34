"""The label on the demo notes with the graphs' fitted confidence: what it says to off-topic questions."""

import pytest

from needle.core.requests import SearchRequest

pytestmark = pytest.mark.integration

# Off-topic test questions (eval/golden/offtopic.yml, `test`) that the label used to PASS: nothing in the notes
# answers them, yet their words (history, cost, take up) occur in many notes.
OFFTOPIC = (
    "What is the history of yodeling?",
    "How much does it cost to take up bookbinding?",
    "What is the history of ventriloquism?",
)


@pytest.mark.parametrize("graph", ["search", "vsearch", "query"])
def test_an_off_topic_question_is_not_labelled_pass(demo_needle, graph):
    for question in OFFTOPIC:
        answer = demo_needle.search(SearchRequest(query=question, limit=10), pipeline=graph)
        assert answer.results and answer.label != "PASS", (question, answer.confidence)


@pytest.mark.parametrize("graph", ["search", "vsearch", "query"])
def test_a_question_the_notes_answer_in_their_own_words_still_passes(demo_needle, graph):
    # Every word in the note: PASS is strict (0.85), so a word the note lacks ("dry-run") may keep it below.
    answer = demo_needle.search(SearchRequest(query="certbot renew deploy hook", limit=10), pipeline=graph)
    assert answer.results[0].path == "howto/certbot-tls-renewal.md" and answer.label == "PASS"


def test_vsearch_sentence_reads_the_top_results_best_sentence_and_ranks_as_vsearch(demo_needle):
    # A paraphrase sharing no word with its note: the best sentence of the recipe still resembles it.
    question = "spiced yellow legume soup"
    answer = demo_needle.search(SearchRequest(query=question, limit=10, explain=True), pipeline="vsearch-sentence")
    signals = answer.explain["confidence"]
    assert answer.results[0].path == "recipes/weeknight-dal.md"
    assert 0.3 < signals["sentence"] <= 1.0 and signals["words"] == 0.0
    plain = demo_needle.search(SearchRequest(query=question, limit=10, explain=True), pipeline="vsearch")
    assert "sentence" not in plain.explain["confidence"]  # vsearch.yml pays nothing for it
    assert [(r.path, r.start_line, r.score) for r in plain.results] == [
        (r.path, r.start_line, r.score) for r in answer.results
    ]


# Questions the demo notes do not answer (eval/golden/demo-unanswerable.yml, test questions) that `query` labelled
# PASS at the former threshold of 0.5 (0.82 and 0.81): a near-topic note or a short personal question's stock
# words are not an answer.
UNANSWERED = ("postmortem of the DNS outage", "what's my bank account number?")


@pytest.mark.parametrize("graph", ["search", "vsearch", "query"])
def test_a_near_topic_or_personal_question_the_notes_do_not_answer_is_not_labelled_pass(demo_needle, graph):
    for question in UNANSWERED:
        answer = demo_needle.search(SearchRequest(query=question, limit=10), pipeline=graph)
        assert answer.results and answer.label != "PASS", (question, answer.confidence)
