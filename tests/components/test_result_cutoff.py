import pytest
from haystack import Document

from haystack_integrations.components.samplers.needle.result_cutoff import ResultCutoff


def ranked(*scores: float) -> list[Document]:
    return [Document(id=str(i), content=str(i), score=s) for i, s in enumerate(scores)]


class TestResultCutoff:
    def test_init_defaults_and_bad_params(self):
        assert ResultCutoff().default_top_k == 10
        with pytest.raises(ValueError, match="default_top_k"):
            ResultCutoff(default_top_k=0)

    def test_to_dict_and_from_dict(self):
        data = ResultCutoff(default_top_k=4).to_dict()
        assert data == {
            "type": "haystack_integrations.components.samplers.needle.result_cutoff.ResultCutoff",
            "init_parameters": {"default_top_k": 4},
        }
        assert ResultCutoff.from_dict(data).default_top_k == 4

    def test_keeps_top_k(self):
        assert [d.id for d in ResultCutoff().run(ranked(0.9, 0.8, 0.7), top_k=2)["documents"]] == ["0", "1"]

    def test_default_top_k_when_none_given(self):
        assert len(ResultCutoff(default_top_k=1).run(ranked(0.9, 0.8))["documents"]) == 1

    def test_min_score_drops_weak_results(self):
        out = ResultCutoff().run(ranked(0.9, 0.5, 0.1), min_score=0.5)["documents"]
        assert [d.score for d in out] == [0.9, 0.5]

    def test_bad_top_k_at_run_raises(self):
        with pytest.raises(ValueError):
            ResultCutoff().run(ranked(1.0), top_k=0)
