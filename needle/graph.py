"""The Haystack `Pipeline` Needle's graphs run as: stages that leave their inputs unchanged get them uncopied.

Haystack deep-copies every stage's inputs before it runs, in case the stage changes them while another
stage holds the same values. Needle's own components never change an input (they return new documents
with `dataclasses.replace`, see the style guide), so for them the copy is pure cost: on the hybrid graph it
was more than half of the time spent around the engine and the model (docs/performance.md), because the
copy walks every candidate document's metadata and checks each one against Haystack's `Component` protocol.
Components from elsewhere (Haystack's, a user's) keep Haystack's copy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

from haystack import Pipeline

# Modules whose components leave their inputs unchanged (Needle's own).
UNCHANGED_INPUTS_MODULES = ("components.",)


def leaves_inputs_unchanged(instance: Any) -> bool:
    """Whether a component is one of Needle's own, which never change their inputs."""
    return type(instance).__module__.startswith(UNCHANGED_INPUTS_MODULES)


class _Uncopied(Mapping):
    """A stage's inputs, which Haystack's deep copy hands over as they are (in a new dict)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return dict(self._values)


class NeedlePipeline(Pipeline):
    """
    A `Pipeline` that does not deep-copy the inputs of Needle's own components (they never change them).

    Everything else (scheduling, tracing spans, output checks, errors) is Haystack's.
    """

    @staticmethod
    def _run_component(  # type: ignore[override]
        component_name: str,
        component: dict[str, Any],
        inputs: dict[str, Any],
        component_visits: dict[str, int],
        parent_span: Any = None,
        **kwargs: Any,
    ) -> Mapping[str, Any]:
        if leaves_inputs_unchanged(component["instance"]):
            inputs = cast(dict[str, Any], _Uncopied(inputs))
        return Pipeline._run_component(component_name, component, inputs, component_visits, parent_span, **kwargs)
