"""LinkSupportRanker: a result several top hits link to moves up; a collection without links is left as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from haystack import Document, Pipeline

from haystack_integrations.components.rankers.needle.link_support_ranker import LinkSupportRanker
from needle.core.link_table import LinkTable
from needle.core.links import find_links
from needle.core.schema import FILE_ID, LINK_SUPPORT
from tests.conftest import REPO


def _result(path: str, score: float, collection: str = "vault") -> Document:
    return Document(
        id=f"{collection}:{path}#0",
        content=path,
        score=score,
        meta={"collection": collection, "path": path, FILE_ID: f"{collection}:{path}"},
    )


def _paths(documents: list[Document]) -> list[str]:
    return [doc.meta["path"] for doc in documents]


@pytest.fixture
def records(tmp_path: Path) -> str:
    """A real link table: two daily notes and a meeting link to the concept note; the MOC links to the recipes."""
    path = tmp_path / "files.sqlite"
    LinkTable(path).put_notes(
        [
            ("vault", "Concepts/Time windows.md", ["delivery windows"], []),
            ("vault", "Daily/2026-10-01.md", [], find_links("van 12 went north first: [[delivery windows]]")),
            ("vault", "Daily/2026-10-02.md", [], find_links("again [[Time windows|the windows]]\n[[Missing note]]")),
            ("vault", "Meetings/Pilot review.md", [], find_links("see [Time windows](../Concepts/Time%20windows.md)")),
            ("vault", "Recipes/Snert.md", [], []),
            ("vault", "Recipes/Dal.md", [], []),
            ("vault", "MOCs/Cooking MOC.md", [], find_links("- [[Snert]]\n- [[Dal]]\n- [[Cooking MOC]]")),
            ("plain", "a.md", [], []),
            ("plain", "b.md", [], []),
        ]
    )
    return str(path)


def test_a_note_several_top_hits_link_to_moves_up(records):
    ranker = LinkSupportRanker(records_path=records, in_weight=0.05, max_boost=0.1, min_hits=2)
    results = [
        _result("Daily/2026-10-01.md", 0.80),
        _result("Meetings/Pilot review.md", 0.78),
        _result("Daily/2026-10-02.md", 0.76),
        _result("Concepts/Time windows.md", 0.72),
        _result("Recipes/Snert.md", 0.70),
    ]
    out = ranker.run(documents=results)["documents"]
    # Three top hits link to the concept note (by alias, with display text, as a markdown link): 3 · 0.05,
    # capped at 0.1, lifts 0.72 to 0.82, above every note that links to it.
    assert _paths(out)[0] == "Concepts/Time windows.md"
    assert out[0].score == pytest.approx(0.82)
    assert out[0].meta[LINK_SUPPORT] == {"in": 3, "out": 0, "boost": pytest.approx(0.1)}
    assert _paths(out)[1:] == [p for p in _paths(results) if p != "Concepts/Time windows.md"]
    assert all(LINK_SUPPORT not in doc.meta for doc in out[1:])
    assert results[3].score == 0.72 and LINK_SUPPORT not in results[3].meta  # the input is not changed


def test_one_linking_hit_is_not_enough_and_out_links_count_when_weighted(records):
    results = [_result("Recipes/Snert.md", 0.9), _result("Recipes/Dal.md", 0.85), _result("MOCs/Cooking MOC.md", 0.8)]
    # The MOC links to two top hits; links into a note count only with `out_weight`, its link to itself never.
    default = LinkSupportRanker(records_path=records).run(documents=results)["documents"]
    assert default == results
    hub = LinkSupportRanker(records_path=records, out_weight=0.06, max_boost=0.2)
    out = hub.run(documents=results)["documents"]
    assert _paths(out)[0] == "MOCs/Cooking MOC.md"
    assert out[0].meta[LINK_SUPPORT] == {"in": 0, "out": 2, "boost": pytest.approx(0.12)}
    # Only one top hit links to the concept note: below `min_hits` 2 nothing moves.
    single = [_result("Daily/2026-10-01.md", 0.8), _result("Concepts/Time windows.md", 0.7)]
    assert LinkSupportRanker(records_path=records).run(documents=single)["documents"] == single


def test_without_links_every_result_is_left_as_given(records, tmp_path):
    # A collection indexed without links (SciFact's abstracts, plain documents), a record with no link table
    # yet, a stage switched off: the same documents come back, same scores, same order.
    plain = [_result("b.md", 0.4, "plain"), _result("a.md", 0.5, "plain")]
    for ranker in (
        LinkSupportRanker(records_path=records),
        LinkSupportRanker(records_path=records, in_weight=1.0, out_weight=1.0, max_boost=1.0, min_hits=1),
        LinkSupportRanker(records_path=str(tmp_path / "absent.sqlite"), min_hits=1),
        LinkSupportRanker(records_path=None),
    ):
        out = ranker.run(documents=plain)["documents"]
        assert out is plain
        assert [(doc.id, doc.score) for doc in out] == [("plain:b.md#0", 0.4), ("plain:a.md#0", 0.5)]
    vault = [_result("Daily/2026-10-01.md", 0.8), _result("Concepts/Time windows.md", 0.7)]
    off = LinkSupportRanker(records_path=records, min_hits=1)
    assert off.run(documents=vault, enabled=False)["documents"] is vault
    assert off.run(documents=[])["documents"] == []
    assert not (tmp_path / "absent.sqlite").exists()


def test_settings_serialise_and_bad_ones_name_the_fix(records):
    ranker = LinkSupportRanker(records_path=records, top_hits=3, candidates=8, in_weight=0.04, min_hits=1)
    data = ranker.to_dict()
    assert data["init_parameters"] == {
        "records_path": records,
        "top_hits": 3,
        "candidates": 8,
        "in_weight": 0.04,
        "out_weight": 0.0,
        "max_boost": 0.1,
        "min_hits": 1,
    }
    assert LinkSupportRanker.from_dict(data).to_dict() == data
    pipeline = Pipeline()
    pipeline.add_component("links", ranker)
    assert Pipeline.loads(pipeline.dumps()).get_component("links").to_dict() == data
    with pytest.raises(ValueError, match="top_hits must be a positive integer"):
        LinkSupportRanker(records_path=records, top_hits=0)
    with pytest.raises(ValueError, match="min_hits must be a positive integer"):
        LinkSupportRanker(records_path=records, min_hits=True)
    with pytest.raises(ValueError, match=">= 0"):
        LinkSupportRanker(records_path=records, in_weight=-0.1)


def test_the_links_graph_is_query_with_the_stage_after_the_blend():
    query = yaml.safe_load((REPO / "pipelines" / "query.yml").read_text(encoding="utf-8"))
    links = yaml.safe_load((REPO / "pipelines" / "query-links.yml").read_text(encoding="utf-8"))
    stage = links["components"].pop("links")
    assert stage["type"].endswith("link_support_ranker.LinkSupportRanker")
    assert links["components"] == query["components"]
    assert links["inputs"] == query["inputs"] and links["outputs"] == query["outputs"]
    edges = [(c["sender"], c["receiver"]) for c in links["connections"]]
    assert ("blend.documents", "links.documents") in edges and ("links.documents", "recency.documents") in edges
    assert ("blend.documents", "recency.documents") not in edges
