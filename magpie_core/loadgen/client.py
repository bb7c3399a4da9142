"""One streaming request against an OpenAI-compatible server.

Timing follows the usual serving-benchmark definitions: ``start`` is taken
just before the request is sent; TTFT is the first chunk that carries a
choice; each later choice chunk adds one inter-chunk latency (ITL); the
request's latency (E2EL) ends at its last choice chunk, not at ``[DONE]``.
The final usage chunk (``stream_options.include_usage``) gives the token
counts when the server sends it.
"""

from __future__ import annotations

import codecs
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from magpie_core.loadgen.datasets import SampleRequest
from magpie_core.loadgen.transport import arrival_time

Endpoint = Literal["completions", "chat"]

ENDPOINT_PATHS: dict[str, str] = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


@dataclass
class RequestResult:
    """What one request measured (seconds on the ``time.perf_counter`` clock)."""

    success: bool = False
    prompt_len: int = 0
    expected_output_len: int = 0
    output_tokens: int | None = None  # from the server's usage chunk
    token_count_method: str | None = None  # usage | tokenizer | chunks
    ttft: float = 0.0
    itl: list[float] = field(default_factory=list)
    latency: float = 0.0
    start_time: float = 0.0
    scheduled_time: float = 0.0
    dispatch_time: float = 0.0
    chunks: int = 0
    generated_text: str = ""
    error: str | None = None
    error_kind: str | None = None

    def as_dict(self, keep_text: bool = False) -> dict[str, Any]:
        out = {
            "success": self.success,
            "prompt_len": self.prompt_len,
            "expected_output_len": self.expected_output_len,
            "output_tokens": self.output_tokens,
            "token_count_method": self.token_count_method,
            "ttft_ms": self.ttft * 1000,
            "e2el_ms": self.latency * 1000,
            "itl_ms": [x * 1000 for x in self.itl],
            "start_time_s": self.start_time,
            "queue_delay_ms": (self.start_time - self.dispatch_time) * 1000 if self.dispatch_time else 0.0,
            "chunks": self.chunks,
            "error": self.error,
            "error_kind": self.error_kind,
        }
        if keep_text:
            out["generated_text"] = self.generated_text
        return out


class SseParser:
    """Incremental Server-Sent Events parser: bytes in, ``data`` payloads out."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._buffer = ""

    def feed(self, data: bytes) -> list[str]:
        self._buffer += self._decoder.decode(data)
        self._buffer = self._buffer.replace("\r\n", "\n")
        events: list[str] = []
        while "\n\n" in self._buffer:
            raw, self._buffer = self._buffer.split("\n\n", 1)
            payload = [line[5:].lstrip(" ") for line in raw.split("\n") if line.startswith("data:")]
            if payload:
                events.append("\n".join(payload))
        return events

    def flush(self) -> list[str]:
        """A final event that the server did not end with a blank line."""
        rest, self._buffer = self._buffer, ""
        payload = [line[5:].lstrip(" ") for line in rest.split("\n") if line.startswith("data:")]
        return ["\n".join(payload)] if payload else []


def build_payload(
    endpoint: Endpoint,
    model: str,
    request: SampleRequest,
    *,
    ignore_eos: bool,
    extra_body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one streaming request."""
    payload: dict[str, Any] = {"model": model, "stream": True, "stream_options": {"include_usage": True}}
    if endpoint == "chat":
        content = request.prompt if isinstance(request.prompt, str) else json.dumps(request.prompt)
        payload["messages"] = [{"role": "user", "content": content}]
        payload["max_completion_tokens"] = request.expected_output_len
        payload["max_tokens"] = request.expected_output_len
    else:
        payload["prompt"] = request.prompt
        payload["max_tokens"] = request.expected_output_len
    if ignore_eos:
        payload["ignore_eos"] = True
    if extra_body:
        payload.update(extra_body)
    return payload


async def send_request(
    client: httpx.AsyncClient,
    endpoint: Endpoint,
    payload: dict[str, Any],
    request: SampleRequest,
    headers: dict[str, str] | None = None,
) -> RequestResult:
    """Send one streaming request and time its chunks."""
    result = RequestResult(prompt_len=request.prompt_len, expected_output_len=request.expected_output_len)
    text_parts: list[str] = []
    parser = SseParser()
    choice_key = "delta" if endpoint == "chat" else "text"
    st = time.perf_counter()
    result.start_time = st
    last = st
    first = True
    try:
        async with client.stream("POST", ENDPOINT_PATHS[endpoint], json=payload, headers=headers) as response:
            if response.status_code != 200:
                body = (await response.aread()).decode(errors="replace")[:500]
                result.error = f"HTTP {response.status_code}: {body}"
                result.error_kind = f"http_{response.status_code}"
                return result
            done = False
            async for data in response.aiter_raw():
                stamp = arrival_time(response)
                for event in parser.feed(data):
                    if event == "[DONE]":
                        done = True
                        continue
                    if event.startswith(":"):
                        continue
                    chunk = json.loads(event)
                    choices = chunk.get("choices")
                    if choices:
                        if first:
                            result.ttft = stamp - st
                            first = False
                        else:
                            result.itl.append(stamp - last)
                        last = stamp
                        result.chunks += 1
                        choice = choices[0]
                        piece = choice.get("delta", {}).get("content") if choice_key == "delta" else choice.get("text")
                        if piece:
                            text_parts.append(piece)
                    usage = chunk.get("usage")
                    if usage:
                        if usage.get("completion_tokens") is not None:
                            result.output_tokens = int(usage["completion_tokens"])
                        if usage.get("prompt_tokens") is not None:
                            result.prompt_len = int(usage["prompt_tokens"])
            for event in parser.flush():
                done = done or event == "[DONE]"
            if first:
                result.error = "the stream ended without a choice chunk (no first token)"
                result.error_kind = "no_tokens"
            else:
                result.success = True
                if not done:
                    result.error = "the stream ended without [DONE]"
    except httpx.TimeoutException as exc:
        result.error, result.error_kind = f"timeout: {exc}", "timeout"
    except (httpx.TransportError, httpx.StreamError) as exc:
        result.error, result.error_kind = f"connection: {type(exc).__name__}: {exc}", "connection"
    except json.JSONDecodeError as exc:
        result.error, result.error_kind = f"bad stream chunk: {exc}", "bad_chunk"
    finally:
        result.latency = last - st
        result.generated_text = "".join(text_parts)
    return result
