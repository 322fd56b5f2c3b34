import contextlib
import errno
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from haystack_integrations.components.converters.needle.markdown_file_reader import MarkdownFileReader
from haystack_integrations.components.fetchers.needle.collection_scanner import CollectionScanner
from needle.core.collections import CollectionError, CollectionRegistry
from needle.core.files import batches, reading, walking
from needle.core.files.batches import FileAccess, SkippedFile
from needle.core.files.reading import FileNotServed
from needle.core.files.references import docid, parse_ref
from needle.core.files.walking import OutOfTime, walk_collection
from needle.core.globs import CollectionRules

# Seconds a pathological pattern may take: linear matching needs milliseconds, a backtracking one minutes,
# so the bound holds on a loaded shared machine and still catches the regression.
PATHOLOGICAL_BUDGET_SECONDS = 20.0

SECRET = "TOP-SECRET-CONTENT"
DEEP = "deep/" + "d/" * 60 + "leaf.md"
LONG_NAME = "n" * 252 + ".md"  # 255 bytes: the longest name a file system takes


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


@pytest.fixture
def tree(tmp_path):
    """Two collections; `notes` holds notes, things that are not notes, and links of every kind."""
    notes, other = tmp_path / "notes", tmp_path / "other"
    write(notes, "a.md", "line 1\nline 2\nline 3\nline 4\nline 5\n")
    write(notes, "howto/git.md", "# Git\nrebase onto\n")
    write(notes, "howto/sqlite.md", "# SQLite\nwal mode\n")
    write(notes, "real/r.md", "real\n")
    write(notes, "folder.md/inner.md", "inner\n")
    write(notes, ".private/shared/s.md", "shared\n")
    write(notes, DEEP, "deep\n")
    write(notes, LONG_NAME, "long\n")
    for rel in [".env", ".git/config", ".hidden/x.md", "sub/.dot.md", "node_modules/pkg/readme.md", ".obsidian/w.md"]:
        write(notes, rel, f"{SECRET} in {rel}\n")
    write(notes, "logs/big.log", "x" * 999 + "\n")
    write(notes, "image.png", "png\n")
    write(tmp_path, "secret.txt", SECRET + "\n")
    (notes / "howto" / "escape.md").symlink_to(tmp_path / "secret.txt")
    (notes / "outside").symlink_to(tmp_path, target_is_directory=True)
    (notes / "up").symlink_to(notes, target_is_directory=True)
    (notes / "self.md").symlink_to(notes / "self.md")
    (notes / "gone.md").symlink_to(notes / "missing.md")
    (notes / "alias.md").symlink_to(notes / "real" / "r.md")
    (notes / "aliasdir").symlink_to(notes / "real", target_is_directory=True)
    (notes / "shared").symlink_to(notes / ".private" / "shared", target_is_directory=True)
    os.close(os.open(os.fsencode(notes) + b"/bad\xff.md", os.O_CREAT | os.O_WRONLY, 0o644))
    os.mkdir(os.fsencode(notes) + b"/dir\xfe")
    os.close(os.open(os.fsencode(notes) + b"/dir\xfe/inside.md", os.O_CREAT | os.O_WRONLY, 0o644))
    write(other, "only.md", "only\n")
    registry = CollectionRegistry(tmp_path / "data" / "collections.yml")
    registry.add(notes, "notes")
    registry.add(other, "other")
    ids = ["notes:a.md", "notes:howto/git.md", "other:only.md", "notes:deleted.md", "gone:x.md"]
    return SimpleNamespace(
        base=tmp_path, notes=notes, registry=registry, ids=ids, access=FileAccess(registry, lambda: ids)
    )


def refusal(call, *args, **kwargs) -> CollectionError:
    with pytest.raises(CollectionError) as caught:
        call(*args, **kwargs)
    return caught.value


class TestParseRef:
    @pytest.mark.parametrize(
        "ref, expected",
        [
            ("notes/a.md:12:20", ("notes/a.md", 12, 20)),
            ("notes/a.md:12", ("notes/a.md", 12, None)),
            ("#a1b2c3:1:1", ("#a1b2c3", 1, 1)),
            ("notes:a.md", ("notes:a.md", None, None)),
            ("a.md:1:2:3", ("a.md:1", 2, 3)),
            ("a.md:x", ("a.md:x", None, None)),
            ("a.md:\u00b2", ("a.md:\u00b2", None, None)),
        ],
    )
    def test_splits_trailing_line_numbers(self, ref, expected):
        assert parse_ref(ref) == expected

    def test_a_line_number_of_thousands_of_digits_is_a_user_error(self):
        assert "too large" in str(refusal(parse_ref, "a.md:" + "9" * 5000))


class TestResolve:
    @pytest.mark.parametrize(
        "ref", ["notes/howto/git.md", "notes:howto/git.md", "howto/git.md", "notes/./howto//git.md"]
    )
    def test_every_form_names_the_same_file(self, tree, ref):
        served = tree.access.resolve(ref)
        assert (served.collection.name, served.rel) == ("notes", "howto/git.md")
        assert served.path == (tree.notes / "howto" / "git.md").resolve()

    def test_a_bare_path_is_looked_up_in_every_collection(self, tree):
        assert tree.access.resolve("only.md").collection.name == "other"

    @pytest.mark.parametrize("length", [4, 5, 6])
    def test_docid_and_its_prefixes(self, tree, length):
        served = tree.access.resolve("#" + docid("notes:howto/git.md")[:length].upper())
        assert (served.collection.name, served.rel) == ("notes", "howto/git.md")

    def test_unknown_docid_is_not_found(self, tree):
        error = refusal(tree.access.resolve, "#ffffff")
        assert isinstance(error, FileNotServed) and str(error).startswith("no indexed file has docid #ffffff")

    def test_docid_of_a_file_deleted_since_indexing_is_not_found(self, tree):
        error = refusal(tree.access.resolve, "#" + docid("notes:deleted.md"))
        assert isinstance(error, FileNotServed) and str(error).startswith("no file 'deleted.md' in collection 'notes'")

    def test_docid_of_a_collection_removed_since_indexing_is_not_found(self, tree):
        assert isinstance(refusal(tree.access.resolve, "#" + docid("gone:x.md")), FileNotServed)

    def test_a_docid_two_files_share_is_refused_not_guessed(self, tree):
        seen: dict[str, str] = {}
        for i in itertools.count():
            source = f"notes:n{i}.md"
            if docid(source)[:4] in seen:
                break
            seen[docid(source)[:4]] = source
        prefix = docid(source)[:4]
        access = FileAccess(tree.registry, lambda: [seen[prefix], source])
        error = refusal(access.resolve, f"#{prefix}")
        assert not isinstance(error, FileNotServed) and "names 2 files" in str(error) and "give the path" in str(error)

    def test_a_docid_is_found_in_the_list_the_index_gives_now_not_the_one_it_gave_before(self, tree):
        lists = [["notes:a.md"], ["notes:a.md", "notes:howto/git.md"]]
        access = FileAccess(tree.registry, lambda: lists[0])
        assert isinstance(refusal(access.resolve, "#" + docid("notes:howto/git.md")), FileNotServed)
        lists.pop(0)  # an index run changed the files: the facade gives a new list
        assert access.resolve("#" + docid("notes:howto/git.md")).rel == "howto/git.md"

    def test_a_docid_under_4_characters_is_refused(self, tree):
        assert "too short" in str(refusal(tree.access.resolve, "#abc"))

    @pytest.mark.parametrize(
        "ref, reason",
        [
            (".env", "hidden files and folders are not served"),
            ("notes/.env", "hidden files and folders are not served"),
            ("notes/.git/config", "hidden files and folders are not served"),
            ("notes/.hidden/x.md", "hidden files and folders are not served"),
            ("notes/sub/.dot.md", "hidden files and folders are not served"),
            ("notes/node_modules/pkg/readme.md", "excluded by 'node_modules/'"),
            ("notes/.obsidian/w.md", "hidden files and folders are not served"),
            ("notes/logs/big.log", "matches none of the collection's include globs"),
            ("notes/image.png", "matches none of the collection's include globs"),
            ("notes/self.md", "symlink loop"),
            ("notes/up/a.md", "symlink loop"),
            ("notes/gone.md", "broken symlink"),
            ("notes/alias.md", "symlink to real/r.md, which is already in the collection"),
            ("notes/aliasdir/r.md", "symlink to folder real, which is already scanned"),
            ("notes/folder.md", "it is a folder"),
            ("notes/no-such-note.md", ""),
            ("notes/a.md/x.md", ""),
        ],
    )
    def test_files_the_collection_does_not_serve_are_not_found_with_the_reason(self, tree, ref, reason):
        error = refusal(tree.access.resolve, ref)
        assert isinstance(error, FileNotServed), error
        assert str(error).startswith("no file ") and reason in str(error)
        assert SECRET not in str(error)

    def test_a_link_into_an_excluded_folder_is_served_as_the_scanner_indexes_it(self, tree):
        served = tree.access.resolve("notes/shared/s.md")
        assert served.rel == "shared/s.md" and served.path == (tree.notes / ".private/shared/s.md").resolve()

    def test_it_serves_exactly_what_the_scanner_indexes(self, tree):
        scanned = CollectionScanner().run(collections=[tree.registry.load()["notes"].as_source()])
        indexed = {s["path"] for s in scanned["sources"]}
        candidates = {"shared/s.md", "aliasdir/r.md", "outside/secret.txt", "up/a.md", "up/howto/git.md"}
        for folder, dirs, names in os.walk(tree.notes):
            for name in dirs + names:
                rel = os.path.relpath(os.path.join(folder, name), tree.notes).replace(os.sep, "/")
                if "\udcfe" not in rel and "\udcff" not in rel:
                    candidates.add(rel)
        served = set()
        for rel in candidates:
            with contextlib.suppress(CollectionError):
                served.add(tree.access.resolve(f"notes/{rel}").rel)
        assert served == indexed
        assert {"a.md", "howto/git.md", "shared/s.md", DEEP, LONG_NAME} <= served

    @pytest.mark.parametrize(
        "ref, message",
        [
            ("../../etc/passwd", "contains '..'"),
            ("notes/../../../etc/passwd", "contains '..'"),
            ("notes/howto/../../secret.txt", "contains '..'"),
            ("..\\..\\secret.txt", "contains '..'"),
            ("notes:..:secret.txt", "contains '..'"),
            ("/etc/passwd", "is absolute"),
            ("\\etc\\passwd", "is absolute"),
            ("notes//etc/passwd", "is absolute"),
            ("notes:/etc/passwd", "is absolute"),
            ("~/.ssh/id_rsa", "is absolute"),
            ("notes/howto/escape.md", "is a link that leads outside collection 'notes'"),
            ("howto/escape.md", "is a link that leads outside collection 'notes'"),
            ("notes/outside/secret.txt", "is a link that leads outside collection 'notes'"),
            ("notes/howto/git.md\x00.txt", "NUL or control characters"),
            ("notes/howto/git.md\n", "NUL or control characters"),
            ("notes/%2e%2e%2f%2e%2e%2fsecret.txt", "is URL-encoded"),
            ("%2e%2e%2fsecret.txt", "is URL-encoded"),
            ("notes/howto/%2E%2E/%2E%2E/secret.txt", "is URL-encoded"),
            ("notes/bad\udcff.md", "valid UTF-8"),
            ("notes/" + "x" * 300 + ".md", "a name over 255 bytes"),
            ("x" * 2000, "at most 1024 characters"),
            ("", "non-empty string"),
        ],
    )
    def test_references_that_could_only_mean_to_leave_are_refused(self, tree, ref, message):
        error = refusal(tree.access.resolve, ref)
        assert not isinstance(error, FileNotServed), error
        assert message in str(error) and SECRET not in str(error) and len(str(error)) < 400

    def test_a_reference_that_is_not_a_string_is_refused(self, tree):
        assert "non-empty string" in str(refusal(tree.access.resolve, None))

    @pytest.mark.parametrize(
        "code, kind, message",
        [
            (errno.ENAMETOOLONG, CollectionError, "too long a path"),
            (errno.EACCES, CollectionError, "permission denied"),
            (errno.EIO, CollectionError, "cannot be read"),
            (errno.ELOOP, FileNotServed, "symlink loop"),
            (errno.ENOENT, FileNotServed, "no file"),
        ],
    )
    def test_any_os_error_of_a_lookup_becomes_a_user_error(self, tree, monkeypatch, code, kind, message):
        def failing_lstat(path, *args, **kwargs):
            raise OSError(code, os.strerror(code), path)

        monkeypatch.setattr(reading.os, "lstat", failing_lstat)
        error = refusal(tree.access.resolve, "notes/howto/git.md")
        assert type(error) is kind and message in str(error)

    def test_no_collections_yet_says_how_to_add_one(self, tmp_path):
        access = FileAccess(CollectionRegistry(tmp_path / "collections.yml"), lambda: [])
        error = refusal(access.resolve, "a.md")
        assert isinstance(error, FileNotServed) and "needle collection add" in str(error)

    def test_a_named_pipe_is_not_served_and_does_not_block(self, tree):
        os.mkfifo(tree.notes / "pipe.md")
        assert "not a regular file" in str(refusal(tree.access.resolve, "notes/pipe.md"))


class TestRead:
    def test_whole_file(self, tree):
        text = tree.access.read("notes/a.md")
        assert text.text == "line 1\nline 2\nline 3\nline 4\nline 5"
        assert (text.collection, text.path, text.docid) == ("notes", "a.md", "#" + docid("notes:a.md"))
        assert (text.from_line, text.to_line, text.total_lines, text.bytes) == (1, 5, 5, 35)

    def test_line_range(self, tree):
        text = tree.access.read("a.md", from_line=3, max_lines=2)
        assert text.text == "line 3\nline 4" and (text.from_line, text.to_line, text.total_lines) == (3, 4, 5)
        assert tree.access.read("a.md", from_line=4, max_lines=100).to_line == 5

    def test_by_docid(self, tree):
        assert tree.access.read("#" + docid("notes:howto/git.md"), 2, 1).text == "rebase onto"

    def test_from_line_past_the_end_is_a_user_error_with_the_line_count(self, tree):
        error = refusal(tree.access.read, "notes/a.md", from_line=6)
        assert not isinstance(error, FileNotServed)
        assert str(error) == "notes/a.md has 5 lines; from_line 6 is past the end"

    @pytest.mark.parametrize("from_line, max_lines", [(0, None), (-1, None), (True, None), (1, 0), (1, "2")])
    def test_line_arguments_must_be_positive_integers(self, tree, from_line, max_lines):
        assert "must be an integer >= 1" in str(refusal(tree.access.read, "a.md", from_line, max_lines))

    def test_line_numbers_are_the_indexers(self, tree):
        raw = "\ufeffone\r\ntwo\rthree\x0cstill three\u2028still three\nfour\n"
        (tree.notes / "odd.md").write_bytes(raw.encode("utf-8"))
        source = {"collection": "notes", "root": str(tree.notes), "path": "odd.md"}
        indexed = MarkdownFileReader().run(sources=[source])["documents"][0].content
        text = tree.access.read("notes/odd.md")
        assert text.text == indexed.rstrip("\n") and text.total_lines == 4
        assert tree.access.read("notes/odd.md", 4, 1).text == "four"

    def test_text_that_is_not_utf8_is_read_with_replacement_characters(self, tree):
        (tree.notes / "latin1.md").write_bytes(b"caf\xe9\n")
        assert tree.access.read("notes/latin1.md").text == "caf\ufffd"

    def test_a_file_over_max_file_bytes_is_refused(self, tree):
        access = FileAccess(tree.registry, lambda: [], max_file_bytes=10)
        error = refusal(access.read, "notes/a.md")
        assert not isinstance(error, FileNotServed) and "max_file_bytes=10" in str(error)

    @pytest.mark.parametrize("bad", [0, -1, "5", True])
    def test_bad_max_file_bytes_raises(self, tree, bad):
        with pytest.raises(ValueError, match="max_file_bytes"):
            FileAccess(tree.registry, lambda: [], max_file_bytes=bad)

    def test_an_os_error_while_reading_becomes_a_user_error(self, tree, monkeypatch):
        def failing_open(*args, **kwargs):
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(reading.os, "open", failing_open)
        assert "Input/output error" in str(refusal(tree.access.read, "notes/a.md"))


class TestReadMany:
    def test_a_glob_inside_a_collection_reads_its_notes_and_skips_the_link_out(self, tree):
        batch = tree.access.read_many(pattern="notes/howto/*.md")
        assert [f.path for f in batch.files] == ["howto/git.md", "howto/sqlite.md"]
        assert batch.skipped == [SkippedFile(path="notes/howto/escape.md", reason=walking.OUTSIDE_ROOT)]
        assert "outside the collection" in batch.skipped[0].reason

    def test_collection_colon_glob(self, tree):
        assert [f.path for f in tree.access.read_many(pattern="notes:howto/g*.md").files] == ["howto/git.md"]

    def test_a_glob_over_every_collection_serves_exactly_the_indexed_notes(self, tree):
        batch = tree.access.read_many(pattern="**/*", max_bytes=1_000_000)
        scanned = CollectionScanner().run(collections=[c.as_source() for c in tree.registry.load().values()])
        assert sorted((f.collection, f.path) for f in batch.files) == [
            (s["collection"], s["path"]) for s in scanned["sources"]
        ]
        assert all(SECRET not in f.text for f in batch.files)
        reasons = {s.path: s.reason for s in batch.skipped}
        assert reasons["notes/howto/escape.md"] == reasons["notes/outside"] == walking.OUTSIDE_ROOT
        assert reasons["notes/bad\\xff.md"] == "the file name is not valid UTF-8"
        assert reasons["notes/dir\\xfe"] == "the folder name is not valid UTF-8"
        assert reasons["notes/self.md"].startswith("symlink loop") and reasons["notes/up"].startswith("symlink loop")
        batch.model_dump_json()  # the escaped names go out as JSON

    @pytest.mark.parametrize(
        "pattern", ["**/.env", "**/.git/*", "**/.hidden/*", "**/node_modules/**", "**/*.log", "**/.*"]
    )
    def test_globs_never_reach_what_the_collection_leaves_out(self, tree, pattern):
        batch = tree.access.read_many(pattern=pattern)
        assert batch.files == [] and all(SECRET not in s.path for s in batch.skipped)

    def test_files_over_max_bytes_are_skipped_with_the_reason(self, tree):
        batch = tree.access.read_many(pattern="notes/a.md", max_bytes=10)
        assert batch.files == []
        assert batch.skipped == [
            SkippedFile(
                path="notes/a.md", reason="35 bytes is over max_bytes=10; raise max_bytes or use get with from_line"
            )
        ]
        assert [f.bytes for f in tree.access.read_many(pattern="notes/a.md", max_bytes=35).files] == [35]

    def test_the_response_stops_at_the_total_byte_cap(self, tree, monkeypatch):
        monkeypatch.setattr(batches, "MULTI_GET_MAX_TOTAL_BYTES", 20)
        batch = tree.access.read_many(pattern="notes/howto/*.md")
        assert [f.path for f in batch.files] == ["howto/git.md"]
        assert SkippedFile(path="notes/howto/sqlite.md", reason="the response reached 20 bytes") in batch.skipped

    def test_the_file_cap_stops_the_listing_and_says_so(self, tree, monkeypatch):
        monkeypatch.setattr(batches, "MULTI_GET_MAX_FILES", 1)
        batch = tree.access.read_many(pattern="notes/howto/*.md")
        assert [f.path for f in batch.files] == ["howto/git.md"]
        assert batch.skipped[-1] == SkippedFile(
            path="notes/howto/sqlite.md", reason="more than 1 files matched; narrow the pattern"
        )

    def test_the_skipped_list_is_capped_too(self, tree, monkeypatch):
        monkeypatch.setattr(batches, "MULTI_GET_MAX_SKIPPED", 1)
        batch = tree.access.read_many(pattern="**/*")
        assert len(batch.skipped) == 2 and "the rest was not listed" in batch.skipped[-1].reason

    def test_refs_are_read_in_order_once_each(self, tree):
        refs = ["other:only.md", "notes/howto/git.md", "#" + docid("notes:a.md"), "howto/git.md"]
        batch = tree.access.read_many(refs=refs)
        assert [(f.collection, f.path) for f in batch.files] == [
            ("other", "only.md"),
            ("notes", "howto/git.md"),
            ("notes", "a.md"),
        ]
        assert batch.skipped == [SkippedFile(path="notes/howto/git.md", reason="asked for twice; returned once")]

    def test_refs_past_the_file_cap_are_not_even_looked_up(self, tree, monkeypatch):
        monkeypatch.setattr(batches, "MULTI_GET_MAX_FILES", 1)
        batch = tree.access.read_many(refs=["notes/a.md", "../../etc/passwd"])
        assert [f.path for f in batch.files] == ["a.md"]
        assert batch.skipped[0].reason == "more than 1 files asked for; ask for the rest in another call"

    @pytest.mark.parametrize(
        "ref", ["../../etc/passwd", "notes/howto/escape.md", "notes/%2e%2e%2fsecret.txt", "/etc/passwd"]
    )
    def test_one_ref_that_leaves_refuses_the_whole_request(self, tree, ref):
        error = refusal(tree.access.read_many, refs=["notes/howto/git.md", ref])
        assert not isinstance(error, FileNotServed) and SECRET not in str(error)

    def test_one_ref_that_names_no_file_is_not_found(self, tree):
        assert isinstance(refusal(tree.access.read_many, refs=["notes/a.md", "notes/nope.md"]), FileNotServed)

    @pytest.mark.parametrize("pattern", ["../*", "notes/../../*", "/etc/*", "%2e%2e/*", "**/../../*", "notes/*\x00"])
    def test_patterns_that_leave_are_refused(self, tree, pattern):
        assert not isinstance(refusal(tree.access.read_many, pattern=pattern), FileNotServed)

    @pytest.mark.parametrize(
        "kwargs, said", [({}, "neither was sent"), ({"pattern": "*.md", "refs": ["a.md"]}, "not both")]
    )
    def test_either_a_pattern_or_refs(self, tree, kwargs, said):
        assert said in str(refusal(tree.access.read_many, **kwargs))

    def test_a_pattern_under_no_collection_says_so(self, tree):
        error = refusal(tree.access.read_many, pattern="nope/*.md")
        assert isinstance(error, FileNotServed) and "no collection is named 'nope'" in str(error)

    def test_a_docid_that_is_not_hexadecimal_is_named_as_such(self, tree):
        assert "'#zzzzzz' is not a docid" in str(refusal(tree.access.read, "#zzzzzz"))

    @pytest.mark.parametrize(
        "kwargs", [{"max_bytes": 0}, {"max_bytes": True}, {"deadline_seconds": 0}, {"refs": "a.md"}]
    )
    def test_bad_arguments_are_user_errors(self, tree, kwargs):
        refusal(tree.access.read_many, **{"pattern": "*.md", **kwargs} if "refs" not in kwargs else kwargs)

    def test_pathological_globs_finish_quickly_on_a_deep_tree(self, tree):
        write(tree.notes, "a" * 200 + "/" + "a" * 200 + ".md", "a\n")
        start = time.perf_counter()
        for pattern in ["notes/**/**/**/**/**/**/**/**/**/**/x", "**/*a*a*a*a*a*a*a*a*a*b", "**/" * 300 + "x"]:
            assert tree.access.read_many(pattern=pattern).files == []
        assert time.perf_counter() - start < PATHOLOGICAL_BUDGET_SECONDS  # milliseconds when linear, minutes when not

    def test_the_listing_stops_at_the_time_budget_and_says_what_it_did_not_list(self, tree, monkeypatch):
        now = [0.0]

        def ticking() -> float:
            now[0] += 0.01
            return now[0]

        monkeypatch.setattr(walking, "clock", ticking)
        batch = tree.access.read_many(pattern="**/*.md", deadline_seconds=0.1)
        reason = "not listed entirely: the time budget of 0.1 s ran out; narrow the pattern"
        assert SkippedFile(path="notes/", reason=reason) in batch.skipped
        assert SkippedFile(path="other/", reason=reason) in batch.skipped

    def test_the_reading_stops_at_the_time_budget(self, tree, monkeypatch):
        now = [0.0]
        monkeypatch.setattr(walking, "clock", lambda: now[0])
        text = FileAccess._text

        def text_then_late(*args, **kwargs):
            now[0] = 100.0
            return text(*args, **kwargs)

        monkeypatch.setattr(FileAccess, "_text", staticmethod(text_then_late))
        batch = tree.access.read_many(pattern="notes/howto/*.md", deadline_seconds=5)
        assert [f.path for f in batch.files] == ["howto/git.md"]
        assert (
            SkippedFile(path="notes/howto/sqlite.md", reason="not read: the time budget of 5 s ran out")
            in batch.skipped
        )

    def test_a_file_that_cannot_be_read_is_skipped_with_the_reason(self, tree, monkeypatch):
        def failing_open(*args, **kwargs):
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(reading.os, "open", failing_open)
        batch = tree.access.read_many(pattern="notes/a.md")
        assert batch.skipped == [SkippedFile(path="notes/a.md", reason="the file cannot be read: Input/output error")]

    def test_a_named_pipe_is_skipped_without_blocking(self, tree):
        os.mkfifo(tree.notes / "pipe.md")
        batch = tree.access.read_many(pattern="notes/*.md")
        assert SkippedFile(path="notes/pipe.md", reason="not a regular file") in batch.skipped


class TestWalkCollection:
    def test_descend_prunes_folders_and_their_problems(self, tree):
        rules = CollectionRules()
        listed = list(walk_collection(str(tree.notes), rules, descend=lambda rel: rel == "howto"))
        assert [(i.rel, i.reason is None) for i in listed] == [
            ("a.md", True),
            ("alias.md", False),
            ("bad\\xff.md", False),
            ("gone.md", False),
            (LONG_NAME, True),
            ("self.md", False),
            ("howto/escape.md", False),
            ("howto/git.md", True),
            ("howto/sqlite.md", True),
        ]

    def test_a_deadline_in_the_past_stops_it(self, tree):
        with pytest.raises(OutOfTime):
            list(walk_collection(str(tree.notes), CollectionRules(), deadline=walking.clock() - 1))


class TestLineSuffix:
    def test_a_reference_may_end_in_line_numbers(self, tree):
        assert tree.access.read("notes/a.md:2:2").text == "line 2\nline 3"

    def test_a_file_named_with_a_numeric_suffix_is_still_found(self, tree):
        write(tree.notes, "v:2.md", "two\n")
        write(tree.notes, "log:12", "x\n")
        tree.registry.add(tree.notes, "notes", include=["**/*.md", "**/log:12"])
        assert tree.access.read("notes/log:12").text == "x"


class TestDocuments:
    """PDF, DOCX and HTML files are served as the text the index holds; a page range or a section by anchor."""

    @pytest.fixture
    def docs(self, tmp_path):
        from needle.evaluation import sample_documents as make

        root = tmp_path / "docs"
        make.write(
            root / "raft.pdf",
            make.pdf_bytes(
                [
                    "# Raft\n\nLeader election.\n\nHeartbeats.",
                    "## Log\n\nAppend entries.",
                    "## Membership\n\nJoint consensus.",
                ],
                title="Raft notes",
            ),
        )
        make.write(
            root / "spec.docx",
            make.docx_bytes(
                "# Deploy\n\nIntro.\n\n## Rollout\n\nCanary first.\n\n### CI/CD\n\nPipelines.\n\n## Rollback\n\nBurn rate."
            ),
        )
        make.write(root / "locked.pdf", make.pdf_bytes(["secret"], user_password="pw"))
        write(root, "note.md", "# Note\ntext\n")
        registry = CollectionRegistry(tmp_path / "data" / "collections.yml")
        registry.add(root, "docs", include=["**/*.md", "**/*.pdf", "**/*.docx"])
        return FileAccess(registry, lambda: ["docs:raft.pdf"])

    def test_whole_pdf_is_its_extracted_text(self, docs):
        text = docs.read("docs/raft.pdf")
        assert text.format == "pdf" and (text.page_from, text.page_to, text.page_count) == (1, 3, 3)
        assert text.text.startswith("---\ntitle: Raft notes\n---\n\nRaft\nLeader election.")
        assert text.text.endswith("Membership\nJoint consensus.")

    def test_a_page_and_lines_within_it(self, docs):
        page = docs.read("docs/raft.pdf#page=2")
        assert page.text == "Log\nAppend entries." and (page.page_from, page.page_to, page.total_lines) == (2, 2, 2)
        assert docs.read("docs/raft.pdf#page=2", from_line=2, max_lines=1).text == "Append entries."
        ref, line, count = parse_ref(f"#{docid('docs:raft.pdf')}#page=3:2:1")
        assert docs.read(ref, line, count).text == "Joint consensus."
        assert docs.read("docs/raft.pdf#page=3:2:1").text == "Joint consensus."  # an anchor as HTTP and MCP pass it

    def test_a_page_range(self, docs):
        pages = docs.read("docs/raft.pdf#page=2-3")
        assert pages.text == "Log\nAppend entries.\n\nMembership\nJoint consensus."
        assert (pages.page_from, pages.page_to) == (2, 3)

    def test_pages_outside_the_document_are_a_user_error(self, docs):
        error = refusal(docs.read, "docs/raft.pdf#page=4")
        assert str(error) == "docs/raft.pdf has 3 pages; page 4 is outside them"
        assert "pages 3-2" in str(refusal(docs.read, "docs/raft.pdf#page=3-2"))

    def test_a_section_by_its_heading_or_heading_path(self, docs):
        section = docs.read("docs/spec.docx#section=Rollout")
        assert section.text == "## Rollout\n\nCanary first.\n\n### CI/CD\n\nPipelines." and section.format == "docx"
        assert docs.read("docs/spec.docx#section=deploy › rollout").text == section.text
        assert docs.read("docs/spec.docx#section=CI/CD").text == "### CI/CD\n\nPipelines."
        assert docs.read("docs/spec.docx#section=Rollback", 3, 1).text == "Burn rate."

    def test_an_unknown_section_is_not_found(self, docs):
        assert isinstance(refusal(docs.read, "docs/spec.docx#section=Nope"), FileNotServed)

    def test_pages_of_a_file_without_pages_and_parts_of_a_note_are_user_errors(self, docs):
        assert "has no pages" in str(refusal(docs.read, "docs/spec.docx#page=1"))
        assert "is a markdown file" in str(refusal(docs.read, "docs/note.md#section=Note"))

    def test_a_document_the_index_skips_cannot_be_read_either(self, docs):
        error = refusal(docs.read, "docs/locked.pdf")
        assert str(error) == "docs/locked.pdf cannot be read: encrypted PDF: it needs a password to open"

    def test_extraction_is_reused_while_the_file_is_unchanged(self, docs, monkeypatch):
        docs.read("docs/raft.pdf#page=1")
        monkeypatch.setattr(docs.extractor, "extract", lambda data, fmt: pytest.fail("extracted again"))
        assert docs.read("docs/raft.pdf#page=2").text == "Log\nAppend entries."

    def test_multi_get_returns_extracted_text_and_skips_what_cannot_be_read(self, docs):
        batch = docs.read_many(pattern="docs/*.pdf", max_bytes=10_000)
        assert [f.path for f in batch.files] == ["raft.pdf"] and batch.files[0].text.endswith("Joint consensus.")
        assert [(s.path, s.reason) for s in batch.skipped] == [
            ("docs/locked.pdf", "docs/locked.pdf cannot be read: encrypted PDF: it needs a password to open")
        ]
        small = docs.read_many(refs=["docs/raft.pdf"], max_bytes=20)
        assert small.files == [] and "over max_bytes=20" in small.skipped[0].reason


def test_the_walk_the_scanner_shares_loads_neither_pydantic_nor_the_converters():
    code = "import sys, needle.core.files.walking; print(sorted({'pydantic', 'needle.core.file_formats'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
