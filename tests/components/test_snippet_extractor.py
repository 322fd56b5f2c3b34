import pytest
from haystack import Document

from haystack_integrations.components.extractors.needle.snippet_extractor import SnippetExtractor

TEXT = "\n".join(
    [
        "# Title",
        "",
        "intro line",
        "",
        "filler about nothing",
        "",
        "the replication slot lags",
        "",
        "more filler",
        "",
        "end",
    ]
)


def chunk(text: str = TEXT, start_line: int = 10, **meta) -> Document:
    return Document(content=text, meta={"start_line": start_line, "collection": "notes", "path": "ops/r.md", **meta})


def body(doc: Document) -> list[str]:
    """The snippet's lines without its `@@` lines."""
    return [line for line in doc.meta["snippet"].split("\n") if not line.startswith("@@ ")]


def headers(doc: Document) -> list[str]:
    return [line for line in doc.meta["snippet"].split("\n") if line.startswith("@@ ")]


def snip(text: str, query: str, **params) -> Document:
    return SnippetExtractor(**params).run([chunk(text)], query=query)["documents"][0]


class TestSnippetExtractor:
    def test_defaults_bad_params_round_trip(self):
        extractor = SnippetExtractor()
        assert (extractor.max_lines, extractor.context_lines, extractor.max_chars) == (10, 2, None)
        with pytest.raises(ValueError):
            SnippetExtractor(max_lines=0)
        with pytest.raises(ValueError):
            SnippetExtractor(context_lines=-1)
        with pytest.raises(ValueError, match="max_chars"):
            SnippetExtractor(max_chars=0)
        data = SnippetExtractor(5, 1, 300).to_dict()
        assert SnippetExtractor.from_dict(data).to_dict() == data

    def test_the_unit_with_the_query_words_wins_with_file_line_numbers(self):
        doc = snip(TEXT, "replication slot", max_chars=30)
        # the 7th line of the chunk is file line 16
        assert doc.meta["snippet"] == "@@ -16,1 +16,1 @@ notes/ops/r.md\nthe replication slot lags"
        assert (doc.meta["snippet_line"], doc.meta["snippet_lines"]) == (16, 1)

    def test_neighbouring_units_follow_while_they_fit(self):
        doc = snip(TEXT, "replication slot", max_chars=40)
        assert body(doc) == ["the replication slot lags", "", "more filler"]

    def test_a_table_row_comes_with_the_table_header(self):
        fruit = ["apple", "pear", "plum", "fig", "kiwi", "lime", "mango", "peach"]
        rows = [f"| {n} | {name} | {n}0 ct |" for n, name in enumerate(fruit, 1)]
        text = "\n".join(["Prices:", "", "| id | fruit | price |", "|----|-------|-------|", *rows])
        doc = snip(text, "what does a mango cost", max_lines=4)
        assert body(doc) == [
            "| id | fruit | price |",
            "|----|-------|-------|",
            "| 7 | mango | 70 ct |",
            "| 8 | peach | 80 ct |",
        ]
        assert headers(doc) == ["@@ -12,2 +12,2 @@ notes/ops/r.md", "@@ -20,2 +20,2 @@ notes/ops/r.md"]
        assert doc.meta["snippet_lines"] == 4

    def test_a_list_item_comes_with_the_line_leading_the_list_in(self):
        items = ["- the ledger is append-only", "- amounts in integer minor units", "- Postgres 15, not DynamoDB"]
        text = "\n".join(["Background on the old system.", "", "Agreed:", *items])
        doc = snip(text, "which database did we pick, Postgres or Dynamo?", max_lines=2)
        assert body(doc) == ["Agreed:", "- Postgres 15, not DynamoDB"]

    def test_the_items_either_side_of_the_answering_item_take_turns(self):
        # Filling the snippet with the items after the answer first would leave out the item just before it.
        items = ["1. feed it stiff the evening before", "2. leave it out an hour", "3. into the fridge", "4. on return"]
        text = "\n".join(["Up to two weeks:", *items, "5. bake", "6. discard", "7. feed twice"])
        doc = snip(text, "leave it out", max_lines=4)
        assert body(doc) == ["Up to two weeks:", items[0], items[1], items[2]]

    def test_a_neighbour_too_long_to_show_whole_shows_its_lines_with_the_query_words(self):
        config = ["```ini", "[tidewise]", "host = 203.0.113.47", "user = deploy", "port = 4722", "key = id_tide", "```"]
        text = "\n".join(["My ssh entries:", *config, "", "The server listens on a non-standard port because of bots."])
        doc = snip(text, "which port is the ssh server on", max_lines=5)
        assert "port = 4722" in body(doc)
        assert body(doc)[-1] == "The server listens on a non-standard port because of bots."

    def test_a_code_block_comes_with_the_line_introducing_it(self):
        text = "\n".join(
            [
                "Prose first.",
                "",
                "Local forward, reach the database as if local:",
                "",
                "```bash",
                "ssh -N -L 15432:localhost:5432 db",
                "```",
            ]
        )
        shown = body(snip(text, "reach the database through a tunnel", max_chars=120))
        start = shown.index("Local forward, reach the database as if local:")
        assert shown[start + 1 :] == ["", "```bash", "ssh -N -L 15432:localhost:5432 db", "```"]

    def test_a_long_code_block_shows_the_best_line_with_what_it_sits_under(self):
        hosts = [
            line
            for n in range(6)
            for line in (f"Host box{n}", f"    HostName 10.0.0.{n}", f"    User u{n}", f"    Port 22{n}")
        ]
        text = "\n".join(
            [
                "```",
                *hosts[:8],
                "Host tidewise",
                "    HostName 203.0.113.47",
                "    User deploy",
                "    Port 4722",
                *hosts[8:],
                "```",
            ]
        )
        doc = snip(text, "which port do I ssh into the tidewise server on", max_lines=4)
        assert body(doc) == ["Host tidewise", "    HostName 203.0.113.47", "    User deploy", "    Port 4722"]

    def test_a_line_longer_than_max_chars_shows_its_best_sentences(self):
        line = (
            "The cache expired at noon. " * 8
            + "Only one caller per pod rebuilds; the others wait. "
            + "Then it settled. " * 8
        )
        doc = snip(line.strip(), "how many callers rebuild per pod", max_chars=120)
        (shown,) = body(doc)
        assert "Only one caller per pod rebuilds;" in shown and shown.startswith("… ") and shown.endswith(" …")
        assert len(shown) <= 124

    def test_without_a_match_the_first_unit_shows_not_the_title(self):
        doc = snip(TEXT, "zzz", max_chars=15)
        assert body(doc) == ["intro line"]

    def test_the_notes_own_heading_loses_to_a_line_that_answers(self):
        text = "# Käsespätzle (für 4)\n\nTeig: 500 g Mehl, 5 Eier.\n\nKäse: 300 g, halb Bergkäse, halb Emmentaler."
        doc = SnippetExtractor(max_chars=60).run(
            [chunk(text, title="Käsespätzle")], query="Wie viel Käse für Käsespätzle?"
        )
        assert body(doc["documents"][0]) == ["Käse: 300 g, halb Bergkäse, halb Emmentaler."]

    def test_a_section_heading_ends_the_snippet(self):
        text = "## Went well\n\n- zero discrepancies\n\n## Did not go well\n\n- the backfill took 3 nights"
        assert body(snip(text, "what went wrong with the backfill")) == ["- the backfill took 3 nights"]

    def test_the_sections_heading_comes_along_when_it_names_what_was_asked(self):
        text = "# Postgres\n\n## Replication slots\n\nA slot keeps WAL until the subscriber confirms it."
        assert body(snip(text, "slot wal confirms")) == [
            "## Replication slots",
            "",
            "A slot keeps WAL until the subscriber confirms it.",
        ]
        assert body(snip(text, "when does wal go away")) == ["A slot keeps WAL until the subscriber confirms it."]

    def test_the_next_best_chunks_answering_unit_follows_as_a_hunk_of_its_own(self):
        other = "## Monitoring\n\nAlert when the slot is inactive.\n\n- retained WAL above 5 GB pages the on-call"
        also = [{"start_line": 40, "end_line": 44, "content": other, "answer_line": 4}]
        doc = SnippetExtractor().run([chunk(TEXT, answer_line=6, answer_also=also)], query="slot lags")["documents"][0]
        hunks = doc.meta["snippet"].split("\n@@ ")
        assert hunks[-1] == "-44,1 +44,1 @@ notes/ops/r.md\n- retained WAL above 5 GB pages the on-call"
        assert "answer_also" not in doc.meta and doc.meta["snippet_lines"] == len(body(doc))
        full = SnippetExtractor(max_lines=1).run([chunk(TEXT, answer_line=6, answer_also=also)], query="slot lags")
        assert body(full["documents"][0]) == ["the replication slot lags"]

    def test_max_lines_and_max_chars_bound_the_snippet(self):
        text = "\n".join(f"- item {n} about the replication slot" for n in range(30))
        doc = snip(text, "replication slot", max_lines=4)
        assert doc.meta["snippet_lines"] == 4
        doc = snip(text, "replication slot", max_chars=70)
        assert sum(len(line) + 1 for line in body(doc)) <= 71

    def test_a_word_stem_finds_the_line(self):
        text = "# Certificates\n\nThe cron job runs nightly.\n\nRenewal happens through certbot's timer."
        assert body(snip(text, "renewing", max_chars=45)) == ["Renewal happens through certbot's timer."]

    def test_a_short_word_is_not_found_inside_another(self):
        text = "Gießen: jeden Abend.\n\n| 3 | Mangold | Direktsaat April |"
        assert body(snip(text, "Wann säe ich den Mangold?", max_lines=1)) == ["| 3 | Mangold | Direktsaat April |"]

    def test_the_line_an_earlier_stage_found_is_the_one_shown(self):
        doc = SnippetExtractor(max_chars=12).run([chunk(TEXT, answer_line=8)], query="zzz")["documents"][0]
        assert body(doc) == ["more filler"]

    def test_lines_match_the_file_on_disk(self, tmp_path):
        lines = [f"line {i}" for i in range(1, 41)]
        lines[24] = "the needle is here"
        (tmp_path / "f.md").write_text("\n".join(lines))
        text = "\n".join(lines[19:30])  # a chunk holding file lines 20..30
        doc = SnippetExtractor(max_lines=3).run([chunk(text, start_line=20)], query="needle")["documents"][0]
        header = headers(doc)[0]
        start = int(header.split()[1].split(",")[0][1:])
        assert body(doc) == lines[start - 1 : start - 1 + len(body(doc))]
        assert "the needle is here" in body(doc)


class TestSnippetAnchors:
    def test_a_pdf_chunk_names_its_page_and_lines_within_it(self):
        doc = chunk(TEXT, start_line=40, collection="papers", path="raft.pdf", format="pdf", page=3, page_line=10)
        out = SnippetExtractor(max_chars=30).run([doc], query="replication slot")["documents"][0]
        assert out.meta["snippet"].split("\n")[0] == "@@ page 3 -16,1 +16,1 @@ papers/raft.pdf"
        assert out.meta["snippet_line"] == 46

    def test_a_docx_or_html_chunk_names_its_section(self):
        doc = chunk(
            TEXT, collection="specs", path="deploy.docx", format="docx", heading_path=["Deploy", 'The "canary"']
        )
        out = SnippetExtractor(max_chars=30).run([doc], query="replication slot")["documents"][0]
        assert (
            out.meta["snippet"].split("\n")[0]
            == '@@ section "Deploy › The \\"canary\\"" -16,1 +16,1 @@ specs/deploy.docx'
        )

    def test_markdown_headers_are_unchanged_by_a_heading_path(self):
        out = SnippetExtractor(max_chars=30).run([chunk(TEXT, heading_path=["Title"])], query="replication slot")
        assert out["documents"][0].meta["snippet"].split("\n")[0] == "@@ -16,1 +16,1 @@ notes/ops/r.md"
