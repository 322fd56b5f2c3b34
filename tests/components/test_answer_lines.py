from haystack_integrations.components.needle._answer_lines import Unit, holds, scores, terms, units

NOTE = [
    "# Kickoff",  # 0
    "",
    "Agreed:",  # 2
    "- Postgres 15, not DynamoDB",  # 3
    "  (the team knows it)",  # 4
    "- amounts in minor units",  # 5
    "",
    "| id | name |",  # 7
    "|----|------|",
    "| 1 | ledger |",  # 9
    "",
    "Run this:",  # 11
    "```bash",  # 12
    "make migrate",
    "```",  # 14
    "A paragraph",  # 15
    "that wraps.",
]


class TestUnits:
    def test_a_note_reads_as_whole_units_with_what_makes_them_readable(self):
        assert units(NOTE) == [
            Unit(0, 0, "heading"),
            Unit(2, 2, "prose"),
            Unit(3, 4, "item", (2,)),
            Unit(5, 5, "item", (2,)),
            Unit(9, 9, "table", (7, 8)),
            Unit(11, 11, "prose"),
            Unit(12, 14, "code", (11,)),
            Unit(15, 16, "prose"),
        ]

    def test_a_nested_item_carries_its_parent(self):
        lines = ["Steps:", "- build", "  - with cache", "- ship"]
        assert units(lines)[2] == Unit(2, 2, "item", (0, 1))


class TestTerms:
    def test_words_worth_finding_in_three_languages(self):
        assert terms("Wie viel kostet die neue Kfz-Versicherung?") == [
            "kostet",
            "neue",
            "kfz-versicherung",
            "kfz",
            "versicherung",
        ]
        assert terms("Combien de temps au four pour la tarte ?") == ["temps", "four", "tarte"]
        assert terms("予算会議は月曜日") == ["予算", "算会", "会議", "議は", "は月", "月曜", "曜日"]

    def test_a_term_is_a_word_with_at_most_three_more_letters(self):
        assert holds("two slots left", "slot") and holds("rebuilding", "rebuild") and holds("pg_dumpall", "pg_dump")
        assert not holds("jeden abend", "den") and not holds("käsespätzle", "käse")
        assert holds("renewal timer", "renew", stem=True)

    def test_the_rarest_words_win_and_the_notes_own_heading_counts_little(self):
        lines = ["# Mochi blood test", "", "Mochi is 4 now.", "", "| value | result |", "|---|---|", "| SDMA | 15 |"]
        found = units(lines)
        ranked = scores(lines, found, "what was Mochi's SDMA value?", title="Mochi, blood test")
        assert max(range(len(found)), key=lambda i: ranked[i]) == [u.first for u in found].index(6)
