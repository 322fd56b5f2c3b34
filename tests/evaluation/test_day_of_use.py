"""The day-of-use benchmark's pieces that need no owner: its stream of edits and its table per step."""

from __future__ import annotations

from pathlib import Path

from eval.day_of_use import edit, summary


def test_the_stream_of_edits_adds_changes_and_deletes_notes(tmp_path: Path):
    notes = tmp_path / "notes"
    for number in range(60):
        (notes / "old").mkdir(parents=True, exist_ok=True)
        (notes / "old" / f"n{number:02d}.md").write_text(f"# Note {number}\n")
    for number in range(5):
        edit(notes, number)
    added = sorted(p.name for p in (notes / "day").iterdir())
    assert added == ["note-0003.md"]  # 0 and 3 added, 0 deleted again at 2 (3 goes at 5)
    assert sum("Edited during the day" in p.read_text() for p in notes.rglob("*.md")) == 2


def test_the_table_gives_each_step_its_last_and_largest_sample():
    samples = [
        {"t": 0.0, "step": "index", "pid": 1, "owner": "background", "rss": 300, "anon": 200},
        {"t": 1.0, "step": "index", "pid": 1, "owner": "background", "rss": 600, "anon": 500},
        {"t": 2.0, "step": "index", "pid": 1, "owner": "background", "rss": 450, "anon": 350},
        {"t": 3.0, "step": "queries", "pid": 2, "owner": "watch", "rss": 500, "anon": 260},
    ]
    rows = summary(samples)
    assert [r["step"] for r in rows] == ["index", "queries"]
    assert rows[0]["RSS at its end MB (anon)"] == "450 (350)" and rows[0]["most RSS MB (anon)"] == "600 (500)"
    assert rows[0]["seconds"] == 2.0 and rows[1]["owner"] == "watch"
