"""SKILL.md, the agent skill that teaches the CLI: every command and flag it names is one `needle` accepts."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest
import yaml

from needle.shells.cli import _parser

SKILL = Path(__file__).resolve().parent.parent / "SKILL.md"


def parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parser and every subcommand's, depth first."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += parsers(sub)
    return found


def subcommand(name: str) -> argparse.ArgumentParser:
    """The parser of one `needle` command."""
    top = _parser()
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices[name]


def parse(words: list[str]) -> argparse.Namespace:
    try:
        return _parser().parse_args(words)
    except SystemExit:
        pytest.fail(f"needle refuses: {' '.join(words)}")


@pytest.fixture(scope="module")
def text() -> str:
    return SKILL.read_text(encoding="utf-8")


def test_frontmatter_names_and_describes_the_skill(text):
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, "SKILL.md opens with YAML frontmatter"
    meta = yaml.safe_load(match.group(1))
    assert re.fullmatch(r"[a-z0-9-]{1,64}", meta["name"])
    assert 50 < len(meta["description"]) <= 1024 and "needle" in meta["description"]


def test_it_stays_a_few_hundred_tokens(text):
    assert len(text) < 3600, f"{len(text)} characters, about {len(text) // 4} tokens"


def test_every_command_in_its_examples_parses(text):
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    commands = [shlex.split(line, comments=True) for block in blocks for line in block.splitlines()]
    commands = [words for words in commands if words]
    assert len(commands) >= 10 and all(words[0] == "needle" for words in commands)
    for words in commands:
        parse(words[1:])


def test_every_flag_it_names_exists_and_takes_the_value_shown(text):
    options = {option for p in parsers(_parser()) for action in p._actions for option in action.option_strings}
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    spans = [span for span in re.findall(r"`([^`\n]+)`", prose) if span.startswith("-")]
    named = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", text))
    assert named - options == set()
    # Spans with a value are parsed as a query would take them; a bare flag that takes a value only has to exist.
    takes_value = {o: a.nargs != 0 for a in subcommand("query")._actions for o in a.option_strings}
    for span in spans:
        words = shlex.split(span)
        if words[0] in takes_value and (len(words) > 1 or not takes_value[words[0]]):
            parse(["query", "a question", *words])
    assert len(spans) >= 10
