import pytest
from haystack import Document
from haystack.errors import FilterError

from haystack_integrations.document_stores.needle._shared import Values, plain_filters
from haystack_integrations.document_stores.needle.edge import EdgeDocumentStore
from haystack_integrations.document_stores.needle.edge.filters import edge_filter


class TestEdgeDocumentStoreFilters:
    @pytest.fixture(scope="class")
    def filter_store(self, tmp_path_factory):
        store = EdgeDocumentStore(
            path=str(tmp_path_factory.mktemp("filters") / "edge"), embedding_dim=4, durable_writes=False
        )
        store.write_documents(
            [
                Document(id="true", content="Doc true", meta={"flag": True, "tags": ["a", "b"], "score": 0.5}),
                Document(id="false", content="Doc false", meta={"flag": False, "tags": ["c"], "date": "2024-03-01"}),
                Document(id="one", content="Doc one", meta={"flag": 1, "tags": ["b"], "date": "2023-03-01"}),
            ]
        )
        yield store
        store.close()

    @pytest.mark.parametrize(
        ("filters", "expected"),
        [
            ({"field": "meta.flag", "operator": "==", "value": True}, ["true"]),
            ({"field": "meta.flag", "operator": "==", "value": False}, ["false"]),
            ({"field": "meta.flag", "operator": "==", "value": 1}, ["one"]),
            ({"field": "meta.tags", "operator": "==", "value": "b"}, ["one", "true"]),
            ({"field": "meta.tags", "operator": "in", "value": ["c", "z"]}, ["false"]),
            ({"field": "meta.score", "operator": "==", "value": 0.5}, ["true"]),
            ({"field": "meta.flag", "operator": "in", "value": [1, "x", False]}, ["false", "one"]),
            ({"field": "id", "operator": "==", "value": "one"}, ["one"]),
            ({"field": "id", "operator": "in", "value": ["one", "false"]}, ["false", "one"]),
            ({"field": "id", "operator": "!=", "value": "one"}, ["false", "true"]),
            ({"field": "content", "operator": "==", "value": "Doc one"}, ["one"]),
            ({"field": "meta.date", "operator": ">=", "value": "2024-01-01"}, ["false"]),
            ({"field": "meta.flag", "operator": "in", "value": []}, []),
            ({"field": "meta.tags", "operator": "in", "value": Values(["c", "z"])}, ["false"]),
            (
                {"operator": "NOT", "conditions": [{"field": "meta.tags", "operator": "in", "value": Values(("b",))}]},
                ["false"],
            ),
            ({"operator": "OR", "conditions": []}, []),
            (
                {"operator": "NOT", "conditions": [{"field": "meta.flag", "operator": "==", "value": True}]},
                ["false", "one"],
            ),
        ],
    )
    def test_filters_follow_haystack_semantics(self, filter_store, filters, expected):
        assert sorted(doc.id for doc in filter_store.filter_documents(filters)) == expected

    @pytest.mark.parametrize(
        "filters",
        [
            {"field": "name", "operator": "==", "value": "x"},
            {"field": "embedding", "operator": "==", "value": "x"},
            {"field": "meta.x", "operator": "~=", "value": "x"},
            {"field": "meta.x", "operator": "==", "value": {"a": 1}},
            {"field": "meta.x", "operator": ">", "value": "yesterday"},
            {"field": "meta.x", "operator": ">", "value": True},
            {"field": "id", "operator": "==", "value": 3},
            {"operator": "XOR", "conditions": []},
            "meta.x == 1",
        ],
    )
    def test_unsupported_filters_raise_filter_error(self, filter_store, filters):
        with pytest.raises(FilterError):
            filter_store.filter_documents(filters)


class TestEdgeFilter:
    def test_no_filters_is_no_condition(self):
        assert edge_filter(None) is None
        assert edge_filter({}) is None

    @pytest.mark.parametrize(
        ("filters", "message"),
        [
            ({"field": "meta.x", "operator": "=="}, "'value' key missing"),
            ({"operator": "AND"}, "'conditions' key missing"),
            ({"conditions": []}, "'operator' key missing"),
            ({"field": "meta.x", "operator": "in", "value": "x"}, "needs a list value"),
            ({"field": "name", "operator": "==", "value": "x"}, "'id', 'content' or 'meta.<field>'"),
        ],
    )
    def test_malformed_filters_say_what_is_wrong(self, filters, message):
        with pytest.raises(FilterError, match=message):
            edge_filter(filters)


class TestFilterValues:
    def test_a_long_value_list_copies_as_itself_and_reads_as_a_list(self):
        import copy

        values = Values(f"n:{i}.md" for i in range(1000))
        filters = {"field": "meta.source_doc_id", "operator": "in", "value": values}
        assert copy.deepcopy(filters)["value"] is values
        assert values == [f"n:{i}.md" for i in range(1000)] and [f"n:{i}.md" for i in range(1000)] == values
        assert plain_filters({"operator": "AND", "conditions": [filters]})["conditions"][0]["value"] == list(values)
        assert type(plain_filters(filters)["value"]) is list
