"""The served OpenAPI document, fuzzed with schemathesis against a real `needle serve`: no server error, and
every response (refusals included) in the shape the document declares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.integration

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, given  # noqa: E402 - below the importorskip
from hypothesis import settings as hypothesis_settings  # noqa: E402 - below the importorskip
from hypothesis.errors import Unsatisfiable  # noqa: E402 - below the importorskip
from schemathesis import GenerationMode  # noqa: E402 - below the importorskip
from schemathesis.checks import not_a_server_error  # noqa: E402 - below the importorskip
from schemathesis.specs.openapi.checks import (  # noqa: E402 - below the importorskip
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = 50  # per operation and mode
# Routes that call the LLM server, which the test server names at a closed port: 502 is their right answer.
LLM_ROUTES = ("/answer/run", "/v1/chat/completions", "/chat/completions")


def operations(url: str) -> list:
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    return [result.ok() for result in schema.get_all_operations()]


def fuzz(operation: Any, mode: GenerationMode, url: str, checks: list[Any]) -> Callable[[], None]:
    """A hypothesis test that sends `operation` the requests `mode` generates and validates each answer."""

    @hypothesis_settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        response = case.call(base_url=url, timeout=120)
        case.validate_response(response, checks=checks)

    return run


def test_the_document_lists_the_endpoints(server):
    paths = {operation.path for operation in operations(server.url)}
    assert {"/search/run", "/query/run", "/get/run", "/multi_get/run", "/status/run"} <= paths


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_generated_requests_get_no_server_error_and_documented_responses(server, mode):
    checked = 0
    for operation in operations(server.url):
        checks = [status_code_conformance, content_type_conformance, response_schema_conformance]
        if operation.path not in LLM_ROUTES:
            checks.append(not_a_server_error)
        try:
            fuzz(operation, mode, server.url, checks)()
        except Unsatisfiable:  # nothing in this operation's request can be made invalid (GET /status)
            continue
        checked += 1
    assert checked >= 5
