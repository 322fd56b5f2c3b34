"""The one place Needle imports ragas and its Haystack integration (installed from `requirements-ragas.txt`).

ragas sends usage events to its authors unless `RAGAS_DO_NOT_TRACK` is `true`; Needle's evaluation stays
on this machine, so the variable is set here, before ragas can send anything (a user who sets it to
`false` keeps that choice).
"""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

INSTALL_HINT = (
    "ragas is not installed: run `pip install --no-deps -c constraints.txt -r requirements-ragas.txt` in the clone "
    "(`make install-dev` does)"
)

try:
    from ragas.dataset_schema import SingleTurnSample
    from ragas.embeddings.base import BaseRagasEmbedding
    from ragas.llms.base import InstructorLLM
    from ragas.metrics import collections as llm_metrics

    from haystack_integrations.components.evaluators.ragas import RagasEvaluator

    with warnings.catch_warnings():
        # ragas 0.4 points `ragas.metrics` users at `ragas.metrics.collections`, which has no id-based metrics.
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import IDBasedContextPrecision, IDBasedContextRecall
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError(f"{INSTALL_HINT} ({error})") from error

__all__ = [
    "INSTALL_HINT",
    "BaseRagasEmbedding",
    "IDBasedContextPrecision",
    "IDBasedContextRecall",
    "InstructorLLM",
    "RagasEvaluator",
    "SingleTurnSample",
    "llm_metrics",
]
