"""States that guide: a mistyped command, a folder already in a collection, a search before anything is indexed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from needle.core.collections import Collection
from needle.lifecycle.readiness import unready_hints
from needle.shells.cli import main


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    """`needle ...` in-process on a fresh data folder; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("NEEDLE_DATA_DIR", str(tmp_path / "data"))

    def run(*args: str) -> tuple[int, str, str]:
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse refusing the arguments
            code = exit_.code
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


class TestMistypedCommand:
    @pytest.mark.parametrize(
        "args, suggestion",
        [
            (["serch", "x"], "did you mean 'search'?"),
            (["colection", "list"], "did you mean 'collection'?"),
            (["collection", "lst"], "did you mean 'list'?"),
            (["query", "x", "--format", "jsn"], "did you mean 'json'?"),
        ],
    )
    def test_the_closest_command_or_choice_is_suggested(self, shell, args, suggestion):
        code, out, err = shell(*args)
        assert code == 2 and out == ""
        assert suggestion in err and "Traceback" not in err

    def test_nothing_close_gets_the_plain_list(self, shell):
        code, _, err = shell("zzzz")
        assert code == 2 and "did you mean" not in err and "invalid choice: 'zzzz'" in err


class TestFolderAlreadyInACollection:
    def test_refused_with_the_collection_name_then_allowed_with_the_flag(self, shell, tmp_path):
        (tmp_path / "notes" / "work").mkdir(parents=True)
        assert shell("collection", "add", str(tmp_path / "notes"), "--name", "notes")[0] == 0
        code, out, err = shell("collection", "add", str(tmp_path / "notes" / "work"), "--name", "work")
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "collection 'notes'" in err and "--allow-overlap" in err
        assert shell("collection", "list")[1].count("\n") == 1
        code, out, _ = shell("collection", "add", str(tmp_path / "notes" / "work"), "--name", "work", "--allow-overlap")
        assert code == 0 and "collection 'work'" in out


class TestUnreadyHints:
    def test_never_indexed_and_empty_collections_name_the_command(self):
        collections = [
            Collection("notes", "/n"),
            Collection("papers", "/p"),
            Collection("empty", "/e"),
            Collection("full", "/f"),
        ]
        hints = unready_hints(collections, {"full": 12}, lambda name: name in {"empty", "full"})
        assert hints[0] == "collections 'notes', 'papers' are not indexed yet: run `needle index`"
        assert hints[1].startswith("collection 'empty' has no indexed files") and "/e" in hints[1]
        assert hints[1].endswith("then run `needle index empty`") and len(hints) == 2

    def test_every_collection_holding_chunks_gives_no_hint(self):
        assert unready_hints([Collection("full", "/f")], {"full": 3}, lambda name: True) == []


@pytest.mark.integration
class TestSearchBeforeIndexing:
    """Keyword search (no dense model) on a fresh data folder: a hint, exit 0, JSON still the answer schema."""

    @pytest.fixture
    def folders(self, shell, tmp_path, model_dir, monkeypatch):
        monkeypatch.setenv("NEEDLE_MODEL_DIR", str(model_dir))
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "kettle.md").write_text("# Kettle\n\nDescale the kettle with citric acid.\n")
        (tmp_path / "empty").mkdir()
        assert shell("collection", "add", str(tmp_path / "notes"), "--name", "notes")[0] == 0
        return tmp_path

    def test_before_needle_index_the_search_says_to_run_it(self, shell, folders):
        code, out, _ = shell("search", "descale kettle")
        assert code == 0 and "collection 'notes' is not indexed yet: run `needle index`" in out
        code, out, _ = shell("search", "descale kettle", "--json")
        answer = json.loads(out)
        assert code == 0 and answer["label"] == "NO_RESULTS" and answer["results"] == []
        assert answer["warnings"] == ["collection 'notes' is not indexed yet: run `needle index`"]

    def test_an_empty_collection_says_what_it_matched_and_what_to_run(self, shell, folders):
        assert shell("collection", "add", str(folders / "empty"), "--name", "empty")[0] == 0
        assert shell("index")[0] == 0
        code, out, _ = shell("search", "descale kettle", "--json")
        assert code == 0 and json.loads(out)["warnings"] == [] and json.loads(out)["results"]
        code, out, _ = shell("search", "descale kettle", "-c", "empty")
        assert code == 0 and "collection 'empty' has no indexed files" in out and "`needle index empty`" in out
        assert "not indexed yet" not in out
