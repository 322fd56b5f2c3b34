"""Fixtures of the evaluation tests: the repository's golden set, and its report on the demo index."""

from __future__ import annotations

from pathlib import Path

import pytest

from needle.evaluation import golden as golden_eval

REPO = Path(__file__).resolve().parents[2]
GOLDEN_FILE = REPO / "eval" / "golden" / "demo.yml"
THRESHOLDS_FILE = REPO / "eval" / "golden" / "thresholds.yml"


@pytest.fixture(scope="session")
def golden_set() -> golden_eval.GoldenSet:
    """The golden queries over the bundled demo notes."""
    return golden_eval.load_golden(GOLDEN_FILE)


@pytest.fixture(scope="session")
def golden_report(demo_needle, golden_set) -> dict:
    """Every mode scored on the golden set over the session's demo index, with the repository's thresholds checked."""
    thresholds = golden_eval.load_thresholds(THRESHOLDS_FILE)
    return golden_eval.evaluate_golden(demo_needle, golden_set, golden_eval.MODES, thresholds=thresholds)
