"""What the endpoint wrappers share: each built from its command's entry, the process's one `Needle`, errors as HTTP statuses.

Every HTTP route and MCP tool is a wrapper in `server/pipelines/<route>/`, an `Endpoint` naming its command's
entry in `needle.commands.table`: its `run_api` takes the fields its request declares
(`needle.core.requests`), builds the request, and runs the command's facade method inside `errors()`, which maps
exceptions through `needle.core.errors` (the one table the CLI uses too) to an `HTTPException` with a message a
person can act on and never a stack trace. The wrapper's own docstring describes the route (OpenAPI's
description and `:returns:`); the fields' descriptions are added from the request.

Usage example (`server/pipelines/ls/pipeline_wrapper.py`; its docstring describes the route):
```python
class PipelineWrapper(Endpoint):
    command = "ls"
```
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from hayhooks import BasePipelineWrapper

from needle.commands.failures import classify
from needle.commands.table import BY_NAME, BY_ROUTE, Command
from needle.core.arguments import Arguments, annotation, arguments_model, capped
from needle.core.errors import EXIT_CODE_HEADER
from needle.core.requests import BackupRequest, params
from needle.owner.served_facade import get_needle, holding_the_index, on_the_facade, warm

if TYPE_CHECKING:
    from needle.facade.interface import NeedleInterface
    from needle.lifecycle.backups import BackupScheduler

logger = logging.getLogger(__name__)

T = TypeVar("T")


@contextmanager
def errors() -> Iterator[None]:
    """
    Turn exceptions into `HTTPException`s by `needle.core.errors`' table: user mistakes 4xx, server trouble 5xx.

    :raises HTTPException: For any exception raised inside the block.
    """
    from fastapi import HTTPException

    try:
        yield
    except HTTPException:
        raise
    except Exception as error:
        failure = classify(error)
        if failure.http_status >= 500:
            logger.error("Request failed: %s", error, exc_info=error)
        headers = {EXIT_CODE_HEADER: str(failure.exit_code)}
        detail = capped(failure.http_message)  # a refusal quoting 10,000 names sent stays a short answer
        raise HTTPException(status_code=failure.http_status, detail=detail, headers=headers) from None


def call(action: Callable[[NeedleInterface], T]) -> T:
    """
    Run `action` on the process's facade (`get_needle`), errors mapped to HTTP statuses.

    Requests run side by side: each run of a graph borrows one of its warmed instances (`serve.graph_instances`
    of them; Haystack does not promise that one `Pipeline` object runs safely on several threads at once),
    and index runs, optimising and backups take turns inside `Needle`.

    :param action: What to do, e.g. `lambda n: n.status()`.
    :returns: What `action` returns.
    :raises HTTPException: 4xx for the caller's mistakes, 5xx otherwise.
    """
    with errors():
        return on_the_facade(action)


def backup_scheduler(every: float, keep: int, directory: str) -> BackupScheduler:
    """
    Scheduled backups of this process's index (`needle serve --every`), not started.

    :param every: Seconds between backups.
    :param keep: How many to keep.
    :param directory: Where they go.
    """
    from pathlib import Path

    from needle.lifecycle import backups

    return backups.BackupScheduler(
        make=lambda folder: get_needle().backup(BackupRequest(path=str(folder))),
        drop=lambda folder: backups.drop(holding_the_index(), folder),
        directory=Path(directory),
        every=every,
        keep=keep,
    )


def user_error(status: int, message: str) -> Exception:
    """An `HTTPException` for a request the wrappers refuse before calling Needle."""
    from fastapi import HTTPException

    return HTTPException(status_code=status, detail=message)


def route_signature(command: Command, returns: Any) -> inspect.Signature:
    """`run_api(self, *, field=default, ...)`: a keyword per field the route takes, with its JSON-strict type and limits."""
    taken = [p for p in params(command.request) if p.http] if command.request is not None else []
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + [
        inspect.Parameter(
            p.name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=annotation(p, strict_numbers=True),
            default=inspect.Parameter.empty if p.required else p.default,
        )
        for p in taken
    ]
    return inspect.Signature(parameters, return_annotation=returns)


def _documented(doc: str | None, command: Command) -> str:
    """A route's docstring, as hayhooks reads it: the wrapper's text, each field's description before `:returns:`."""
    text = inspect.cleandoc(doc or command.help)
    taken = [p for p in params(command.request) if p.http] if command.request is not None else []
    lines = "".join(f":param {p.name}: {p.help}\n" for p in taken)
    head, returns_line, tail = text.partition(":returns:")
    return f"{head.rstrip()}\n\n{lines}{returns_line}{tail}"


class Endpoint(BasePipelineWrapper):
    """
    The endpoint wrapper of a command's route (`needle.commands.table`), for `server/pipelines/<route>/`.

    A subclass names its command (`command = "ls"`) and describes the route in its docstring. `setup()` warms
    the graph the route runs (or opens the process's `Needle`); `run_api(**body)` takes the request's fields
    (hayhooks builds the route's request model from its signature and docstring: the fields' descriptions are
    added before `:returns:`), builds the request and runs it on the process's facade (`serve`, which a wrapper
    may override); a name the request does not declare is refused (`TypeError`). `skip_mcp` unless the command
    is an MCP tool.
    """

    command: ClassVar[str]
    entry: ClassVar[Command]
    signature: ClassVar[inspect.Signature]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        entry = cls.entry = BY_NAME[cls.command]
        cls.skip_mcp = entry.tool is None
        cls.signature = route_signature(entry, entry.result_type())

        def run_api(self: Endpoint, **body: Any) -> Any:
            return self.respond(body)

        run_api.__signature__ = cls.signature  # type: ignore[attr-defined]  # what inspect.signature reads
        run_api.__doc__ = _documented(cls.__doc__, entry)
        cls.run_api = run_api  # each route its own signature and description

    def setup(self) -> None:
        """Load and warm the route's graph once, at start-up (or open the process's one `Needle`)."""
        self.pipeline = warm(self.entry.graph) if self.entry.graph else None
        if self.entry.graph is None:
            get_needle()

    def respond(self, body: dict[str, Any]) -> Any:
        """Build the request from the body's fields (defaults filled in) and run it on the process's facade."""
        bound = self.signature.bind(self, **body)
        bound.apply_defaults()
        values = {key: value for key, value in bound.arguments.items() if key != "self"}
        request_type = self.entry.request
        with errors():
            request = request_type(**values) if request_type is not None else None
        return call(lambda needle: self.serve(needle, request))

    def serve(self, needle: NeedleInterface, request: Any) -> Any:
        """Run the request on the facade: the command's method (a search on the route's own graph)."""
        entry = self.entry
        if entry.method == "search":
            return needle.search(request, entry.graph or entry.name, init_overrides=False)
        assert entry.method is not None, f"{entry.name} names no facade method"
        method = getattr(needle, entry.method)
        return method() if request is None else method(request)


def body_model(route: str, command: Command | None = None) -> type[Arguments] | None:
    """
    The JSON body a route takes, generated from its request (`extra="forbid"`: an unknown field is refused),
    named as hayhooks names a route's request model; `None` for a route no command declares.

    :param route: The route's name.
    :param command: The command it runs, when its name is not the route's (a graph variant runs `query`).
    """
    command = command or BY_ROUTE.get(route)
    return arguments_model(route, command.request, "http") if command is not None else None


__all__ = ["Endpoint", "backup_scheduler", "body_model", "call", "errors", "route_signature", "user_error"]
