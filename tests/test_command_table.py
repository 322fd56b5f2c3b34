"""The command table (`needle.commands.table`): one entry per command, from which the parser, the dispatch, the thin
client's command sets, the remote facade, the MCP tools and the HTTP routes' wrappers all come."""

from __future__ import annotations

import argparse
import importlib.util
import inspect

import pytest

from needle.commands import table
from needle.commands.table import BY_NAME, COMMANDS, GROUPS, TOOLS
from needle.core.resources import SERVER_PIPELINES_DIR
from needle.facade.interface import NeedleInterface
from needle.owner import thin_client
from needle.shells.cli import PROCESSES, _parser


def _wrapper_class(folder: str) -> type:
    spec = importlib.util.spec_from_file_location(
        f"table_wrapper_{folder}", SERVER_PIPELINES_DIR / folder / "pipeline_wrapper.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PipelineWrapper


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_every_route_is_one_wrapper_folder_built_from_its_entry():
    folders = sorted(p.name for p in SERVER_PIPELINES_DIR.iterdir() if (p / "pipeline_wrapper.py").is_file())
    assert folders == sorted(c.route for c in COMMANDS if c.route)
    for command in COMMANDS:
        if command.route:
            wrapper = _wrapper_class(command.route)
            assert BY_NAME[wrapper.command] is command
            assert wrapper.skip_mcp is (command.tool is None)
            assert inspect.signature(wrapper.run_api).return_annotation == command.result_type()


def test_every_tool_is_a_route_with_a_result_and_reads_come_first():
    assert list(TOOLS) == ["search", "vsearch", "query", "get", "multi_get", "links", "status", "index"]
    assert all(c.route and c.result for c in TOOLS.values())


def test_every_command_run_on_a_facade_names_its_method_and_a_renderer():
    interface = {name for name, value in vars(NeedleInterface).items() if inspect.isfunction(value)}
    for command in COMMANDS:
        if command.process:
            assert command.name in PROCESSES and command.index == "none", command.name
            continue
        assert command.render is not None and (command.handler or command.method), command.name
        assert command.method is None or command.method in interface, command.name
        if command.route:
            assert command.method, f"{command.name}: a route calls the facade's method"


def test_the_parser_has_every_command_and_group_action_in_the_tables_order():
    parser = _choices(_parser())
    words = list(dict.fromkeys(c.words[0] for c in COMMANDS))
    assert list(parser) == words
    for name, group in GROUPS.items():
        actions = [c.words[1] for c in COMMANDS if c.words[0] == name]
        assert list(_choices(parser[name])) == actions
        assert parser[name].format_help().count("ACTION") >= 1 and group.help


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["owner"], "owner status"),
        (["owner", "stop"], "owner stop"),
        (["collection", "remove", "x"], "collection remove"),
        (["multi-get", "notes/*.md"], "multi-get"),
        (["eval", "golden"], "eval"),
    ],
)
def test_a_parsed_command_line_finds_its_entry(argv, name):
    assert table.command_of(_parser().parse_args(argv)).name == name


def test_what_goes_to_an_owner_starts_one_and_is_sent_again_is_what_it_was():
    starting, sent = thin_client.NEEDS_INDEX, thin_client.THIN_COMMANDS
    assert starting == {
        "search",
        "vsearch",
        "query",
        "get",
        "multi-get",
        "links",
        "related",
        "ls",
        "status",
        "index",
        "answer",
        "check",
        "optimize",
        "backup",
    }
    assert sent == starting | {
        "collection list",
        "collection remove",
        "context add",
        "context list",
        "context remove",
        "restore",
        "migrate",
    }
    assert {c.name for c in COMMANDS if c.retried} == {
        "search",
        "vsearch",
        "query",
        "get",
        "multi-get",
        "links",
        "related",
        "ls",
        "status",
        "check",
        "context add",
        "context list",
        "context remove",
        "collection list",
        "collection remove",
    }


def test_the_result_a_route_sends_is_validated_back_into_the_same_model():
    """What the owner's facade returns crosses the wire as JSON and comes back as the model it was."""
    from needle.core.files.batches import FileBatch, SkippedFile
    from needle.core.files.reading import FileText
    from needle.core.index_results import (
        BackupReport,
        CheckReport,
        FileNote,
        IndexedFile,
        IndexReport,
        Repaired,
        Status,
    )
    from needle.core.link_results import LinkEntry, LinkReport, RelatedNote, RelatedReport
    from needle.core.results import Answer, Hit, SearchAnswer
    from needle.owner.remote import _adapter

    hit = Hit(
        docid="#abc123",
        collection="n",
        path="a.md",
        title="A",
        heading_path=["A"],
        start_line=1,
        end_line=2,
        score=0.5,
        snippet="s",
    )
    samples = {
        "search": SearchAnswer(label="PASS", results=[hit], confidence=0.9),
        "answer": Answer(answer="a [a.md:1-2]", label="PASS", results=[hit], cited=[hit], unknown_citations=[]),
        "index": IndexReport(
            collections=["n"], files_seen=1, skipped=[FileNote(collection="n", path="b", reason="empty file")]
        ),
        "status": Status(collections=[], embedding_model="m", sparse_model="s", store="/i", data_dir="/d"),
        "check": CheckReport(
            problems=[], damaged=False, repaired=Repaired(reindexed=1, chunks_embedded=2, orphans_deleted=0)
        ),
        "backup": BackupReport(kind="embedded", chunks=3, files=1, path="/b"),
        "ls": [IndexedFile(collection="n", path="a.md", title="A", chunks=2)],
        "get": FileText(
            docid="abc123", collection="n", path="a.md", from_line=1, to_line=1, total_lines=1, bytes=2, text="x\n"
        ),
        "multi-get": FileBatch(files=[], skipped=[SkippedFile(path="n/b.md", reason="too large")]),
        "links": LinkReport(
            collection="n",
            path="a.md",
            backlinks=[LinkEntry(collection="n", source="b.md", line=3, target="a.md", written="a", raw="[[a]]")],
        ),
        "related": RelatedReport(
            collection="n",
            path="a.md",
            related=[RelatedNote(collection="n", path="b.md", score=0.5, reasons=["similar"])],
        ),
        "collection remove": 4,
    }
    assert set(samples) == {c.name for c in COMMANDS if c.route} - {"vsearch", "query"}
    for name, sample in samples.items():
        adapter = _adapter(BY_NAME[name])
        assert adapter.validate_json(adapter.dump_json(sample)) == sample, name
