"""A corpus of hostile files, generated at test time: one `needle index` run indexes every note it can, skips
each of the others with a reason, stays bounded (an alias bomb, a nesting bomb, a huge file, a FIFO that would
block a reader), and `get` / `multi-get` serve exactly what the collection includes.

Each class of file comes from a probe that once stopped or stalled a run; the run here goes through the real
CLI in a process of its own, as a user's shell would run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from needle.evaluation.memory import run_measured

pytestmark = pytest.mark.integration

ALIAS_BOMB = (
    "---\na: &a [x,x,x,x,x,x,x,x,x]\n"
    + "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n" for prev, name in zip("abcdefgh", "bcdefghi"))
    + "---\n# Bomb\n\nThe alias bomb note talks about pineapples.\n"
)

# (file name as bytes, content, what the run must say of it: None = indexed, "skip:<reason>" or "warn:<reason>")
CORPUS: list[tuple[bytes, bytes, str | None]] = [
    (b"good.md", b"# Good note\n\nThe quarterly budget review happens on the first Monday.\n", None),
    (b"bad-\xff\xfe-name.md", b"# Latin-1 name\n\nZebra crossings.\n", "skip:not valid UTF-8"),
    (b"bomb.md", ALIAS_BOMB.encode(), "warn:aliases"),
    (
        b"deep.md",
        b"---\nx: " + b"[" * 5000 + b"]" * 5000 + b"\n---\n# Deep\n\nNested frontmatter about walruses.\n",
        "warn:frontmatter",
    ),
    (b"binary.md", bytes(range(256)) * 16, "skip:binary"),
    (b"latin1.md", "# Café\n\nCrème brûlée with caramel.\n".encode("latin-1"), "warn:invalid UTF-8"),
    (b"bom-crlf.md", "\ufeff# Kangaroos\r\n\r\nWindows line endings about kangaroos.\r\n".encode(), None),
    (b"empty.md", b"", "skip:empty"),
    (b"x" * 250 + b".md", b"# Long name\n\nA very long file name about lighthouses.\n", None),
    (b"huge.md", b"# Huge\n\n" + b"word " * 1_100_000, "skip:too large"),
    (b"ctrl\x01char.md", b"# Control\n\nA name with a control character, about narwhals.\n", None),
    # Names that would clear the screen or rewrite the line they are printed on.
    (b"esc\x1b[2Jclear.md", b"# Escape\n\nA name with an escape sequence, about manatees.\n", None),
    (b"cr\rover.md", b"# Return\n\nA name with a carriage return, about axolotls.\n", None),
    (b"esc\x1b]0;empty.md", b"", "skip:empty"),
    # Frontmatter values that scan but cannot be built: each costs its field, never the run.
    (
        b"bad-date.md",
        b"---\ndate: 2024-13-45\n---\n# Bad date\n\nA note about otters.\n",
        "warn:month must be in 1..12",
    ),
    (b"bad-int.md", b"---\nprio: !!int high\n---\n# Bad int\n\nA note about herons.\n", "warn:frontmatter field prio"),
    (b"digits.md", b"---\nn: " + b"7" * 5000 + b"\n---\n# Digits\n\nA note about capybaras.\n", "warn:4300 digits"),
    (b"clock.md", b"---\ndate: 2024-01-01 25:61:61\n---\n# Clock\n\nA note about pelicans.\n", "warn:hour must be"),
    # Within every size limit (a few MB on disk), minutes and gigabytes to convert without a bound.
    (b"costly.docx", b"", "skip:its text was not extracted"),
]
PEAK_MB_BOUND = (
    2048  # the largest process of the run (models loaded, or a converter child): the DOCX alone took 3.6 GB unbounded
)


def in_process(data: Path, model_dir: Path, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """Run `needle ...` in this process (the models stay loaded between calls): (exit code, stdout, stderr)."""
    from needle.shells.cli import main

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NEEDLE_DATA_DIR", str(data))
        patch.setenv("NEEDLE_MODEL_DIR", str(model_dir))
        code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def needle(data: Path, model_dir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "NEEDLE_DATA_DIR": str(data),
        "NEEDLE_MODEL_DIR": str(model_dir),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    return subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, model_dir: Path):
    root = tmp_path_factory.mktemp("hostile")
    notes = root / "notes"
    notes.mkdir()
    raw = os.fsencode(notes)
    for name, content, _ in CORPUS:
        if name == b"costly.docx":
            from needle.evaluation.sample_documents import costly_docx_bytes

            content = costly_docx_bytes(300_000)
        with open(raw + b"/" + name, "wb") as handle:
            handle.write(content)
    os.mkfifo(notes / "fifo.md")
    (notes / "folder.md").mkdir()
    (notes / "passwd.md").symlink_to("/etc/passwd")
    (notes / "dangling.md").symlink_to("missing-target.md")
    (notes / "loop").symlink_to(notes, target_is_directory=True)
    (notes / ".git").mkdir()
    (notes / ".git" / "config").write_text("[core]\n")
    (notes / ".env").write_text("SECRET=1\n")
    data = root / "data"
    assert needle(data, model_dir, "collection", "add", str(notes), "--name", "h", "--documents").returncode == 0
    # The peak memory of the largest process of the run, the converter's children included.
    env = {
        **os.environ,
        "NEEDLE_DATA_DIR": str(data),
        "NEEDLE_MODEL_DIR": str(model_dir),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    # Two seconds: far below what converting the costly DOCX takes on any machine (tens of seconds), so it is
    # skipped by its time bound however fast the machine is; at 20 s a quiet machine converted it and the run
    # went on to embed its 300,000 paragraphs.
    done = run_measured(
        [sys.executable, "-m", "needle.shells.cli", "index", "--json", "--set", "converter.max_seconds=2"], env=env
    )
    run = subprocess.CompletedProcess([], done.returncode, done.stdout, done.stderr)
    return data, run, done.peak_process_mb


def test_one_run_indexes_every_note_it_can_and_reports_each_other_with_a_reason(hostile, model_dir):
    _, run, _ = hostile
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    said = {item["path"]: item["reason"] for item in report["skipped"]}
    warned = {item["path"]: item["reason"] for item in report["warnings"]}
    for name, _, verdict in CORPUS:
        path = name.decode("utf-8", "backslashreplace")  # how reports show a name that is not UTF-8
        if verdict is None:
            assert path not in said, said.get(path)
            continue
        kind, _, reason = verdict.partition(":")
        where = said if kind == "skip" else warned
        assert reason.lower() in where.get(path, "").lower(), (path, where)
    assert said.get("fifo.md") and said.get("passwd.md") and said.get("dangling.md")
    assert not any(p.startswith((".git", ".env")) for p in [*said, *warned])


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("quarterly budget review", "good.md"),
        ("pineapples", "bomb.md"),
        ("walruses", "deep.md"),
        ("kangaroos line endings", "bom-crlf.md"),
        ("lighthouses", "x" * 250 + ".md"),
        ("narwhals", "ctrl\x01char.md"),
        ("manatees", "esc\x1b[2Jclear.md"),
        ("axolotls", "cr\rover.md"),
        ("otters", "bad-date.md"),
        ("herons", "bad-int.md"),
        ("capybaras", "digits.md"),
        ("pelicans", "clock.md"),
    ],
)
def test_the_notes_next_to_hostile_files_are_searchable(hostile, model_dir, capsys, query, path):
    data, _, _ = hostile
    code, out, err = in_process(data, model_dir, capsys, "search", query, "--json", "-n", "3")
    assert code == 0, err
    assert json.loads(out)["results"][0]["path"] == path


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("h/.env", "hidden"),
        ("h/.git/config", "hidden"),
        ("h/passwd.md", "outside"),
        ("h/fifo.md", "not a regular file"),
        ("h/huge.md", "max_file_bytes"),
        ("h/" + "y" * 300 + ".md", ""),
        ("h/../../etc/passwd", ".."),
        ("h/loop/good.md", ""),
    ],
)
def test_get_serves_only_what_the_collection_includes(hostile, model_dir, capsys, ref, reason):
    data, _, _ = hostile
    code, out, err = in_process(data, model_dir, capsys, "get", ref)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert reason in err


def test_a_pathological_glob_ends_fast_and_serves_no_hidden_file(hostile, model_dir):
    data, _, _ = hostile
    many = needle(data, model_dir, "multi-get", "h/" + "**/" * 12 + "*x", timeout=120)
    assert many.returncode in (0, 2) and "Traceback" not in many.stderr
    every = needle(
        data, model_dir, "multi-get", "h/**/*.md", "--json"
    )  # the notes (a costly DOCX would use the time budget)
    assert every.returncode == 0, every.stderr
    served = [item.get("path", "") for item in json.loads(every.stdout)["files"]]
    assert "good.md" in served
    assert not any(p.startswith(".") or "/." in p or p in ("passwd.md", "fifo.md") for p in served)


def test_the_run_stays_within_its_memory_bound_and_accounts_for_every_file(hostile):
    _, run, peak_mb = hostile
    costly = next(item for item in json.loads(run.stdout)["skipped"] if item["path"] == "costly.docx")
    print(f"peak memory of the largest process of the hostile run: {peak_mb} MB; costly.docx: {costly['reason']}")
    assert peak_mb < PEAK_MB_BOUND
    assert not any(c in run.stderr for c in ("\x1b", "\r")), run.stderr[-2000:]  # its warnings name files escaped
    report = json.loads(run.stdout)
    assert report["files_seen"] == (
        report["files_read"] + report["files_skipped_by_stat"] + report["files_not_read"] + report["files_vanished"]
    )


@pytest.mark.parametrize(
    "args", [["ls"], ["search", "manatees axolotls", "--format", "files"], ["multi-get", "h/esc*"], ["status"]]
)
def test_names_reach_the_terminal_escaped(hostile, model_dir, capsys, args):
    data, _, _ = hostile
    code, out, err = in_process(data, model_dir, capsys, *args)
    assert code in (0, 2), err
    assert not any(c in out + err for c in ("\x1b", "\r", "\x01")), out
    if args[0] in ("ls", "multi-get"):
        assert "esc\\u001b[2Jclear.md" in out


def test_json_keeps_the_names_exact(hostile, model_dir, capsys):
    data, _, _ = hostile
    code, out, _ = in_process(data, model_dir, capsys, "ls", "--json")
    assert code == 0
    paths = {f["path"] for f in json.loads(out)}
    assert {"esc\x1b[2Jclear.md", "cr\rover.md"} <= paths
