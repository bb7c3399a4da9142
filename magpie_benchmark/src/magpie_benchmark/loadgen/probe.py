"""Before a load: does the server answer at all?

A server that accepts connections and never answers (or stops after its health check) would hold the
whole load until every request's read timeout ran out, with nothing on the console. The probe asks two
things, each bounded in total by ``timeout_s``: ``GET /v1/models`` (also the served model's name) and one
short streaming request (one output token) built like the load's own requests, so a server that cannot
answer them fails here, naming the URL, what did not answer and within how many seconds.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from magpie_benchmark.loadgen.client import ENDPOINT_PATHS, Endpoint, build_payload, encode_payload, send_request
from magpie_benchmark.loadgen.datasets import SampleRequest
from magpie_benchmark.loadgen.http import make_client

#: the config key and the flag that set the probe's timeout, named in every failure
TIMEOUT_SETTING = "load.probe_timeout_s, --probe-timeout"


class ProbeFailed(Exception):
    """The server did not answer the probe: the message names the URL, the step and the timeout."""


@dataclass
class ProbeResult:
    #: the first model ``/v1/models`` lists; None: it listed none or answered with an error
    listed_model: str | None
    models_s: float
    request_s: float
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"models_s": self.models_s, "request_s": self.request_s, "notes": self.notes}


async def listed_model(base_url: str, timeout_s: float) -> tuple[str | None, list[str]]:
    """The first model ``/v1/models`` lists (None and a note when it answers without one).

    Raises :class:`ProbeFailed` when it does not answer within ``timeout_s`` in all, or cannot be reached."""
    url = base_url + "/v1/models"
    try:
        async with asyncio.timeout(timeout_s), httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(url)
    except (TimeoutError, httpx.TimeoutException):
        raise ProbeFailed(f"{url} did not answer within {timeout_s:g} s ({TIMEOUT_SETTING})") from None
    except httpx.HTTPError as exc:
        raise ProbeFailed(f"{url} could not be reached: {type(exc).__name__}: {exc}") from None
    if response.status_code != 200:
        return None, [f"{url} answered HTTP {response.status_code}: the model name is the configured one"]
    try:
        data = response.json().get("data") or []
        return str(data[0]["id"]) if data else None, []
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None, [f"{url} answered without a model list: the model name is the configured one"]


async def short_request(
    base_url: str,
    model: str,
    endpoint: Endpoint,
    timeout_s: float,
    *,
    ignore_eos: bool = True,
    extra_body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> None:
    """One streaming request for one output token, as the load would send it; :class:`ProbeFailed` unless it
    completes within ``timeout_s`` in all."""
    url = base_url + ENDPOINT_PATHS[endpoint]
    request = SampleRequest(prompt="Hello", prompt_len=1, expected_output_len=1)
    body = encode_payload(build_payload(endpoint, model, request, ignore_eos=ignore_eos, extra_body=extra_body))
    client = make_client(base_url, 1, timeout_s)
    try:
        result = await send_request(client, endpoint, body, request, headers, deadline_s=timeout_s)
    finally:
        await client.aclose()
    if result.success:
        return
    if result.error_kind in ("deadline", "timeout"):
        raise ProbeFailed(f"{url} did not answer a 1-token request within {timeout_s:g} s ({TIMEOUT_SETTING})")
    raise ProbeFailed(f"{url} failed a 1-token request ({result.error_kind}): {result.error}")


async def probe_server(
    base_url: str,
    model: str | None,
    fallback_model: str,
    endpoint: Endpoint,
    timeout_s: float,
    *,
    ignore_eos: bool = True,
    extra_body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> ProbeResult:
    """Both steps in order; the short request names ``model``, else the listed model, else ``fallback_model``."""
    t0 = time.perf_counter()
    listed, notes = await listed_model(base_url, timeout_s)
    t1 = time.perf_counter()
    name = model or listed or fallback_model
    await short_request(
        base_url, name, endpoint, timeout_s, ignore_eos=ignore_eos, extra_body=extra_body, headers=headers
    )
    return ProbeResult(listed, t1 - t0, time.perf_counter() - t1, notes)
