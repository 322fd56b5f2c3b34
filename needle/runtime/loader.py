"""The one place that turns a pipeline YAML into a Haystack `Pipeline`, with Needle's extras on top of Haystack's.

A graph file is plain Haystack pipeline YAML with literal values, which stock `Pipeline.loads(text)` builds as it
is. Needle's loader adds what a command line needs: a variant may be an overlay of another graph (`extends:
query.yml` and only what differs: `components` replaced or added by name, a component set to null removed with
its connections, `connections` added, `remove_connections` dropped, `set` overrides, `inputs`/`outputs`/
`parameters` entries replaced by name), overrides by component and parameter (`fuse.k=30`), graph files of an
older Needle read with a `DeprecationWarning` (`needle.runtime.legacy`), the contract read and checked
(`needle.runtime.contract`), and the graph built with the settings Needle runs with (`Environment`), which the
components and stores read what the YAML leaves out from. Every process (CLI, server, tests, eval) builds graphs
through `load_pipeline`.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import yaml
from haystack import Pipeline
from haystack.core import errors as haystack_errors
from haystack.core.serialization import import_class_by_name

from needle.core.model_files import MissingModelError
from needle.core.resources import PIPELINES_DIR
from needle.core.settings import using_settings
from needle.runtime.contract import ContractError, GraphContract
from needle.runtime.environment import Environment
from needle.runtime.legacy import modernise
from needle.runtime.pipeline import NeedlePipeline

_OVERLAY_KEYS = {
    "extends",
    "components",
    "connections",
    "remove_connections",
    "set",
    "metadata",
    "inputs",
    "outputs",
    "parameters",
    "stores",
}


class PipelineError(ValueError):
    """A pipeline file is missing or malformed, or an override names no component or parameter of it."""


def pipeline_path(name_or_path: str | Path) -> Path:
    """
    Find a pipeline file: a path, or a graph of Needle's `pipelines/` by name or file name (`query`, `query.yml`).

    :raises PipelineError: When no such file exists.
    """
    candidate = Path(name_or_path)
    is_yaml = candidate.suffix in {".yml", ".yaml"}
    if is_yaml and candidate.is_file():
        return candidate
    # `extends: query.yml` in an overlay of the user's, far from `pipelines/` (an installed Needle has it in the package)
    named = PIPELINES_DIR / (candidate.name if is_yaml and len(candidate.parts) == 1 else f"{name_or_path}.yml")
    if named.is_file():
        return named
    raise PipelineError(f"no pipeline named '{name_or_path}' (looked for {candidate} and {named})")


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise PipelineError(f"cannot read pipeline {path}: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("components"), dict):
        raise PipelineError(f"{path} is not a pipeline: it has no 'components' mapping")
    return modernise(data, str(path))


def read_graph(name_or_path: str | Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """
    A graph's dictionary (`Pipeline.to_dict()` form), its overlays composed over their bases.

    :param name_or_path: A file path or a graph name in `pipelines/`.
    :returns: A fresh dictionary.
    :raises PipelineError: When a file is missing or malformed, or overlays extend each other in a cycle.
    """
    path = pipeline_path(name_or_path).resolve()
    if path in _chain:
        cycle = " -> ".join(p.stem for p in (*_chain, path))
        raise PipelineError(f"pipelines extend each other in a cycle: {cycle}")
    data = _read_yaml(path)
    if "extends" not in data:
        return data
    unknown = set(data) - _OVERLAY_KEYS
    if unknown:
        raise PipelineError(
            f"{path}: an overlay takes {', '.join(sorted(_OVERLAY_KEYS))}; not {', '.join(sorted(unknown))}"
        )
    base_ref = Path(str(data["extends"]))
    base_path = base_ref if base_ref.is_absolute() else path.parent / base_ref
    base = read_graph(base_path if base_path.is_file() else str(data["extends"]), (*_chain, path))
    try:
        return compose(base, data)
    except PipelineError as error:
        raise PipelineError(f"{path}: {error}") from None


def compose(base: dict[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """
    Apply an overlay to a base graph.

    :param base: A graph dictionary.
    :param overlay: `components` (replace or add by name; `null` removes a component and its connections),
        `remove_connections`, `connections` (added), `set` (overrides, see `apply_overrides`), `inputs`,
        `outputs` and `parameters` (by name: a name given again maps to the overlay's sockets; `null` drops it)
        and `metadata` (its keys replace the base's).
    :returns: A new graph dictionary.
    :raises PipelineError: When a connection to remove is not in the base, or an override does not apply.
    """
    graph = copy.deepcopy(dict(base))
    graph.pop("extends", None)
    components = graph["components"]
    connections = list(graph.get("connections", []))
    for name, definition in (overlay.get("components") or {}).items():
        if definition is None:
            components.pop(name, None)
            connections = [c for c in connections if _owner(c["sender"]) != name and _owner(c["receiver"]) != name]
        else:
            components[name] = copy.deepcopy(definition)
    for removed in overlay.get("remove_connections") or []:
        pair = {"sender": removed["sender"], "receiver": removed["receiver"]}
        if pair not in connections:
            raise PipelineError(
                f"remove_connections: {pair['sender']} -> {pair['receiver']} is not a connection of the base"
            )
        connections.remove(pair)
    connections.extend({"sender": c["sender"], "receiver": c["receiver"]} for c in overlay.get("connections") or [])
    graph["connections"] = connections
    if overlay.get("metadata"):
        graph["metadata"] = {**(graph.get("metadata") or {}), **copy.deepcopy(dict(overlay["metadata"]))}
    for key in ("inputs", "outputs", "parameters", "stores"):
        if overlay.get(key):
            merged = {**(graph.get(key) or {}), **copy.deepcopy(dict(overlay[key]))}
            graph[key] = {name: value for name, value in merged.items() if value is not None}
    return apply_overrides(graph, overlay.get("set") or {})


def _owner(socket: str) -> str:
    return socket.split(".", 1)[0]


def apply_overrides(graph: dict[str, Any], overrides: Mapping[str, Any], strict: bool = True) -> dict[str, Any]:
    """
    Set init parameters by component and parameter, the way Haystack addresses a graph.

    `fuse.k` is the parameter `k` of component `fuse`; a longer key walks into a nested component
    (`rerank.ranker.bm25_weight`) or a mapping value (`fuse.weights.bm25`).

    :param graph: A graph dictionary (changed in place and returned).
    :param overrides: Keys as above, values as they would be written in the YAML.
    :param strict: Refuse a key whose component the graph lacks (else skip it: overrides from the
        configuration apply to every graph that has the component).
    :returns: The graph.
    :raises PipelineError: Naming the key, when it addresses no component or no parameter.
    """
    for key, value in overrides.items():
        parts = str(key).split(".")
        if len(parts) < 2 or not all(parts):
            raise PipelineError(f"override '{key}': use component.parameter, e.g. fuse.k=30")
        component = graph["components"].get(parts[0])
        if component is None:
            if strict:
                known = ", ".join(graph["components"])
                raise PipelineError(f"override '{key}': the graph has no component '{parts[0]}' (it has {known})")
            continue
        _set_parameter(component, parts[1:], copy.deepcopy(value), key)
    return graph


def _set_parameter(component: dict[str, Any], path: list[str], value: Any, key: str) -> None:
    name, rest = path[0], path[1:]
    accepted = _accepted_parameters(component.get("type", ""), key)
    if accepted is not None and name not in accepted:
        raise PipelineError(
            f"override '{key}': {component.get('type', '?').rsplit('.', 1)[-1]} has no parameter '{name}' "
            f"(it takes {', '.join(sorted(accepted))})"
        )
    params = component.setdefault("init_parameters", {})
    if not rest:
        params[name] = value
        return
    current = params.get(name)
    if isinstance(current, dict) and "type" in current:
        _set_parameter(current, rest, value, key)
        return
    if current is None:
        current = params[name] = {}
    if not isinstance(current, dict):
        raise PipelineError(f"override '{key}': '{name}' is {type(current).__name__}, not a mapping or a component")
    node = current
    for part in rest[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise PipelineError(f"override '{key}': '{part}' is not a mapping")
    node[rest[-1]] = value


def _accepted_parameters(type_name: str, key: str) -> frozenset[str] | None:
    """The init parameters of a class, or `None` when it takes any (`**kwargs`)."""
    try:
        cls = import_class_by_name(type_name)
    except (ImportError, haystack_errors.DeserializationError) as error:
        raise PipelineError(f"override '{key}': cannot import {type_name}: {error}") from None
    parameters = inspect.signature(cls.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    return frozenset(parameters) - {"self"}


def overrides_apply_somewhere(overrides: Mapping[str, Any], graphs: list[str | Path] | None = None) -> None:
    """
    Check configuration overrides: each must address a component of at least one graph, and validly.

    :param overrides: The configuration's `set` mapping.
    :param graphs: Graphs to check against; every file of `pipelines/` when `None`.
    :raises PipelineError: Naming a key that applies nowhere or names a missing parameter.
    """
    names: list[str | Path] = list(graphs) if graphs is not None else sorted(PIPELINES_DIR.glob("*.yml"))
    for key, value in overrides.items():
        applied = False
        for name in names:
            graph = read_graph(name)
            component = str(key).split(".", 1)[0]
            if component in graph["components"]:
                apply_overrides(graph, {key: value})
                applied = True
        if not applied:
            raise PipelineError(f"override '{key}' (configuration `set`) names a component no graph has")


def build_pipeline(data: dict[str, Any], environment: Environment | None = None) -> Pipeline:
    """
    Build a graph from its dictionary form, with the environment's settings as the ones its components and
    stores read what the YAML leaves out from.

    :param data: A pipeline dictionary (`Pipeline.to_dict()` form; an older Needle's form is read too).
    :param environment: Whose settings; without one, those of this process (`active_settings`).
    :returns: The pipeline, not yet warmed up.
    """
    data = modernise(data, "the graph")
    with using_settings(environment.settings, environment.progress_bar) if environment is not None else nullcontext():
        return NeedlePipeline.from_dict(data)


def loads_pipeline(text: str, environment: Environment | None = None) -> Pipeline:
    """
    `Pipeline.loads` through `build_pipeline` (e.g. `p.dumps()` back).

    :param text: Pipeline YAML (a whole graph, not an overlay).
    :param environment: Whose settings the components read (see `build_pipeline`).
    :returns: The pipeline.
    """
    from haystack.marshal import YamlMarshaller

    data = YamlMarshaller().unmarshal(text)
    if not isinstance(data, dict):
        raise PipelineError("the text is not a pipeline: it holds no mapping")
    return build_pipeline(data, environment)


def load_pipeline(
    name_or_path: str | Path,
    environment: Environment,
    overrides: Mapping[str, Any] | None = None,
    strict: bool = True,
) -> Pipeline:
    """
    Load a graph: its file (overlays composed), then overrides, then Haystack builds it in the environment,
    then its contract is read and checked (`needle.runtime.contract`: every stage and socket it maps exists).

    :param name_or_path: A file path or a graph name in `pipelines/`.
    :param environment: Stores, models and the LLM server to inject.
    :param overrides: `component.parameter` → value (see `apply_overrides`).
    :param strict: Refuse overrides naming a component the graph lacks (configuration-wide ones skip it).
    :returns: The pipeline, not yet warmed up.
    :raises PipelineError: When the file is missing or malformed, an override does not apply, or a
        component refuses its parameters (the message names the graph).
    :raises MissingModelError: When a configured offline model is not provisioned.
    :raises ContractError: When the graph declares no contract, or its contract names a missing stage or socket.
    """
    graph = read_graph(name_or_path)
    if overrides:
        apply_overrides(graph, overrides, strict=strict)
    try:
        pipeline = build_pipeline(graph, environment)
    except (PipelineError, MissingModelError, ContractError):
        raise
    except (
        haystack_errors.PipelineError,
        haystack_errors.DeserializationError,
        haystack_errors.ComponentError,
        haystack_errors.ComponentDeserializationError,
        ImportError,
        TypeError,
        ValueError,
    ) as error:
        missing = _in_chain(error, MissingModelError)
        if missing is not None:  # raised by the environment while Haystack built a component
            raise missing from None
        cause = error.__cause__ if isinstance(error.__cause__, (TypeError, ValueError)) else error
        shown = f" with {', '.join(f'{k}={v}' for k, v in overrides.items())}" if overrides else ""
        raise PipelineError(f"cannot build pipeline {pipeline_path(name_or_path)}{shown}: {cause}") from error
    GraphContract.of(pipeline, str(pipeline_path(name_or_path)), graph)
    return pipeline


def _in_chain(error: BaseException, wanted: type[BaseException]) -> BaseException | None:
    """The first exception of type `wanted` among `error`'s causes and contexts."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, wanted):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
