"""The `needle` command end to end on the bundled demo notes (indexed once per session)."""

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from needle.core.results import SearchAnswer

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent


def top_paths(output: str) -> list[str]:
    return [r["path"] for r in json.loads(output)["results"]]


class TestCliSearch:
    @pytest.mark.parametrize(
        "mode, query, expected",
        [
            ("search", "pg_replication_slots logical replication", "howto/postgres-logical-replication.md"),
            ("search", "certbot renew", "howto/certbot-tls-renewal.md"),
            (
                "vsearch",
                "why does my container keep getting killed for using too much memory",
                "runbooks/k8s-oomkilled-debugging.md",
            ),
            ("vsearch", "backing up my laptop to an encrypted repository", "howto/restic-laptop-backups.md"),
            ("query", "git rebase onto another branch", "howto/git-rebase-onto.md"),
            ("query", "sqlite write-ahead log concurrent readers", "howto/sqlite-wal-mode.md"),
        ],
    )
    def test_expected_note_is_the_top_hit(self, cli, mode, query, expected):
        code, out, _ = cli(mode, query, "--json", "-n", "5")
        assert code == 0
        assert top_paths(out)[0] == expected

    def test_result_shape_and_line_numbers_match_the_file(self, cli, demo_needle):
        code, out, _ = cli("query", "certbot renewal hook", "--json", "-n", "3")
        assert code == 0
        answer = json.loads(out)
        assert answer["label"] == "PASS"
        for result in answer["results"]:
            assert set(result) >= {
                "docid",
                "collection",
                "path",
                "title",
                "heading_path",
                "start_line",
                "end_line",
                "score",
                "text",
            }
            assert result["docid"].startswith("#") and result["collection"] == "notes"
            lines = (REPO / "needle" / "demo" / "notes" / result["path"]).read_text().split("\n")
            assert result["text"].strip() in "\n".join(lines[result["start_line"] - 1 : result["end_line"]])

    def test_top_k_and_collection_filter(self, cli):
        code, out, _ = cli("search", "backup", "-n", "2", "-c", "notes", "--json")
        assert code == 0 and len(json.loads(out)["results"]) == 2
        code, out, _ = cli("search", "backup", "--limit", "3", "--json")  # the name every other surface uses
        assert code == 0 and len(json.loads(out)["results"]) == 3

    def test_min_score_can_leave_nothing(self, cli):
        code, out, _ = cli("vsearch", "sourdough", "--min-score", "0.9999")
        assert code == 0 and "no results" in out

    def test_human_output_names_file_lines_and_heading(self, cli):
        code, out, _ = cli("search", "certbot renew")
        assert code == 0
        assert "notes/howto/certbot-tls-renewal.md:" in out and "score" in out


class TestCliFormats:
    def test_json_is_the_schema_the_server_returns(self, cli, demo_needle):
        code, out, _ = cli("query", "certbot renewal hook", "--json", "-n", "2", "--explain")
        assert code == 0
        answer = SearchAnswer.model_validate_json(out)
        assert answer.results[0].explain and "final_score" in answer.results[0].explain

    def test_csv_has_a_header_and_a_row_per_hit(self, cli):
        code, out, _ = cli("search", "certbot renew", "--format", "csv", "-n", "3")
        rows = list(csv.reader(io.StringIO(out)))
        assert code == 0 and rows[0][:4] == ["docid", "score", "collection", "path"]
        assert len(rows) == 4 and rows[1][3] == "howto/certbot-tls-renewal.md"

    def test_files_lists_each_file_once_for_get(self, cli):
        code, out, _ = cli("query", "backups", "--format", "files", "-n", "5", "--chunks")
        files = out.split()
        assert code == 0 and files and len(files) == len(set(files)) and all(f.startswith("notes/") for f in files)
        code, text, _ = cli("get", files[0])
        assert code == 0 and text.strip()

    def test_markdown_names_file_and_lines(self, cli):
        code, out, _ = cli("search", "certbot renew", "--format", "md", "-n", "1")
        assert code == 0 and out.startswith("> confidence ") and "\n\n1. **" in out
        assert "`notes/howto/certbot-tls-renewal.md:" in out and "```" in out

    def test_set_overrides_a_graph_parameter(self, cli):
        code, out, _ = cli("query", "certbot renew", "--json", "--set", "snippets.max_lines=2")
        snippet = json.loads(out)["results"][0]["snippet"].split("\n")
        shown = [line for line in snippet if not line.startswith("@@ ")]  # a snippet's hunks each have a header
        assert code == 0 and 1 <= len(shown) <= 2
        code, _, err = cli("query", "certbot", "--set", "fuse.nope=1")
        assert code == 2 and "fuse.nope" in err and "WeightedRRFJoiner has no parameter 'nope'" in err


class TestCliFilters:
    def test_tag_path_where_and_dates(self, cli):
        code, out, _ = cli("query", "alerts", "--tag", "homelab", "--json", "-n", "10")
        assert code == 0 and top_paths(out)[0] == "projects/homelab-monitoring.md"
        code, out, _ = cli("search", "postgres", "--path", "howto/", "--tag-none", "kestrel", "--json")
        assert code == 0 and top_paths(out) and all(p.startswith("howto/") for p in top_paths(out))
        assert "howto/postgres-logical-replication.md" not in top_paths(out)
        code, out, _ = cli("vsearch", "what went wrong", "--where", "status=final", "--json")
        assert code == 0 and set(top_paths(out)) == {
            "incidents/2024-02-cache-stampede-postmortem.md",
            "incidents/2023-11-expired-certificate.md",
        }
        code, out, _ = cli(
            "query", "kestrel", "--after", "2024-05-01", "--before", "2024-06", "--no-self-query", "--json"
        )
        assert code == 0 and top_paths(out)[0] == "meetings/2024-05-13-kestrel-launch-retro.md"
        notes = REPO / "needle" / "demo" / "notes"
        assert all("\ndate: 2024-05-" in (notes / p).read_text() for p in top_paths(out))

    def test_explain_shows_what_the_question_said_and_the_fallback(self, cli):
        code, out, _ = cli("query", "in:runbooks/ memory", "--explain", "-n", "3")
        assert code == 0
        assert "self-query: searched 'memory' (asked 'in:runbooks/ memory')" in out
        assert '  paths: ["runbooks/"]' in out
        assert "fallback: the question's filters left 1 result(s), fewer than min_results=3" in out
        assert out.index("runbooks/k8s-oomkilled-debugging.md") < out.index(" 2. ")
        code, out, _ = cli("query", "in:runbooks/ memory", "--json", "-n", "3")
        read = json.loads(out)["self_query"]
        assert (read["applied"], read["fallback"], read["min_results"]) == (True, True, 3)

    def test_recent_ranks_the_newest_first_and_changes_nothing_when_off(self, cli):
        code, plain, _ = cli("query", "kestrel sync", "--json", "-n", "5")
        code2, recent, _ = cli("query", "kestrel sync", "--recent", "--json", "-n", "5")
        assert code == code2 == 0
        assert top_paths(plain)[:2] == ["meetings/2024-03-18-kestrel-sync.md", "meetings/2024-04-15-kestrel-sync.md"]
        newest_first = top_paths(recent)
        # The newer of the two syncs now ranks above the older, and nothing older than it comes first.
        assert newest_first.index("meetings/2024-04-15-kestrel-sync.md") < newest_first.index(
            "meetings/2024-03-18-kestrel-sync.md"
        )
        assert newest_first[0].removeprefix("meetings/")[:10] >= "2024-04-15"
        code, off, _ = cli("query", "kestrel sync", "--no-recent", "--no-self-query", "--json", "-n", "5")
        assert [(r["path"], r["score"]) for r in json.loads(off)["results"]] == [
            (r["path"], r["score"]) for r in json.loads(plain)["results"]
        ]

    def test_context_annotations_come_with_every_result_under_them(self, cli):
        try:
            assert cli("context", "add", "notes", "my personal notes")[0] == 0
            code, out, _ = cli("context", "add", "notes/runbooks", "on-call runbooks for the kestrel services")
            assert code == 0 and "context for 'notes/runbooks'" in out
            code, out, _ = cli("query", "pod killed for memory", "--json", "-n", "3")
            contexts = {r["path"]: r["context"] for r in json.loads(out)["results"]}
            assert (
                contexts["runbooks/k8s-oomkilled-debugging.md"]
                == "my personal notes › on-call runbooks for the kestrel services"
            )
            assert all(c == "my personal notes" for p, c in contexts.items() if not p.startswith("runbooks/"))
            assert cli("context", "list")[1].splitlines() == [
                "notes\tmy personal notes",
                "notes/runbooks\ton-call runbooks for the kestrel services",
            ]
            code, _, err = cli("context", "add", "nope/x", "text")
            assert code == 2 and "unknown collection" in err
        finally:
            cli("context", "remove", "notes")
            cli("context", "remove", "notes/runbooks")
        assert "no contexts yet" in cli("context", "list")[1]


class TestCliFiles:
    def test_multi_get_by_glob_and_by_refs(self, cli):
        code, out, _ = cli("multi-get", "notes/howto/sqlite*.md", "--json")
        batch = json.loads(out)
        assert code == 0 and [f["path"] for f in batch["files"]] == ["howto/sqlite-wal-mode.md"]
        code, out, _ = cli("multi-get", "notes/howto/git-rebase-onto.md", "howto/sqlite-wal-mode.md")
        assert (
            code == 0
            and "==> notes/howto/git-rebase-onto.md <==" in out
            and "==> notes/howto/sqlite-wal-mode.md <==" in out
        )

    def test_multi_get_byte_cap_skips_with_a_reason(self, cli):
        code, out, _ = cli("multi-get", "notes/howto/sqlite*.md", "--max-bytes", "10")
        assert code == 0 and "skipped notes/howto/sqlite-wal-mode.md:" in out and "max_bytes=10" in out

    def test_ls_lists_the_indexed_files(self, cli, demo_needle):
        code, out, _ = cli("ls", "notes", "--json")
        files = json.loads(out)
        assert code == 0 and len(files) == demo_needle.first_report.files_read
        assert {"collection", "path", "title", "chunks"} <= set(files[0]) and all(f["chunks"] > 0 for f in files)
        code, _, err = cli("ls", "nope")
        assert code == 2 and "unknown collection" in err


class TestCliErrors:
    @pytest.mark.parametrize(
        "args, message",
        [
            (["search", " "], "query must be a non-empty string"),
            (["search", "x", "-n", "0"], "limit must be 1 to 1000, got 0"),
            (["query", "x", "-c", "nope"], "unknown collection"),
            (["get", "../../etc/passwd"], "contains '..'"),
            (["get", "notes/../../../etc/passwd"], "contains '..'"),
            (["get", "notes/.env"], "no file"),
            (["get", "notes/howto/no-such-note.md"], "no file"),
            (["collection", "add", "/no/such/folder", "--name", "x"], "not a folder"),
            (["collection", "remove", "nope"], "no collection named"),
            (["index", "nope"], "unknown collection"),
            (["index", "--path", "/etc/passwd"], "path '/etc/passwd' is in no collection being indexed"),
        ],
    )
    def test_user_mistakes_are_one_line_with_exit_2(self, cli, args, message):
        code, _, err = cli(*args)
        assert code == 2
        assert message in err and "Traceback" not in err

    def test_index_path_reads_only_that_file(self, cli):
        code, out, _ = cli("index", "--path", "howto/sqlite-wal-mode.md", "--json")
        report = json.loads(out)
        assert code == 0 and (report["files_seen"], report["files_read"], report["texts_embedded"]) == (1, 1, 0)

    def test_missing_model_names_the_install_command(self, cli, monkeypatch, tmp_path):
        monkeypatch.setenv("NEEDLE_MODEL_DIR", str(tmp_path / "empty"))
        code, _, err = cli("vsearch", "anything")
        assert code == 1 and "needle models" in err

    def test_no_stack_trace_from_a_fresh_process(self, demo_needle, tmp_path):
        env = {**os.environ, "NEEDLE_DATA_DIR": str(tmp_path / "fresh")}
        proc = subprocess.run(
            [sys.executable, "-m", "needle.shells.cli", "search", "anything"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 2
        assert "no collections yet" in proc.stderr or "collection" in proc.stderr
        assert "Traceback" not in proc.stderr


class TestCliClosedPipe:
    @pytest.mark.parametrize("args", [["search", "sqlite", "--format", "files"], ["ls"]])
    def test_a_reader_that_went_away_ends_the_command_quietly(self, demo_needle, args):
        demo_needle.close()  # the command opens the index itself
        env = {
            **os.environ,
            "NEEDLE_DATA_DIR": str(demo_needle.settings.data_dir),
            "NEEDLE_MODEL_DIR": str(demo_needle.settings.model_dir),
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "needle.shells.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        proc.stdout.close()  # `| head` that already exited: every write meets a closed pipe
        _, err = proc.communicate(timeout=120)
        assert (proc.returncode, err.decode()) == (141, "")


class TestCliGetAndStatus:
    def test_get_whole_file_and_line_range(self, cli):
        path = REPO / "needle" / "demo" / "notes" / "howto" / "sqlite-wal-mode.md"
        lines = path.read_text().split("\n")
        code, out, _ = cli("get", "notes/howto/sqlite-wal-mode.md:3:2")
        assert code == 0 and out.rstrip("\n").split("\n") == lines[2:4]
        code, out, _ = cli("get", "howto/sqlite-wal-mode.md")
        assert code == 0 and out.rstrip("\n") == path.read_text().rstrip("\n")

    def test_get_by_docid(self, cli):
        code, out, _ = cli("search", "sqlite wal", "--json", "-n", "1")
        hit = json.loads(out)["results"][0]
        code, out, _ = cli("get", f"{hit['docid']}:1:1")
        assert code == 0 and out.strip()

    def test_status_lists_counts_model_and_store(self, cli, demo_needle):
        code, out, _ = cli("status", "--json")
        status = json.loads(out)
        assert code == 0
        notes = status["collections"][0]
        assert notes["name"] == "notes" and notes["files"] == demo_needle.first_report.files_read
        assert notes["chunks"] == demo_needle.first_report.chunks
        assert status["embedding_model"] == "local/all-MiniLM-L6-v2-int8"
        assert status["store"].endswith("index")

    def test_collection_list(self, cli):
        code, out, _ = cli("collection", "list")
        assert code == 0 and out.startswith("notes\t")
