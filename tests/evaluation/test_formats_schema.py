"""docs/evaluation.md's schemas of the golden files and of the ragas report's answers hold for the real files."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import yaml

from needle.evaluation.golden import GoldenError, parse_golden
from tests.evaluation.conftest import REPO

DOC = REPO / "docs" / "evaluation.md"


def schemas() -> dict[str, dict]:
    """The JSON schemas of docs/evaluation.md, by title."""
    found = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", DOC.read_text(), re.S)]
    return {schema["title"]: schema for schema in found if "$schema" in schema}


GOLDEN = "Needle golden file"
ANSWERS = "needle eval ragas --llm: answers"
# The golden files `needle eval golden` reads (self-query-traps.yml is eval/self_query's own format).
GOLDEN_FILES = sorted(
    p
    for p in (REPO / "eval" / "golden").glob("*.yml")
    if "queries" in yaml.safe_load(p.read_text()) and p.name != "self-query-traps.yml"
)


def as_json(value):
    """A parsed YAML file as JSON has it (dates as ISO text)."""
    return json.loads(json.dumps(value, default=str))


def test_the_page_holds_both_schemas():
    assert {GOLDEN, ANSWERS} <= set(schemas())
    for schema in schemas().values():
        jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda p: p.name)
def test_every_golden_file_follows_the_documented_schema(path):
    jsonschema.validate(as_json(yaml.safe_load(path.read_text())), schemas()[GOLDEN])


@pytest.mark.parametrize(
    "change",
    [{"difficulty": "trivial"}, {"modes": []}, {"colour": "blue"}, {"expected": "a.md"}],
    ids=["difficulty", "modes", "unknown key", "expected"],
)
def test_what_the_schema_refuses_the_loader_refuses(change, tmp_path):
    data = yaml.safe_load((REPO / "eval" / "golden" / "answers.yml").read_text())
    data["queries"][0].update(change)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(as_json(data), schemas()[GOLDEN])
    with pytest.raises(GoldenError):
        parse_golden(data, REPO / "eval" / "golden" / "answers.yml", check_files=False)
