"""One streaming request against an OpenAI-compatible server.

Timing follows the usual serving-benchmark definitions: ``start`` is taken
just before the request is sent; TTFT is the first chunk that carries a
choice; each later choice chunk adds one inter-chunk latency (ITL); the
request's latency (E2EL) ends at its last choice chunk, not at ``[DONE]``.
The final usage chunk (``stream_options.include_usage``) gives the token
counts when the server sends it.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from magpie_benchmark.loadgen.datasets import SampleRequest
from magpie_benchmark.loadgen.http import ClientError, ClientTimeout, StreamClient

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
    #: trace replay: the session and the turn (0-based) this request was
    session_id: str | None = None
    turn: int | None = None
    #: trace replay: the prompt tokens the trace asks for (the conversation so far plus the new message)
    trace_prompt_len: int | None = None
    #: the prompt tokens the server counted (its usage chunk); None: it sent none (``prompt_len`` is then ours)
    server_prompt_len: int | None = None
    #: the output tokens the metrics counted (``token_count_method`` says how): what pooling runs needs back
    counted_output_tokens: int | None = None

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
            "counted_output_tokens": self.counted_output_tokens,
        }
        if self.session_id is not None:
            out["session_id"], out["turn"] = self.session_id, self.turn
            out["trace_prompt_len"] = self.trace_prompt_len
        if keep_text:
            out["generated_text"] = self.generated_text
        return out

    @classmethod
    def from_sample(cls, line: dict[str, Any]) -> RequestResult:
        """A request back from its samples line (:meth:`as_dict`): what pooling the metrics of several runs
        needs (times, lengths and the output tokens as first counted; not the text)."""
        return cls(
            success=bool(line.get("success")),
            prompt_len=int(line.get("prompt_len") or 0),
            expected_output_len=int(line.get("expected_output_len") or 0),
            output_tokens=line.get("counted_output_tokens") or line.get("output_tokens"),
            token_count_method=line.get("token_count_method"),
            ttft=float(line.get("ttft_ms") or 0.0) / 1000,
            itl=[float(x) / 1000 for x in line.get("itl_ms") or []],
            latency=float(line.get("e2el_ms") or 0.0) / 1000,
            start_time=float(line.get("start_time_s") or 0.0),
            chunks=int(line.get("chunks") or 0),
            error=line.get("error"),
            error_kind=line.get("error_kind"),
        )


class StallWatch:
    """When any in-flight request of a load point last heard from the server (``time.perf_counter``).

    The point's watchdog (:func:`magpie_benchmark.loadgen.point.wait_for_point`) stops the point when
    requests are in flight and none of them got a byte for ``stall_s``: a server that stopped answering
    would otherwise hold every request until its own read timeout. The silence is counted only while
    something is in flight (a rate-limited point may idle between requests), and a new request does not
    reset it (a server that answers nothing must not be kept alive by a steady stream of new requests).
    """

    def __init__(self, stall_s: float | None = None) -> None:
        self.stall_s = stall_s
        self.in_flight = 0
        self.last_heard = time.perf_counter()

    def begin(self) -> None:
        if self.in_flight == 0:  # the silence starts now, not when the previous request ended
            self.last_heard = time.perf_counter()
        self.in_flight += 1

    def heard(self) -> None:
        self.last_heard = time.perf_counter()

    def end(self) -> None:
        self.in_flight -= 1

    def stalled(self, now: float) -> bool:
        return self.stall_s is not None and self.in_flight > 0 and now - self.last_heard > self.stall_s

    def message(self) -> str:
        return (
            f"stalled: no byte arrived from any of the {self.in_flight} in-flight request(s) for {self.stall_s:g} s "
            "(load.stall_timeout_s)"
        )


class SseParser:
    """Incremental Server-Sent Events parser on bytes: network data in, ``data`` payloads out."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buffer + data if self._buffer else data
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n")  # a lone trailing CR waits for its LF in the buffer
        events: list[bytes] = []
        start = 0
        while True:
            end = buf.find(b"\n\n", start)
            if end < 0:
                break
            payload = _payload(buf[start:end])
            if payload is not None:
                events.append(payload)
            start = end + 2
        self._buffer = buf[start:]
        return events

    def flush(self) -> list[bytes]:
        """A final event that the server did not end with a blank line."""
        rest, self._buffer = self._buffer, b""
        payload = _payload(rest.replace(b"\r\n", b"\n").rstrip(b"\n"))
        return [payload] if payload is not None else []


def _payload(raw: bytes) -> bytes | None:
    """The ``data`` of one event (its data lines joined by newlines); None when it has none."""
    if raw.startswith(b"data:") and b"\n" not in raw:  # the usual event: one data line
        return raw[6:] if raw[5:6] == b" " else raw[5:]
    lines = [line[6:] if line[5:6] == b" " else line[5:] for line in raw.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines) if lines else None


class _Delta(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    text: str | None = None
    delta: _Delta | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _Chunk(msgspec.Struct):
    """The fields of a streamed completion chunk that the metrics read; the rest is skipped unparsed."""

    choices: list[_Choice] | None = None
    usage: _Usage | None = None


_CHUNK_DECODER = msgspec.json.Decoder(_Chunk)
encode_payload = msgspec.json.Encoder().encode


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
        payload["messages"] = request.messages or [{"role": "user", "content": content}]
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
    client: StreamClient,
    endpoint: Endpoint,
    body: bytes,
    request: SampleRequest,
    headers: dict[str, str] | None = None,
    deadline_s: float | None = None,
    watch: StallWatch | None = None,
) -> RequestResult:
    """Send one streaming request (``body``: its JSON, see :func:`encode_payload`) and time its chunks.

    ``deadline_s``: the most the whole request may take (a stream that never ends is cut there and the
    request is a failure of kind ``deadline``); ``None``: no total bound beyond the client's read timeout.
    ``watch``: told when the request starts, hears from the server (the response head, each body piece) and ends.
    """
    watch = watch or StallWatch()
    result = RequestResult(prompt_len=request.prompt_len, expected_output_len=request.expected_output_len)
    text_parts: list[str] = []
    parser = SseParser()
    chat = endpoint == "chat"
    decode = _CHUNK_DECODER.decode
    st = time.perf_counter()
    result.start_time = st
    last = st
    first = True
    watch.begin()
    try:
        async with asyncio.timeout(deadline_s), client.post(ENDPOINT_PATHS[endpoint], body, headers) as response:
            watch.heard()
            if response.status != 200:
                text = (await response.read()).decode(errors="replace")[:500]
                result.error = f"HTTP {response.status}: {text}"
                result.error_kind = f"http_{response.status}"
                return result
            done = False
            async for stamp, data in response.chunks():
                watch.heard()
                for event in parser.feed(data):
                    if event == b"[DONE]":
                        done = True
                        continue
                    chunk = decode(event)
                    if chunk.choices:
                        if first:
                            result.ttft = stamp - st
                            first = False
                        else:
                            result.itl.append(stamp - last)
                        last = stamp
                        result.chunks += 1
                        choice = chunk.choices[0]
                        piece = (choice.delta.content if choice.delta is not None else None) if chat else choice.text
                        if piece:
                            text_parts.append(piece)
                    usage = chunk.usage
                    if usage is not None:
                        if usage.completion_tokens is not None:
                            result.output_tokens = usage.completion_tokens
                        if usage.prompt_tokens is not None:
                            result.prompt_len = result.server_prompt_len = usage.prompt_tokens
            for event in parser.flush():
                done = done or event == b"[DONE]"
            if first:
                result.error = "the stream ended without a choice chunk (no first token)"
                result.error_kind = "no_tokens"
            else:
                result.success = True
                if not done:
                    result.error = "the stream ended without [DONE]"
    except TimeoutError:
        result.success = False
        result.error = f"deadline: the request did not finish within {deadline_s:g} s (load.request_deadline_s)"
        result.error_kind = "deadline"
    except ClientTimeout as exc:
        result.error, result.error_kind = f"timeout: {exc}", "timeout"
    except ClientError as exc:
        result.error, result.error_kind = f"connection: {exc}", "connection"
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        result.error, result.error_kind = f"bad stream chunk: {exc}", "bad_chunk"
    finally:
        watch.end()
        result.latency = last - st
        result.generated_text = "".join(text_parts)
    return result
