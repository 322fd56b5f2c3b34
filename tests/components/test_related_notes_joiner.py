"""RelatedNotesJoiner: one ranking of notes related by links and by meaning, every reason kept."""

import pytest
from haystack import Document

from haystack_integrations.components.joiners.needle.related_notes_joiner import RelatedNotesJoiner


def note(path: str, score: float, *reasons: str, title: str = "") -> Document:
    meta = {"collection": "n", "path": path, "source_doc_id": f"n:{path}", "reasons": list(reasons)}
    if title:
        meta["title"] = title
    return Document(id=f"n:{path}", content="", score=score, meta=meta)


def test_a_note_related_both_ways_keeps_both_reasons_and_ranks_first() -> None:
    linked = [note("a.md", 2.0, "links here", "linked from here"), note("b.md", 0.25, "shares 1 link")]
    similar = [note("c.md", 0.9, "similar", title="C"), note("a.md", 0.6, "similar", title="A")]
    out = RelatedNotesJoiner().run(linked=linked, similar=similar)["documents"]
    assert [d.meta["path"] for d in out] == ["a.md", "c.md", "b.md"]
    assert out[0].meta["reasons"] == ["links here", "linked from here", "similar"]
    assert out[0].meta["title"] == "A" and out[0].score == pytest.approx(0.5 * 1.0 + 0.5 * 0.6)
    assert out[2].score == pytest.approx(0.5 * 0.125)


def test_top_k_and_weights() -> None:
    linked = [note("a.md", 1.0, "links here")]
    similar = [note("b.md", 0.9, "similar")]
    out = RelatedNotesJoiner(link_weight=1.0, similarity_weight=0.0).run(linked=linked, similar=similar, top_k=1)
    assert [d.meta["path"] for d in out["documents"]] == ["a.md"]
    with pytest.raises(ValueError, match="top_k"):
        RelatedNotesJoiner(top_k=0)
    assert RelatedNotesJoiner.from_dict(RelatedNotesJoiner(top_k=3).to_dict()).top_k == 3
