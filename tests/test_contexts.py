import pytest

from needle.core.contexts import ContextError, ContextRegistry


class TestContextRegistry:
    def test_nested_prefixes_combine_outermost_first(self, tmp_path):
        contexts = ContextRegistry(tmp_path / "contexts.yml")
        contexts.add("notes", "my personal notes")
        contexts.add("/notes/runbooks/", "on-call runbooks   for the kestrel services")
        contexts.add("notes/runbooks/k8s", "kubernetes only")
        assert contexts.load() == {
            "notes": "my personal notes",
            "notes/runbooks": "on-call runbooks for the kestrel services",
            "notes/runbooks/k8s": "kubernetes only",
        }
        assert contexts.describe("notes", "runbooks/k8s/oom.md") == (
            "my personal notes › on-call runbooks for the kestrel services › kubernetes only"
        )
        assert contexts.describe("notes", "runbooksold/x.md") == "my personal notes"
        assert contexts.describe("work", "runbooks/x.md") is None

    def test_remove_and_errors(self, tmp_path):
        contexts = ContextRegistry(tmp_path / "contexts.yml")
        contexts.add("notes", "a")
        contexts.remove("notes/")
        assert contexts.load() == {}
        with pytest.raises(ContextError, match="no context for 'notes'"):
            contexts.remove("notes")
        for prefix in ("", "/", "notes/../x"):
            with pytest.raises(ContextError, match="collection or a collection/folder"):
                contexts.add(prefix, "x")
        with pytest.raises(ContextError, match="1 to 500 characters"):
            contexts.add("notes", " ")

    def test_malformed_file_is_named(self, tmp_path):
        path = tmp_path / "contexts.yml"
        path.write_text("contexts: [a, b]\n")
        with pytest.raises(ContextError, match="malformed"):
            ContextRegistry(path).load()
