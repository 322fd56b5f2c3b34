"""What makes a dense vector unusable: the wrong size, NaN or infinite values, all zeros.

Such a vector cannot be compared with anything: a chunk written with one is never found by a dense search.
The writers check every vector before writing it, `needle check` every vector stored (`describe`).

Usage example:
```python
describe([0.0] * 384, 384)  # "a vector of zeros"
```
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def describe(vector: Sequence[float], dim: int | None = None) -> str | None:
    """What is wrong with a vector, `None` when nothing is (a sum and an `any` at C speed for a sound one)."""
    if dim is not None and len(vector) != dim:
        return f"a vector of {len(vector)} values where the index holds {dim}"
    if not len(vector):
        return "an empty vector"
    try:
        total = sum(vector)
    except TypeError:
        return "a vector with values that are not numbers"
    if not math.isfinite(total):
        if any(math.isnan(value) for value in vector):
            return "a vector with NaN values"
        if any(math.isinf(value) for value in vector):
            return "a vector with infinite values"
    if not any(vector):
        return "a vector of zeros"
    return None


__all__ = ["describe"]
