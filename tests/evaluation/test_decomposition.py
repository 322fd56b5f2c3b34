"""Multi-part questions built from pairs of golden questions."""

from types import SimpleNamespace

import pytest

from needle.evaluation import decomposition


def query(qid: str, text: str, *expected: str) -> SimpleNamespace:
    return SimpleNamespace(id=qid, query=text, expected=tuple(expected))


QUERIES = [query("q1", "a?", "a.md"), query("q2", "b?", "b.md"), query("q3", "c?", "a.md", "c.md")]


class TestPairs:
    def test_pairs_never_share_an_expected_note_and_are_reproducible(self):
        pairs = decomposition.pairs_of(QUERIES, 10, seed=3)
        assert pairs == decomposition.pairs_of(QUERIES, 10, seed=3)
        assert {(a.id, b.id) for a, b in pairs} == {("q1", "q2"), ("q2", "q1"), ("q2", "q3"), ("q3", "q2")}

    def test_the_joiners_read_as_one_question(self):
        a, b = "How do I renew certs?", "why was the pod killed?"
        assert (
            decomposition.join_questions("{a}, and also {b}", a, b)
            == "How do I renew certs, and also why was the pod killed?"
        )
        assert decomposition.join_questions("{a}; {b}", a, b) == "How do I renew certs; why was the pod killed?"
        assert decomposition.join_questions("{a}? And {b}", a, b) == "How do I renew certs? And Why was the pod killed?"


@pytest.mark.integration
def test_a_decomposition_run_on_the_demo_index(demo_needle, golden_set):
    report = decomposition.evaluate(demo_needle, golden_set, pairs=4, joiners=["{a}, and also {b}"])
    result = report["joiners"]["{a}, and also {b}"]
    assert result["off"]["split"] == 0.0 and result["on"]["split"] == 1.0
    assert 0.0 <= result["off"]["both"] <= 1.0 and len(result["on"]["rows"]) == 4
    assert "| `{a}, and also {b}` | on | 1.00 |" in decomposition.format_report(report)
