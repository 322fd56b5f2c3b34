"""Links between notes: read as written, resolved as eval/golden/vault-links.yml specifies, kept in the link table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from needle.core.link_table import LinkTable
from needle.core.links import Note, Resolver, aliases_of, as_display_text, find_links
from needle.core.requests import IndexRequest, ListRequest
from needle.core.schema import FILE_ID
from tests.conftest import REPO, make_settings

VAULT = REPO / "eval" / "corpora" / "vault"
SPEC = yaml.safe_load((REPO / "eval" / "golden" / "vault-links.yml").read_text())


def _frontmatter(text: str) -> dict:
    if not text.startswith("---\n"):
        return {}
    try:
        return yaml.safe_load(text[4 : text.index("\n---", 4)]) or {}
    except yaml.YAMLError:
        return {}


@pytest.fixture(scope="module")
def vault() -> tuple[dict[str, str], Resolver]:
    texts = {
        p.relative_to(VAULT).as_posix(): p.read_text(encoding="utf-8")
        for p in VAULT.rglob("*.md")
        if not p.relative_to(VAULT).parts[0].startswith(".")
    }
    notes = [Note(path, tuple(aliases_of(_frontmatter(text)))) for path, text in texts.items()]
    return texts, Resolver(notes)


@pytest.mark.parametrize("entry", SPEC["links"], ids=lambda e: f"{e['source']}:{e['line']}:{e['raw']}")
def test_each_link_of_the_vault_resolves_as_specified(vault, entry) -> None:
    texts, resolver = vault
    found = [
        link for link in find_links(texts[entry["source"]]) if link.line == entry["line"] and link.raw == entry["raw"]
    ]
    assert len(found) == 1, f"{entry['raw']} not read on line {entry['line']}"
    link = found[0]
    got = {
        "target": resolver.resolve(link, entry["source"]),
        "heading": link.heading,
        "block": link.block,
        "embed": link.embed,
        "display": link.display,
    }
    assert got == {key: entry[key] for key in got}


def test_link_syntax_inside_fenced_code_is_not_a_link(vault) -> None:
    texts, _ = vault
    for entry in SPEC["not_links"]:
        assert all(link.line != entry["line"] for link in find_links(texts[entry["source"]])), entry


def test_urls_and_images_are_not_note_links() -> None:
    text = "[site](https://example.org/a.md) ![pic](img/photo.png) [mail](mailto:a@b.c) [ok](other.md)"
    assert [link.target for link in find_links(text)] == ["other.md"]


def test_a_link_reads_as_its_display_text_line_for_line() -> None:
    text = (
        "Ask [[Jakob Hoffmann|Jakob]] about [[Waypoint#Status]] and ![[Inbox]];\n"
        "see [the lab](<../Places/Fotolab Noord.md>), `[[kept]]`. ^block-1\n"
        "```\n[[Note|shown]]\n```"
    )
    assert as_display_text(text) == (
        "Ask Jakob about Waypoint > Status and Inbox;\nsee the lab, `[[kept]]`.\n```\n[[Note|shown]]\n```"
    )


def _needle(tmp_path: Path, model_dir: Path, notes: Path):
    from needle.facade.api import Needle

    needle = Needle(make_settings(tmp_path / "data", model_dir))
    needle.collections.add(notes, "vault")
    needle.index(IndexRequest())
    return needle


def _backlinks(needle, path: str) -> list[tuple[str, int]]:
    table = LinkTable(records_file_of(needle))
    return [(b.source, b.link.line) for b in table.backlinks("vault", path)]


def test_the_link_table_follows_renames_and_deletions(tmp_path: Path, model_dir: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "Recipes").mkdir(parents=True)
    (notes / "Recipes" / "Snert.md").write_text("---\naliases: Dutch pea soup\n---\n# Snert\n\nPeas. ^soak\n")
    (notes / "Home.md").write_text("# Home\n\n[[Snert]] and [[Dutch pea soup|soup]]\n\n[[Snert#^soak|soak]]\n")
    (notes / "Daily.md").write_text("# Daily\n\nMade [soup](Recipes/Snert.md) today, then [[Pancakes]].\n")
    needle = _needle(tmp_path, model_dir, notes)
    try:
        assert _backlinks(needle, "Recipes/Snert.md") == [
            ("Daily.md", 3),
            ("Home.md", 3),
            ("Home.md", 3),
            ("Home.md", 5),
        ]
        # A note that did not exist: the link resolves once it is indexed, without reading Daily.md again.
        (notes / "Pancakes.md").write_text("# Pancakes\n\nFlour, milk, eggs.\n")
        needle.index(IndexRequest())
        assert _backlinks(needle, "Pancakes.md") == [("Daily.md", 3)]
        # The linking note moves: its links move with it (the markdown link, relative to its folder, breaks).
        (notes / "Days").mkdir()
        (notes / "Daily.md").rename(notes / "Days" / "Daily.md")
        needle.index(IndexRequest())
        assert _backlinks(needle, "Recipes/Snert.md") == [("Home.md", 3), ("Home.md", 3), ("Home.md", 5)]
        assert _backlinks(needle, "Pancakes.md") == [("Days/Daily.md", 3)]
        # The target is deleted: nothing resolves to it, and the links are kept as unresolved.
        (notes / "Recipes" / "Snert.md").unlink()
        needle.index(IndexRequest())
        table = LinkTable(records_file_of(needle))
        assert [(x.link.raw, x.target) for x in table.outgoing("vault", "Home.md")] == [
            ("[[Snert]]", None),
            ("[[Dutch pea soup|soup]]", None),
            ("[[Snert#^soak|soak]]", None),
        ]
    finally:
        needle.close()


def records_file_of(needle) -> Path:
    from needle.core.file_records import records_file

    return records_file(needle.settings)


def test_tool_folders_are_not_notes_and_tags_are_one_set(tmp_path: Path, model_dir: Path) -> None:
    notes = tmp_path / "vault"
    shutil.copytree(VAULT / "Recipes", notes / "Recipes")
    for folder in (".obsidian", ".trash", ".logseq", "logseq/bak"):
        (notes / folder).mkdir(parents=True)
        (notes / folder / "note.md").write_text("# A tool's copy\n\n#leaked\n")
    (notes / "Tagged.md").write_text("---\ntags: [Soup, dutch]\n---\n# Tagged\n\nA #winter note about #soup.\n")
    needle = _needle(tmp_path, model_dir, notes)
    try:
        paths = {f.path for f in needle.ls(ListRequest())}
        assert paths and all(p.startswith("Recipes/") or p == "Tagged.md" for p in paths)
        hits = needle.store.filter_documents({"field": "meta.path", "operator": "==", "value": "Tagged.md"})
        assert hits and set(hits[0].meta["tags"]) == {"soup", "dutch", "winter"}
    finally:
        needle.close()


def test_needle_links_prints_both_ways_with_line_anchors(tmp_path: Path, model_dir: Path, monkeypatch, capsys) -> None:
    from needle.shells.cli import main

    notes = tmp_path / "notes"
    (notes / "People").mkdir(parents=True)
    (notes / "People" / "Lotte de Vries.md").write_text("---\naliases: [Lotte]\n---\n# Lotte de Vries\n\nSRE.\n")
    (notes / "Home.md").write_text("# Home\n\nAsk [[Lotte de Vries|Lotte]] or [[Lotte]]; [[Nobody]] knows.\n")
    _needle(tmp_path, model_dir, notes).close()
    monkeypatch.setenv("NEEDLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("NEEDLE_MODEL_DIR", str(model_dir))
    assert main(["links", "Lotte"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "vault/People/Lotte de Vries.md",
        "links (0):",
        "  none",
        "backlinks (2):",
        "  vault/Home.md:3\t[[Lotte de Vries|Lotte]]",
        "  vault/Home.md:3\t[[Lotte]]",
    ]
    assert main(["links", "vault/Home.md", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(o["line"], o["target"], o["display"]) for o in report["outgoing"]] == [
        (3, "People/Lotte de Vries.md", "Lotte"),
        (3, "People/Lotte de Vries.md", "Lotte"),
        (3, None, "Nobody"),
    ]
    assert main(["links", "Nobody"]) == 2
    assert "no indexed note 'Nobody'" in capsys.readouterr().err


def test_self_query_reads_notes_linking_to_an_alias_as_that_notes_backlinks(tmp_path: Path) -> None:
    from haystack_integrations.components.query.needle.self_query_extractor import SelfQueryExtractor

    table = LinkTable(tmp_path / "files.sqlite")
    table.put_notes(
        [
            ("vault", "Recipes/Snert.md", ["Dutch pea soup"], []),
            ("vault", "Home.md", [], find_links("[[Snert]]")),
            ("vault", "Daily.md", [], find_links("some\n[[Dutch pea soup|soup]]")),
            ("vault", "Other.md", [], find_links("[[Home]]")),
        ]
    )
    extractor = SelfQueryExtractor(records_path=str(tmp_path / "files.sqlite"))
    out = extractor.run(query="notes linking to the Dutch pea soup recipe")
    assert out["filters"] == {
        "field": f"meta.{FILE_ID}",
        "operator": "in",
        "value": ["vault:Daily.md", "vault:Home.md"],
    }
    assert out["self_query"]["filters"]["linked_from"] == ["vault:Daily.md", "vault:Home.md"]
    assert extractor.run(query="what links to Tokyo?")["filters"] is None
    assert extractor.run(query="how long does the Dutch pea soup simmer")["filters"] is None


def test_needle_related_gives_each_note_its_reasons(tmp_path: Path, model_dir: Path, monkeypatch, capsys) -> None:
    from needle.shells.cli import main

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "Harbor.md").write_text("# Harbor\n\nMoving to Kafka: see [[Outbox]] and [[Idempotency]].\n")
    (notes / "Outbox.md").write_text("# Outbox\n\nWrite the event in the same transaction. [[Harbor]] uses it.\n")
    (notes / "Idempotency.md").write_text("# Idempotency\n\nA dedupe table keyed by message id.\n")
    (notes / "Review.md").write_text("# Review\n\nWe discussed [[Outbox]] and [[Idempotency]] for consumers.\n")
    (notes / "Snert.md").write_text("# Snert\n\nSplit pea soup with a pork hock, rested overnight.\n")
    _needle(tmp_path, model_dir, notes).close()
    monkeypatch.setenv("NEEDLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("NEEDLE_MODEL_DIR", str(model_dir))
    assert main(["related", "Harbor", "--json"]) == 0
    related = {note["path"]: note for note in json.loads(capsys.readouterr().out)["related"]}
    assert related["Outbox.md"]["reasons"] == ["links here", "linked from here", "similar"]
    assert related["Idempotency.md"]["reasons"][0] == "linked from here"
    assert related["Review.md"]["reasons"][0] == "shares 2 links"
    assert related["Snert.md"]["reasons"] == ["similar"]
    order = list(related)
    assert (order[0], order[-1]) == ("Outbox.md", "Snert.md")
    assert main(["related", "Harbor", "-n", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("vault/Outbox.md\tlinks here, linked from here, similar")


def test_an_alias_finds_its_note_in_every_search_mode(tmp_path: Path, model_dir: Path) -> None:
    from needle.core.requests import SearchRequest

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "Work MOC.md").write_text(
        "---\naliases: [Tidewater]\n---\n# Work map\n\nProjects, people and the weekly planning notes.\n"
    )
    (notes / "Garden.md").write_text("# Garden\n\nTomatoes need staking in June; water the beans at dawn.\n")
    (notes / "Boat.md").write_text("# Boat\n\nCheck the bilge pump and the anchor chain before the season.\n")
    (notes / "Reading.md").write_text("# Reading\n\nNovels finished this year, and the ones left on the shelf.\n")
    needle = _needle(tmp_path, model_dir, notes)
    try:
        for mode in ("search", "vsearch", "query"):
            answer = needle.search(SearchRequest(query="Tidewater", limit=3), mode)
            assert answer.results and answer.results[0].path == "Work MOC.md", mode
    finally:
        needle.close()
