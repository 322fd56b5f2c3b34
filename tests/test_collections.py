from pathlib import Path

import pytest

from needle.core.collections import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, CollectionError, CollectionRegistry


class TestCollectionRegistry:
    def test_add_list_remove(self, tmp_path: Path):
        notes = tmp_path / "notes"
        notes.mkdir()
        registry = CollectionRegistry(tmp_path / "data" / "collections.yml")
        added = registry.add(notes, "notes")
        assert added.root == str(notes.resolve())
        assert added.include == DEFAULT_INCLUDE and added.exclude == DEFAULT_EXCLUDE
        assert list(registry.load()) == ["notes"]
        assert registry.remove("notes").name == "notes"
        assert registry.load() == {}

    def test_mask_replaces_default_include(self, tmp_path: Path):
        registry = CollectionRegistry(tmp_path / "c.yml")
        assert registry.add(tmp_path, "n", include=["**/*.txt"]).include == ["**/*.txt"]

    @pytest.mark.parametrize("name", ["", "a b", "../x", "-x", "x" * 65, "a/b"])
    def test_bad_names_are_refused(self, tmp_path: Path, name: str):
        with pytest.raises(CollectionError, match="invalid collection name"):
            CollectionRegistry(tmp_path / "c.yml").add(tmp_path, name)

    def test_missing_folder_and_reused_name_are_refused(self, tmp_path: Path):
        registry = CollectionRegistry(tmp_path / "c.yml")
        with pytest.raises(CollectionError, match="not a folder"):
            registry.add(tmp_path / "nope", "n")
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        registry.add(tmp_path / "a", "n")
        with pytest.raises(CollectionError, match="already points"):
            registry.add(tmp_path / "b", "n")

    def test_select_unknown_and_empty(self, tmp_path: Path):
        registry = CollectionRegistry(tmp_path / "c.yml")
        with pytest.raises(CollectionError, match="no collections yet"):
            registry.select(None)
        registry.add(tmp_path, "n")
        with pytest.raises(CollectionError, match="unknown collection"):
            registry.select(["other"])
        assert [c.name for c in registry.select([])] == ["n"]

    def test_malformed_file_is_a_clear_error(self, tmp_path: Path):
        path = tmp_path / "c.yml"
        path.write_text("collections:\n  - {root: /x}\n")
        with pytest.raises(CollectionError, match="malformed"):
            CollectionRegistry(path).load()

    def test_a_change_by_another_registry_is_seen_and_loads_do_not_share_objects(self, tmp_path: Path):
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        reader = CollectionRegistry(tmp_path / "c.yml")
        writer = CollectionRegistry(tmp_path / "c.yml")
        writer.add(tmp_path / "a", "a")
        assert list(reader.load()) == ["a"]
        writer.add(tmp_path / "b", "b")  # e.g. `needle collection add` in another process
        assert list(reader.load()) == ["a", "b"]
        first = reader.load()
        first["a"].include.append("**/*.rst")
        assert reader.load()["a"].include == DEFAULT_INCLUDE
        writer.remove("a")
        assert list(reader.load()) == ["b"]


class TestOverlappingFolders:
    """A folder another collection covers would index, and find, every common note twice."""

    @pytest.fixture
    def registry(self, tmp_path: Path) -> CollectionRegistry:
        (tmp_path / "notes" / "work").mkdir(parents=True)
        registry = CollectionRegistry(tmp_path / "data" / "collections.yml")
        registry.add(tmp_path / "notes", "notes")
        return registry

    @pytest.mark.parametrize("folder, how", [("notes", "is already"), ("notes/work", "is inside"), (".", "contains")])
    def test_a_covered_folder_is_refused_naming_the_collection(self, registry, tmp_path, folder, how):
        with pytest.raises(CollectionError, match=f"{how} collection 'notes'.*--allow-overlap"):
            registry.add(tmp_path / folder, "other")
        assert list(registry.load()) == ["notes"]

    def test_the_same_folder_through_a_symlink_is_refused(self, registry, tmp_path):
        (tmp_path / "link").symlink_to(tmp_path / "notes", target_is_directory=True)
        with pytest.raises(CollectionError, match="collection 'notes'"):
            registry.add(tmp_path / "link", "other")

    def test_allow_overlap_adds_it_deliberately(self, registry, tmp_path):
        registry.add(tmp_path / "notes" / "work", "work", allow_overlap=True)
        assert list(registry.load()) == ["notes", "work"]

    def test_the_same_collection_again_and_a_sibling_folder_are_accepted(self, registry, tmp_path):
        registry.add(tmp_path / "notes", "notes", include=["**/*.txt"])
        (tmp_path / "notes-archive").mkdir()
        registry.add(tmp_path / "notes-archive", "archive")
        assert registry.load()["notes"].include == ["**/*.txt"] and "archive" in registry.load()
