import json

from needle.evaluation.beir import index_is_built


def test_a_cached_index_counts_as_built_only_with_whole_files(tmp_path):
    marker = tmp_path / ".indexed"
    assert not index_is_built(marker)
    marker.write_text(json.dumps({"chunks": 12, "chunks_embedded": 12}))  # built before whole files were embedded
    assert not index_is_built(marker)
    marker.write_text(json.dumps({"chunks": 12, "chunks_embedded": 12, "files_embedded": 3}))
    assert index_is_built(marker)
