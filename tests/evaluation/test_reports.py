import json
import math

from needle.evaluation.reports import without_nan


def test_nan_becomes_null_everywhere_and_the_rest_stays():
    report = {"a": math.nan, "b": [1.0, math.nan, {"c": math.nan, "d": "x"}], "e": (0.5, math.nan), "f": None}
    clean = without_nan(report)
    assert clean == {"a": None, "b": [1.0, None, {"c": None, "d": "x"}], "e": [0.5, None], "f": None}
    assert "NaN" not in json.dumps(clean) and math.isnan(report["a"])
