"""One way to rewrite a file at once (`needle.core.atomic.write_atomic`), and every rewrite of Needle's files goes through it."""

import ast
import os
import stat
from pathlib import Path

import pytest

from needle.core.atomic import write_atomic

REPO = Path(__file__).resolve().parent.parent


class TestWriteAtomic:
    def test_the_file_holds_the_new_text(self, tmp_path):
        path = tmp_path / "collections.yml"
        path.write_text("old\n", encoding="utf-8")
        write_atomic(path, "new › text\n")
        assert path.read_text(encoding="utf-8") == "new › text\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["collections.yml"]

    def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(self, tmp_path):
        path = tmp_path / "contexts.yml"
        path.write_text("old\n", encoding="utf-8")
        with pytest.raises(UnicodeEncodeError):
            write_atomic(path, "half \udc80 written")  # a lone surrogate fails mid-write
        assert path.read_text(encoding="utf-8") == "old\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["contexts.yml"]

    def test_the_new_file_is_private_unless_told_otherwise(self, tmp_path):
        write_atomic(tmp_path / "owner.json", "{}")
        write_atomic(tmp_path / "shared.json", "{}", mode=0o644)
        assert stat.S_IMODE((tmp_path / "owner.json").stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "shared.json").stat().st_mode) == 0o644

    def test_a_missing_folder_is_an_os_error(self, tmp_path):
        with pytest.raises(FileNotFoundError):
            write_atomic(tmp_path / "gone" / "index-info.json", "{}")

    def test_a_string_path_works_too(self, tmp_path):
        write_atomic(str(tmp_path / "seal"), "[]")
        assert (tmp_path / "seal").read_text(encoding="utf-8") == "[]"


def _renames(path: Path) -> list[str]:
    """The calls in a module that rename a temporary file onto another (`os.replace`, `tempfile.mkstemp`...)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            call = f"{node.func.value.id}.{node.func.attr}"
            if call in ("os.replace", "tempfile.mkstemp", "tempfile.NamedTemporaryFile"):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {call}")
    return found


def test_needles_files_are_rewritten_by_the_one_helper_only():
    modules = [
        p for package in ("needle", "components", "document_stores", "server") for p in (REPO / package).rglob("*.py")
    ]
    found = [call for path in modules if path != REPO / "needle" / "core" / "atomic.py" for call in _renames(path)]
    assert found == []


def test_the_seal_ignores_its_own_temporary_file(tmp_path):
    from haystack_integrations.document_stores.needle.edge.seal import is_sealed, seal

    (tmp_path / "segment").write_bytes(b"x")
    seal(str(tmp_path))
    (tmp_path / ".needle_sealed.abc123.tmp").write_text("[]")  # what a process killed mid-seal leaves
    assert is_sealed(str(tmp_path))
    assert os.path.exists(tmp_path / ".needle_sealed")
