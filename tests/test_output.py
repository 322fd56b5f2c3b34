"""How the CLI prints: names and texts from the user's files never reach a terminal as control sequences."""

from __future__ import annotations

import json

import pytest

from needle.commands import render as output
from needle.commands import safe_logs
from needle.core.files.batches import FileBatch, SkippedFile
from needle.core.files.reading import FileText
from needle.core.index_results import FileNote, FileProblem, IndexedFile, IndexReport, Status
from needle.core.results import Hit, SearchAnswer

# A name that clears the screen, one that rewrites its own line, one with a C1 control sequence introducer.
NAMES = ["clear\x1b[2J.md", "over\rwrite.md", "csi\x9b31m.md", "two\nlines.md"]
RAW = ("\x1b", "\r", "\x9b")


def hit(path: str, text: str = "body \x1b]0;title\x07 text") -> Hit:
    return Hit(
        docid="abc123",
        collection="notes",
        path=path,
        title=f"T {path}",
        heading_path=["H\x1b[1m"],
        start_line=1,
        end_line=2,
        score=0.5,
        snippet=text,
        text=text,
    )


def answer() -> SearchAnswer:
    return SearchAnswer(label="PASS", results=[hit(name) for name in NAMES], confidence=0.9)


def assert_safe(printed: str) -> None:
    assert not any(c in printed for c in RAW), repr(printed)


class TestTerminalSafe:
    def test_control_characters_are_escaped_and_line_feeds_and_tabs_kept(self):
        assert (
            output.terminal_safe("a\x1b[2Jb\rc\x07d\x7fe\x9bf\tg\nh")
            == "a\\u001b[2Jb\\u000dc\\u0007d\\u007fe\\u009bf\tg\nh"
        )

    def test_plain_text_is_unchanged(self):
        text = "Crème brûlée › Setup\tstep 1\n"
        assert output.terminal_safe(text) == text

    def test_json_stays_valid_and_decodes_to_the_same_value(self):
        value = {"path": "csi\x9b31m.md", "del": "a\x7fb", "esc": "\x1b[2J"}
        printed = output.terminal_safe(json.dumps(value, ensure_ascii=False))
        assert_safe(printed)
        assert json.loads(printed) == value


@pytest.mark.parametrize("fmt", output.FORMATS)
def test_every_search_format_escapes_names_and_texts(fmt):
    printed = output.search_answer(answer(), fmt)
    assert_safe(printed)
    if fmt == "json":
        assert [h["path"] for h in json.loads(printed)["results"]] == NAMES
    if fmt == "files":
        assert printed.splitlines() == [
            "notes/clear\\u001b[2J.md",
            "notes/over\\u000dwrite.md",
            "notes/csi\\u009b31m.md",
            "notes/two\\u000alines.md",
        ]


def test_ls_prints_one_escaped_line_per_file_and_valid_json():
    files = [IndexedFile(collection="notes", path=name, chunks=1, title=name) for name in NAMES]
    printed = output.file_list(files, as_json=False)
    assert_safe(printed)
    assert len(printed.splitlines()) == len(NAMES)
    assert [f["path"] for f in json.loads(output.file_list(files, as_json=True))] == NAMES


def test_multi_get_escapes_headers_texts_and_skipped_names():
    batch = FileBatch(
        files=[
            FileText(
                docid="abc123",
                collection="notes",
                path=NAMES[0],
                from_line=1,
                to_line=1,
                total_lines=1,
                bytes=10,
                text="x\x1b[31mred\n",
            )
        ],
        skipped=[SkippedFile(path=NAMES[1], reason="too large")],
    )
    printed = output.file_batch(batch, as_json=False)
    assert_safe(printed)
    assert json.loads(output.file_batch(batch, as_json=True))["files"][0]["text"] == "x\x1b[31mred\n"


def test_index_report_and_status_escape_the_names_they_list():
    report = IndexReport(
        collections=["notes"],
        seconds=1.0,
        files_seen=3,
        files_read=1,
        files_not_read=1,
        files_vanished=1,
        files_new=1,
        skipped=[FileNote(collection="notes", path=NAMES[0], reason="empty file")],
        warnings=[FileNote(collection="notes", path=NAMES[1], reason="frontmatter field \x1b left out")],
        chunks=1,
        chunks_embedded=1,
        files_embedded=1,
        texts_embedded=1,
        batches=1,
    )
    printed = output.index_report(report, as_json=False)
    assert_safe(printed)
    assert "3 files seen: 1 read, 0 unchanged by their stat, 1 skipped, 1 vanished during the run;" in printed
    status = Status(
        store="/x",
        embedding_model="m",
        sparse_model="s",
        collections=[],
        data_dir="/x",
        problems_total=1,
        problems=[FileProblem(collection="notes", path=NAMES[2], kind="skipped", reason="binary file")],
    )
    printed = output.status_text(status, as_json=False)
    assert_safe(printed)
    assert "  skipped notes/csi\\u009b31m.md: binary file" in printed.splitlines()


def test_log_messages_are_escaped_once_the_filter_is_on():
    import logging

    handler = logging.StreamHandler(stream := __import__("io").StringIO())
    safe_logs.escape_logs(handler)
    safe_logs.escape_logs(handler)
    logger = logging.getLogger("needle.test_output")
    logger.addHandler(handler)
    try:
        logger.warning("Skipped %s: %s", "notes/clear\x1b[2J.md", "empty file")
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue() == "Skipped notes/clear\\u001b[2J.md: empty file\n"
    assert len(handler.filters) == 1
