import os
import time
from pathlib import Path

import pytest

from haystack_integrations.components.fetchers.needle.collection_scanner import CollectionScanner
from needle.core.globs import Glob

# Seconds a pathological pattern may take: linear matching needs milliseconds, a backtracking one minutes,
# so the bound holds on a loaded shared machine and still catches the regression.
PATHOLOGICAL_BUDGET_SECONDS = 20.0


def make_files(root: Path, *paths: str) -> None:
    for path in paths:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# {path}\n", encoding="utf-8")


def scan(root: Path, **collection) -> dict:
    return CollectionScanner().run(collections=[{"name": "notes", "root": str(root), **collection}])


def paths(result: dict) -> list[str]:
    return [s["path"] for s in result["sources"]]


def reasons(result: dict) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in result["skipped"]}


class TestIncludeGlobs:
    @pytest.mark.parametrize(
        "pattern, path, expected",
        [
            ("**/*.md", "a.md", True),
            ("**/*.md", "a/b/c.md", True),
            ("**/*.md", "a.mdx", False),
            ("*.md", "a.md", True),
            ("*.md", "a/b.md", False),
            ("a/**", "a/b/c.md", True),
            ("a/**/x.md", "a/x.md", True),
            ("?.md", "ab.md", False),
            ("[!a]*.md", "b.md", True),
            ("[!a]*.md", "a.md", False),
            ("notes (old)/*.md", "notes (old)/a.md", True),
        ],
    )
    def test_matches_relative_posix_paths(self, pattern, path, expected):
        assert Glob(pattern).matches(path) is expected


class TestCollectionScanner:
    def test_init_defaults(self):
        assert CollectionScanner().max_files == 100_000

    def test_init_custom(self):
        assert CollectionScanner(max_files=5).max_files == 5

    @pytest.mark.parametrize("bad", [0, -1, "10", True, 1.5])
    def test_bad_max_files_raises(self, bad):
        with pytest.raises(ValueError, match="max_files"):
            CollectionScanner(max_files=bad)

    def test_to_dict(self):
        assert CollectionScanner(max_files=7, batch_files=3, records_path="/r/files.sqlite").to_dict() == {
            "type": "haystack_integrations.components.fetchers.needle.collection_scanner.CollectionScanner",
            "init_parameters": {"max_files": 7, "batch_files": 3, "records_path": "/r/files.sqlite"},
        }

    def test_from_dict(self):
        scanner = CollectionScanner.from_dict(
            CollectionScanner(max_files=7, batch_files=3, records_path=None).to_dict()
        )
        assert (scanner.max_files, scanner.batch_files, scanner.records_path) == (7, 3, None)
        default = CollectionScanner(max_files=7).to_dict()["init_parameters"]
        assert "records_path" not in default  # the index's record, from Needle's settings, again

    @pytest.mark.parametrize("bad", [0, -2, True, "10"])
    def test_bad_batch_files_raises(self, bad):
        with pytest.raises(ValueError, match="batch_files"):
            CollectionScanner(batch_files=bad)

    def test_lists_default_note_types_sorted_with_absolute_root(self, tmp_path):
        make_files(tmp_path, "b.md", "a.markdown", "sub/c.txt", "sub/deeper/d.md", "image.png", "e.mdx")
        result = scan(tmp_path)
        assert result["sources"] == [
            {"collection": "notes", "root": str(tmp_path), "path": p}
            for p in ["a.markdown", "b.md", "sub/c.txt", "sub/deeper/d.md"]
        ]
        assert result["skipped"] == []

    def test_root_is_made_absolute(self, tmp_path, monkeypatch):
        make_files(tmp_path, "vault/a.md")
        monkeypatch.chdir(tmp_path)
        result = CollectionScanner().run(collections=[{"name": "n", "root": "vault"}])
        assert result["sources"][0]["root"] == str(tmp_path / "vault")

    def test_include_double_star_matches_top_level_files(self, tmp_path):
        make_files(tmp_path, "top.md", "a/nested.md")
        assert paths(scan(tmp_path, include=["**/*.md"])) == ["a/nested.md", "top.md"]

    def test_include_single_star_matches_top_level_only(self, tmp_path):
        make_files(tmp_path, "top.md", "a/nested.md")
        assert paths(scan(tmp_path, include=["*.md"])) == ["top.md"]

    def test_default_excludes_and_hidden_parts_are_left_out(self, tmp_path):
        make_files(
            tmp_path,
            "keep.md",
            ".obsidian/workspace.md",
            ".trash/old.md",
            "node_modules/pkg/readme.md",
            "deep/node_modules/x.md",
            ".git/info.md",
            ".hidden/secret.md",
            "sub/.private/x.md",
            ".dotfile.md",
            "sub/.also-hidden.md",
        )
        result = scan(tmp_path)
        assert paths(result) == ["keep.md"]
        assert result["skipped"] == []

    def test_hidden_parts_are_left_out_with_custom_excludes(self, tmp_path):
        make_files(tmp_path, "keep.md", "node_modules/x.md", ".hidden/x.md")
        assert paths(scan(tmp_path, exclude=[])) == ["keep.md", "node_modules/x.md"]

    def test_custom_excludes_folder_name_path_glob_and_file_name(self, tmp_path):
        make_files(
            tmp_path,
            "keep.md",
            "templates/t.md",
            "a/templates/t.md",
            "archive/2020/old.md",
            "archive.md",
            "x.draft.md",
            "sub/y.draft.md",
        )
        result = scan(tmp_path, exclude=["templates/", "archive/**", "*.draft.md"])
        assert paths(result) == ["archive.md", "keep.md"]

    def test_excluded_folder_path_with_slash_only_matches_from_root(self, tmp_path):
        make_files(tmp_path, "a/b/x.md", "c/a/b/y.md")
        assert paths(scan(tmp_path, exclude=["a/b/"])) == ["c/a/b/y.md"]

    def test_several_collections_are_sorted_by_collection_then_path(self, tmp_path):
        make_files(tmp_path, "one/b.md", "one/a.md", "two/c.md")
        result = CollectionScanner().run(
            collections=[
                {"name": "zeta", "root": str(tmp_path / "two")},
                {"name": "alpha", "root": str(tmp_path / "one")},
            ]
        )
        assert [(s["collection"], s["path"]) for s in result["sources"]] == [
            ("alpha", "a.md"),
            ("alpha", "b.md"),
            ("zeta", "c.md"),
        ]

    def test_missing_root_is_reported_not_raised(self, tmp_path):
        result = scan(tmp_path / "nope")
        assert result["sources"] == []
        assert result["skipped"] == [
            {"collection": "notes", "path": "", "reason": f"root folder does not exist: {tmp_path / 'nope'}"}
        ]

    def test_root_that_is_a_file_is_reported(self, tmp_path):
        make_files(tmp_path, "file.md")
        result = scan(tmp_path / "file.md")
        assert result["skipped"][0]["path"] == ""
        assert result["skipped"][0]["reason"].startswith("root folder does not exist:")

    def test_missing_root_does_not_stop_other_collections(self, tmp_path):
        make_files(tmp_path, "ok/a.md")
        result = CollectionScanner().run(
            collections=[{"name": "gone", "root": str(tmp_path / "gone")}, {"name": "ok", "root": str(tmp_path / "ok")}]
        )
        assert paths(result) == ["a.md"]
        assert [s["collection"] for s in result["skipped"]] == ["gone"]

    @pytest.mark.parametrize(
        "collection, message",
        [
            ({"root": "/tmp"}, "name"),
            ({"name": "", "root": "/tmp"}, "name"),
            ({"name": "n"}, "root"),
            ({"name": "n", "root": ""}, "root"),
            ({"name": "n", "root": "/tmp", "include": "**/*.md"}, "include"),
            ({"name": "n", "root": "/tmp", "include": []}, "include"),
            ({"name": "n", "root": "/tmp", "exclude": [3]}, "exclude"),
        ],
    )
    def test_malformed_collection_raises(self, collection, message):
        with pytest.raises(ValueError, match=message):
            CollectionScanner().run(collections=[collection])

    def test_collection_that_is_not_a_dict_raises(self):
        with pytest.raises(ValueError, match=r"collections\[0\] must be a dict"):
            CollectionScanner().run(collections=["~/notes"])

    def test_repeated_collection_name_raises(self, tmp_path):
        with pytest.raises(ValueError, match="unique"):
            CollectionScanner().run(collections=[{"name": "n", "root": str(tmp_path)}] * 2)

    def test_symlink_loop_is_reported_and_scan_finishes(self, tmp_path):
        make_files(tmp_path, "a/note.md")
        (tmp_path / "a" / "loop").symlink_to(tmp_path / "a", target_is_directory=True)
        (tmp_path / "a" / "up").symlink_to(tmp_path, target_is_directory=True)
        result = scan(tmp_path)
        assert paths(result) == ["a/note.md"]
        assert reasons(result)["a/loop"].startswith("symlink loop")
        assert reasons(result)["a/up"].startswith("symlink loop")

    def test_self_referencing_symlink_is_reported(self, tmp_path):
        make_files(tmp_path, "a.md")
        (tmp_path / "self.md").symlink_to(tmp_path / "self.md")
        assert reasons(scan(tmp_path))["self.md"].startswith("symlink loop")

    def test_symlinks_leading_outside_root_are_skipped(self, tmp_path):
        root, outside = tmp_path / "vault", tmp_path / "outside"
        make_files(root, "a.md")
        make_files(outside, "ext.md", "dir/inner.md")
        (root / "ext.md").symlink_to(outside / "ext.md")
        (root / "extdir").symlink_to(outside / "dir", target_is_directory=True)
        result = scan(root)
        assert paths(result) == ["a.md"]
        assert reasons(result) == {
            "ext.md": "symlink leads outside the collection root",
            "extdir": "symlink leads outside the collection root",
        }

    def test_broken_symlink_is_reported(self, tmp_path):
        make_files(tmp_path, "a.md")
        (tmp_path / "gone.md").symlink_to(tmp_path / "missing.md")
        result = scan(tmp_path)
        assert paths(result) == ["a.md"]
        assert reasons(result)["gone.md"].startswith("broken symlink")

    def test_symlink_to_a_note_already_in_the_collection_is_listed_once(self, tmp_path):
        make_files(tmp_path, "real/a.md")
        (tmp_path / "alias.md").symlink_to(tmp_path / "real" / "a.md")
        (tmp_path / "aliasdir").symlink_to(tmp_path / "real", target_is_directory=True)
        result = scan(tmp_path)
        assert paths(result) == ["real/a.md"]
        assert set(reasons(result)) == {"alias.md", "aliasdir"}

    def test_symlink_into_an_excluded_folder_is_followed(self, tmp_path):
        make_files(tmp_path, ".private/shared/x.md")
        (tmp_path / "shared").symlink_to(tmp_path / ".private" / "shared", target_is_directory=True)
        assert paths(scan(tmp_path)) == ["shared/x.md"]

    def test_unreadable_folder_is_reported(self, tmp_path, monkeypatch):
        make_files(tmp_path, "a.md", "locked/b.md")
        real_scandir = os.scandir

        def scandir(path):
            if os.fspath(path).endswith("locked"):
                raise PermissionError(13, "Permission denied")
            return real_scandir(path)

        monkeypatch.setattr(os, "scandir", scandir)
        result = scan(tmp_path)
        assert paths(result) == ["a.md"]
        assert reasons(result) == {"locked": "permission denied: the folder cannot be listed"}

    def test_unreadable_folder_on_disk_does_not_crash(self, tmp_path):
        make_files(tmp_path, "a.md", "locked/b.md")
        (tmp_path / "locked").chmod(0)
        try:
            result = scan(tmp_path)
        finally:
            (tmp_path / "locked").chmod(0o755)
        if "locked/b.md" in paths(result):
            pytest.skip("running as root: chmod 000 does not block listing")
        assert "locked" in reasons(result)

    def test_max_files_stops_the_scan_and_says_so(self, tmp_path):
        make_files(tmp_path, "a.md", "b.md", "c.md")
        result = CollectionScanner(max_files=2).run(collections=[{"name": "n", "root": str(tmp_path)}])
        assert paths(result) == ["a.md", "b.md"]
        assert result["skipped"][0]["path"] == ""
        assert "max_files=2" in result["skipped"][0]["reason"]

    def test_tilde_root_is_expanded(self, tmp_path, monkeypatch):
        make_files(tmp_path, "vault/a.md")
        monkeypatch.setenv("HOME", str(tmp_path))
        result = CollectionScanner().run(collections=[{"name": "n", "root": "~/vault"}])
        assert result["sources"] == [{"collection": "n", "root": str(tmp_path / "vault"), "path": "a.md"}]

    def test_a_name_that_is_not_utf8_is_skipped_with_a_reason(self, tmp_path):
        make_files(tmp_path, "a.md")
        os.close(os.open(os.fsencode(tmp_path) + b"/bad\xff.md", os.O_CREAT | os.O_WRONLY, 0o644))
        os.mkdir(os.fsencode(tmp_path) + b"/dir\xfe")
        result = scan(tmp_path)
        assert paths(result) == ["a.md"]
        assert reasons(result) == {
            "bad\\xff.md": "the file name is not valid UTF-8",
            "dir\\xfe": "the folder name is not valid UTF-8",
        }

    def test_a_pathological_glob_does_not_stall_the_scan(self, tmp_path):
        make_files(tmp_path, "a" * 200, "x/" * 40 + "y.md")
        start = time.perf_counter()
        result = scan(tmp_path, include=["*a*a*a*a*a*a*a*a*a*b", "**/**/**/**/**/**/**/**/**/**/x.md"])
        assert time.perf_counter() - start < PATHOLOGICAL_BUDGET_SECONDS  # milliseconds when linear, minutes when not
        assert paths(result) == []


def record_all(scanner: CollectionScanner, result: dict) -> None:
    """What the recorder does after the writers: every file of the batch recorded."""
    from needle.core.file_records import FileRecords, FileStat

    FileRecords(scanner.records_path).put(
        (*key.split(":", 1), FileStat(**stat), "sum") for key, stat in result["file_stats"].items()
    )


class TestBatches:
    def test_batches_follow_each_other_and_the_last_sees_every_file(self, tmp_path):
        make_files(tmp_path, "a.md", "b.md", "c.md", "d.md", "e.md")
        scanner = CollectionScanner(batch_files=2)
        collections = [{"name": "n", "root": str(tmp_path)}]
        seen, after, results = [], None, []
        while True:
            result = scanner.run(collections=collections, after=after)
            results.append(result)
            seen.append(paths(result))
            after = result["next"]
            if after is None:
                break
        assert seen == [["a.md", "b.md"], ["c.md", "d.md"], ["e.md"]]
        assert results[0]["scope"] == ["n:a.md", "n:b.md"] and [s["path"] for s in results[0]["present"]] == [
            "a.md",
            "b.md",
        ]
        assert results[-1]["scope"] is None and len(results[-1]["present"]) == 5
        assert set(results[0]["file_stats"]) == {"n:a.md", "n:b.md"}
        assert results[0]["file_stats"]["n:a.md"]["size"] == len("# a.md\n")


class TestStatRecord:
    def test_files_whose_stat_matches_the_record_are_not_handed_on(self, tmp_path):
        root = tmp_path / "notes"
        make_files(root, "a.md", "b.md", "c.md")
        scanner = CollectionScanner(records_path=str(tmp_path / "files.sqlite"))
        collections = [{"name": "n", "root": str(root)}]
        first = scanner.run(collections=collections)
        assert paths(first) == ["a.md", "b.md", "c.md"] and first["counts"]["files_skipped_by_stat"] == 0
        record_all(scanner, first)

        again = scanner.run(collections=collections)
        assert paths(again) == [] and again["counts"] == {
            "files_found": 3,
            "files_skipped_by_stat": 3,
            "files_pending": 0,
            "files_gone": 0,
        }
        assert again["scope"] is None and len(again["present"]) == 3  # the last batch still sees every file

        (root / "b.md").write_text("# b.md changed\n")
        later = time.time() + 5
        os.utime(root / "c.md", (later, later))  # touched: same text, new time
        assert paths(scanner.run(collections=collections)) == ["b.md", "c.md"]

    def test_once_the_record_knows_every_indexed_file_deleted_ones_are_found_by_it(self, tmp_path):
        from needle.core.file_records import FileRecords

        root = tmp_path / "notes"
        make_files(root, "a.md", "b.md")
        scanner = CollectionScanner(records_path=str(tmp_path / "files.sqlite"))
        collections = [{"name": "n", "root": str(root)}]
        first = scanner.run(collections=collections)
        assert first["listed"] == ["n"] and first["scope"] is None
        record_all(scanner, first)
        FileRecords(scanner.records_path).mark_listed(first["listed"])

        noop = scanner.run(collections=collections)
        assert (noop["sources"], noop["present"], noop["scope"], noop["listed"], noop["gone"]) == ([], [], [], [], [])
        (root / "b.md").unlink()
        after = scanner.run(collections=collections)
        assert after["gone"] == ["n:b.md"] and after["scope"] == ["n:b.md"] and after["present"] == []
        root.rename(tmp_path / "unmounted")
        assert scanner.run(collections=collections)["gone"] == []  # a missing root keeps its files

    def test_a_deleted_record_reads_everything_again(self, tmp_path):
        make_files(tmp_path / "notes", "a.md")
        scanner = CollectionScanner(records_path=str(tmp_path / "files.sqlite"))
        collections = [{"name": "n", "root": str(tmp_path / "notes")}]
        record_all(scanner, scanner.run(collections=collections))
        (tmp_path / "files.sqlite").unlink()
        assert paths(scanner.run(collections=collections)) == ["a.md"]


class TestPaths:
    def test_only_the_given_files_absolute_or_relative(self, tmp_path):
        make_files(tmp_path, "a.md", "sub/b.md", "c.md")
        result = CollectionScanner().run(
            collections=[{"name": "n", "root": str(tmp_path)}], paths=[str(tmp_path / "sub" / "b.md"), "a.md"]
        )
        assert paths(result) == ["a.md", "sub/b.md"]
        assert result["scope"] == ["n:a.md", "n:sub/b.md"] and result["next"] is None
        assert [s["path"] for s in result["present"]] == ["a.md", "sub/b.md"]

    def test_a_deleted_file_is_in_scope_but_not_present(self, tmp_path):
        make_files(tmp_path, "a.md")
        result = CollectionScanner().run(collections=[{"name": "n", "root": str(tmp_path)}], paths=["gone.md", "a.md"])
        assert paths(result) == ["a.md"]
        assert sorted(result["scope"]) == ["n:a.md", "n:gone.md"] and result["gone"] == ["n:gone.md"]

    def test_a_file_the_globs_leave_out_is_skipped_with_the_reason(self, tmp_path):
        make_files(tmp_path, "image.png", ".hidden.md")
        result = CollectionScanner().run(
            collections=[{"name": "n", "root": str(tmp_path)}], paths=["image.png", ".hidden.md"]
        )
        assert paths(result) == [] and result["scope"] == []
        assert reasons(result)["image.png"].startswith("not indexed: it matches none of the collection's include globs")
        assert "hidden" in reasons(result)[".hidden.md"]

    @pytest.mark.parametrize("bad", ["/etc/passwd", "../outside.md"])
    def test_a_path_in_no_collection_raises(self, tmp_path, bad):
        with pytest.raises(ValueError, match="is in no collection being indexed"):
            CollectionScanner().run(collections=[{"name": "n", "root": str(tmp_path)}], paths=[bad])

    def test_a_folder_stands_for_its_notes(self, tmp_path):
        make_files(tmp_path, "a.md", "sub/b.md", "sub/deep/c.md", "sub/image.png", "subway.md")
        result = CollectionScanner().run(
            collections=[{"name": "n", "root": str(tmp_path)}], paths=[str(tmp_path / "sub")]
        )
        assert paths(result) == ["sub/b.md", "sub/deep/c.md"]

    def test_a_deleted_folder_stands_for_its_recorded_files(self, tmp_path):
        import shutil

        root = tmp_path / "notes"
        make_files(root, "a.md", "sub/b.md", "sub/deep/c.md")
        scanner = CollectionScanner(records_path=str(tmp_path / "files.sqlite"))
        collections = [{"name": "n", "root": str(root)}]
        record_all(scanner, scanner.run(collections=collections))
        shutil.rmtree(root / "sub")
        result = scanner.run(collections=collections, paths=[str(root / "sub")])
        assert sorted(result["gone"]) == ["n:sub", "n:sub/b.md", "n:sub/deep/c.md"] and result["sources"] == []

    def test_a_relative_path_goes_to_the_collection_that_has_it(self, tmp_path):
        make_files(tmp_path / "one", "x.md")
        make_files(tmp_path / "two", "y.md")
        result = CollectionScanner().run(
            collections=[
                {"name": "one", "root": str(tmp_path / "one")},
                {"name": "two", "root": str(tmp_path / "two")},
            ],
            paths=["y.md"],
        )
        assert [(s["collection"], s["path"]) for s in result["sources"]] == [("two", "y.md")]
