import hashlib
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from haystack_integrations.components.converters.needle.markdown_file_reader import MarkdownFileReader
from needle.core import file_formats as formats


def source(root: Path, path: str, collection: str = "notes") -> dict:
    return {"collection": collection, "root": str(root), "path": path}


def read_one(root: Path, path: str, **init) -> dict:
    return MarkdownFileReader(**init).run(sources=[source(root, path)])


def only_reason(result: dict) -> str:
    assert result["documents"] == []
    assert len(result["skipped"]) == 1
    return result["skipped"][0]["reason"]


class TestMarkdownFileReader:
    def test_init_defaults(self):
        assert MarkdownFileReader().max_file_bytes == 5_000_000

    def test_init_custom(self):
        assert MarkdownFileReader(max_file_bytes=10).max_file_bytes == 10

    @pytest.mark.parametrize("bad", [0, -5, "100", None, True])
    def test_bad_max_file_bytes_raises(self, bad):
        with pytest.raises(ValueError, match="max_file_bytes"):
            MarkdownFileReader(max_file_bytes=bad)

    def test_to_dict(self):
        assert MarkdownFileReader(max_file_bytes=1234).to_dict() == {
            "type": "haystack_integrations.components.converters.needle.markdown_file_reader.MarkdownFileReader",
            "init_parameters": {"max_file_bytes": 1234},
        }

    def test_from_dict(self):
        reader = MarkdownFileReader.from_dict(MarkdownFileReader(max_file_bytes=1234).to_dict())
        assert reader.max_file_bytes == 1234

    def test_reads_a_note_with_meta_and_stable_id(self, tmp_path):
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "a.md").write_bytes(b"# Title\n\nBody text.\n")
        result = read_one(tmp_path, "sub/a.md")
        assert result["skipped"] == [] and result["warnings"] == []
        doc = result["documents"][0]
        assert doc.content == "# Title\n\nBody text.\n"
        assert doc.id == hashlib.sha256(b"notes:sub/a.md").hexdigest()
        assert doc.meta == {
            "collection": "notes",
            "path": "sub/a.md",
            "content_hash": hashlib.sha256(doc.content.encode()).hexdigest(),
            "size_bytes": 20,
            "mtime": os.stat(tmp_path / "sub" / "a.md").st_mtime,
        }

    def test_bom_is_stripped_and_line_endings_normalised(self, tmp_path):
        (tmp_path / "a.md").write_bytes(b"\xef\xbb\xbf# T\r\n\r\nline two\rline three\r\n")
        doc = read_one(tmp_path, "a.md")["documents"][0]
        assert doc.content == "# T\n\nline two\nline three\n"
        assert doc.meta["content_hash"] == hashlib.sha256(doc.content.encode()).hexdigest()

    def test_invalid_utf8_text_is_kept_with_a_warning(self, tmp_path):
        (tmp_path / "latin.md").write_bytes("Un café près du lac.\n".encode("latin-1"))
        result = read_one(tmp_path, "latin.md")
        doc = result["documents"][0]
        assert doc.content == "Un caf\ufffd pr\ufffds du lac.\n"
        assert doc.meta["decode_warning"] == "invalid UTF-8 replaced"
        assert result["skipped"] == []
        assert result["warnings"] == [{"collection": "notes", "path": "latin.md", "reason": "invalid UTF-8 replaced"}]

    def test_file_with_nul_bytes_is_skipped_as_binary(self, tmp_path):
        (tmp_path / "a.md").write_bytes(b"PK\x03\x04\x00\x00text")
        assert only_reason(read_one(tmp_path, "a.md")).startswith("binary file")

    def test_utf16_file_is_skipped_as_binary(self, tmp_path):
        (tmp_path / "a.txt").write_bytes("hello world".encode("utf-16"))
        assert only_reason(read_one(tmp_path, "a.txt")).startswith("binary file")

    def test_file_full_of_control_characters_is_skipped_as_binary(self, tmp_path):
        (tmp_path / "a.md").write_bytes(bytes([1, 2, 3, 65, 66, 5, 6, 7, 8, 14, 15]) * 50)
        assert "control characters" in only_reason(read_one(tmp_path, "a.md"))

    def test_random_high_bytes_are_skipped_as_binary(self, tmp_path):
        (tmp_path / "a.md").write_bytes(bytes(range(128, 256)) * 20)
        assert only_reason(read_one(tmp_path, "a.md")).startswith("binary file")

    def test_empty_file_is_skipped(self, tmp_path):
        (tmp_path / "a.md").write_bytes(b"")
        assert only_reason(read_one(tmp_path, "a.md")) == "empty file"

    def test_whitespace_only_file_is_skipped(self, tmp_path):
        (tmp_path / "a.md").write_bytes(b" \n\t\r\n  \n")
        assert "only whitespace" in only_reason(read_one(tmp_path, "a.md"))

    def test_file_over_the_limit_is_skipped_with_size_and_limit(self, tmp_path):
        with open(tmp_path / "big.md", "wb") as handle:
            handle.truncate(6_000_000)
        reason = only_reason(read_one(tmp_path, "big.md"))
        assert "6000000" in reason and "5000000" in reason

    def test_file_at_the_limit_is_read(self, tmp_path):
        (tmp_path / "a.md").write_bytes(b"x" * 100)
        assert read_one(tmp_path, "a.md", max_file_bytes=100)["documents"][0].content == "x" * 100
        assert only_reason(read_one(tmp_path, "a.md", max_file_bytes=99)).startswith("file too large: 100 bytes")

    def test_file_that_grew_past_the_limit_after_stat_is_skipped(self, tmp_path, monkeypatch):
        (tmp_path / "a.md").write_bytes(b"x" * 200)
        real_fstat = os.fstat

        class SmallStat:
            def __init__(self, info):
                self._info = info
                self.st_size = 10

            def __getattr__(self, name):
                return getattr(self._info, name)

        monkeypatch.setattr(os, "fstat", lambda fd: SmallStat(real_fstat(fd)))
        reason = only_reason(read_one(tmp_path, "a.md", max_file_bytes=100))
        assert reason.startswith("file too large") and "100" in reason

    def test_vanished_file_is_skipped(self, tmp_path):
        assert only_reason(read_one(tmp_path, "gone.md")) == "the file no longer exists"

    def test_folder_is_skipped(self, tmp_path):
        (tmp_path / "dir.md").mkdir()
        assert only_reason(read_one(tmp_path, "dir.md")) == "the path is a folder, not a file"

    @pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
    def test_named_pipe_is_skipped_without_blocking(self, tmp_path):
        os.mkfifo(tmp_path / "pipe.md")
        assert only_reason(read_one(tmp_path, "pipe.md")) == "not a regular file"

    def test_path_leaving_the_root_is_skipped(self, tmp_path):
        (tmp_path / "outside.md").write_text("secret")
        (tmp_path / "root").mkdir()
        assert "outside the collection root" in only_reason(read_one(tmp_path / "root", "../outside.md"))

    def test_permission_denied_is_skipped(self, tmp_path, monkeypatch):
        (tmp_path / "a.md").write_text("text")
        real_open = open

        def deny(path, *args, **kwargs):
            if os.fspath(path).endswith("a.md"):
                raise PermissionError(13, "Permission denied")
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr("builtins.open", deny)
        assert only_reason(read_one(tmp_path, "a.md")) == "permission denied"

    def test_read_error_after_opening_is_skipped(self, tmp_path, monkeypatch):
        (tmp_path / "a.md").write_text("text")

        def failing_check(mode):
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(formats, "stat", SimpleNamespace(S_ISDIR=failing_check))
        assert only_reason(read_one(tmp_path, "a.md")) == "the file cannot be read: Input/output error"

    def test_permission_denied_on_disk(self, tmp_path):
        (tmp_path / "a.md").write_text("text")
        (tmp_path / "a.md").chmod(0)
        try:
            result = read_one(tmp_path, "a.md")
        finally:
            (tmp_path / "a.md").chmod(0o644)
        if os.geteuid() == 0 and result["documents"]:
            pytest.skip("running as root: chmod 000 does not block reading")
        assert only_reason(result) == "permission denied"

    def test_bad_file_does_not_stop_the_others(self, tmp_path):
        (tmp_path / "a.md").write_text("alpha")
        (tmp_path / "c.md").write_text("gamma")
        result = MarkdownFileReader().run(sources=[source(tmp_path, p) for p in ["a.md", "b.md", "c.md"]])
        assert [d.content for d in result["documents"]] == ["alpha", "gamma"]
        assert [s["path"] for s in result["skipped"]] == ["b.md"]

    @pytest.mark.parametrize("bad", [{"collection": "n", "path": "a.md"}, {"root": "/x", "path": "a.md"}, "a.md"])
    def test_malformed_source_raises(self, bad):
        with pytest.raises(ValueError, match="collection"):
            MarkdownFileReader().run(sources=[bad])

    def test_input_sources_are_not_mutated(self, tmp_path):
        (tmp_path / "a.md").write_text("alpha")
        sources = [source(tmp_path, "a.md")]
        MarkdownFileReader().run(sources=sources)
        assert sources == [source(tmp_path, "a.md")]
