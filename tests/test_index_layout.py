"""Index settings: injected into both stores, recorded as the index's layout, applied by `needle optimize`."""

import re

import pytest

from needle.core.requests import IndexRequest, SearchRequest
from needle.core.settings import load_settings
from needle.facade.api import Needle
from needle.lifecycle import provenance as index_info
from needle.runtime.environment import Environment


def settings_with(tmp_path, **env):
    return load_settings(env={"NEEDLE_DATA_DIR": str(tmp_path / "data"), **env})


def definition(settings, role):
    from haystack_integrations.document_stores.needle.needle_document_store import NeedleDocumentStore
    from needle.core.settings import using_settings

    with using_settings(settings):
        return NeedleDocumentStore(role=role).definition()


class TestStoreLayout:
    def test_the_embedded_store_gets_the_index_settings(self, tmp_path):
        settings = settings_with(tmp_path, NEEDLE_INDEX__QUANTIZATION="binary", NEEDLE_INDEX__HNSW_M="32")
        params = definition(settings, "chunks")["init_parameters"]
        assert (params["quantization"], params["hnsw_m"], params["vectors_on_disk"]) == ("binary", 32, True)
        assert params["hnsw_ef"] == 200 and params["max_segment_size_kb"] == 131072
        store = Environment(settings).store("files")
        assert (store.quantization, store.quantization_oversampling) == ("binary", 3.0)

    def test_a_server_collection_gets_the_same_layout(self, tmp_path):
        settings = settings_with(tmp_path, NEEDLE_STORE__URL="http://qdrant:6333", NEEDLE_INDEX__HNSW_EF="null")
        params = definition(settings, "chunks")["init_parameters"]
        assert params["quantization_config"] == {"scalar": {"type": "int8", "quantile": 0.99, "always_ram": True}}
        assert params["on_disk"] is True and params["optimizers_config"] == {"max_segment_size": 131072}
        assert params["search_params"] == {"quantization": {"rescore": True, "oversampling": 3.0}}

    def test_a_bad_setting_names_its_key(self, tmp_path):
        from needle.core.settings import ConfigError

        with pytest.raises(ConfigError, match=re.escape("index.quantization")):
            settings_with(tmp_path, NEEDLE_INDEX__QUANTIZATION="int4")


class TestProvenance:
    def test_an_index_from_before_layouts_has_the_legacy_layout(self, tmp_path):
        settings = settings_with(tmp_path)
        index_info._write(settings, {"fingerprint": {}})
        pending = index_info.pending_layout(settings)
        assert pending["quantization"] == {"index": "none", "config": "int8"}
        assert pending["vectors_on_disk"] == {"index": False, "config": True}
        assert "hnsw_ef" not in pending  # search-time settings apply at once

    def test_a_run_that_optimised_nothing_keeps_the_recorded_layout(self, tmp_path):
        settings = settings_with(tmp_path)
        ingest = {"components": {}}
        index_info.record(settings, ingest)
        assert index_info.pending_layout(settings) == {}
        other = settings_with(tmp_path, NEEDLE_INDEX__QUANTIZATION="none")
        index_info.record(other, ingest, optimized=False)
        assert index_info.pending_layout(other) == {"quantization": {"index": "int8", "config": "none"}}
        index_info.record(other, ingest, optimized=True)
        assert index_info.pending_layout(other) == {}

    def test_languages_recorded_replace_a_collections_and_keep_the_others(self, tmp_path):
        settings = settings_with(tmp_path)
        index_info.record(
            settings, {"components": {}}, languages={"notes": {"english": 40, "italian": 1}, "wiki": {"chinese": 3}}
        )
        index_info.record(settings, {"components": {}}, languages={"notes": {"english": 41}})
        index_info.record(settings, {"components": {}})
        assert index_info.read(settings)["languages"] == {"notes": {"english": 41}, "wiki": {"chinese": 3}}
        assert not index_info.languages_uncounted(settings)

    def test_languages_recorded_by_name_only_count_once_each_until_counted(self, tmp_path):
        settings = settings_with(tmp_path)
        index_info.record(settings, {"components": {}})
        info = index_info.read(settings)
        index_info._write(
            settings, {**info, "languages": {"notes": ["english", "italian"]}}
        )  # an index built before counts
        assert index_info.languages(settings) == {"notes": {"english": 1, "italian": 1}}
        assert index_info.languages_uncounted(settings)


@pytest.mark.integration
class TestOptimize:
    def test_optimize_lays_an_index_out_as_configured_without_embedding(self, tmp_path, model_dir):
        notes = tmp_path / "notes"
        notes.mkdir()
        for i in range(3):
            (notes / f"n{i}.md").write_text(f"# Note {i}\n\nRestic backs up laptop number {i} every night.\n")
        env = {"NEEDLE_DATA_DIR": str(tmp_path / "data"), "NEEDLE_MODEL_DIR": str(model_dir)}
        first = Needle(load_settings(env={**env, "NEEDLE_INDEX__QUANTIZATION": "none"}))
        first.collections.add(notes, "notes")
        first.index(IndexRequest())
        before = [hit.path for hit in first.search(SearchRequest(query="laptop backups"), pipeline="query").results]
        first.close()

        needle = Needle(load_settings(env=env))
        assert needle.status().layout_pending == {"quantization": {"index": "none", "config": "int8"}}
        report = needle.optimize()
        assert report.applied == {"quantization": {"index": "none", "config": "int8"}}
        assert needle.status().layout_pending == {}
        assert needle.status().index_layout["quantization"] == "int8"
        assert sorted(
            hit.path for hit in needle.search(SearchRequest(query="laptop backups"), pipeline="query").results
        ) == sorted(before)
        needle.close()
