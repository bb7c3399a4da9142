"""A streaming OpenAI-style server with known timing, for testing and calibrating the load generator.

``python -m magpie_benchmark.loadgen.fake_server --port 8123 --ttft-ms 50 --itl-ms 20``

Each streaming request gets its first choice chunk ``ttft_ms`` after the
request arrived and one more every ``itl_ms`` (planned on absolute times, so
delays do not drift), then a usage chunk and ``[DONE]``. The server notes
when it received each request and when it wrote each chunk, on the same
monotonic clock as ``time.perf_counter`` in other processes on this machine;
``GET /fake/stats`` returns those records, keyed by the prompt's first 64
characters; ``GET /metrics`` counts the streamed requests (``fake_requests_total``).
With ``--profile-dir``, ``/stop_profile`` writes a small trace there. ``/health``, ``/v1/models``,
``/start_profile`` and ``/stop_profile`` answer as a real server's would. Binds 127.0.0.1 only.

Chat content may be a list of OpenAI content parts: ``text`` parts and ``image_url`` parts whose URL is a
base64 data URL of a PNG or JPEG (what ``vllm bench serve``'s random-mm dataset and magpie's multimodal load
send); anything else is answered 400 naming the part. Images are counted (``images`` in ``/fake/stats``);
no vision model looks at them.

Request body extras (all optional): ``fake_ttft_ms``, ``fake_itl_ms``,
``fake_status`` (answer with that HTTP status), ``fake_fail_after`` (close
the connection after that many chunks), ``fake_endless`` (stream chunks and never end).

Hangs on purpose (``--misbehave``, :class:`FakeSettings`), as a hostile-input run met them (issue 32):
``mute`` accepts connections and never answers anything; from the ``--misbehave-after``-th streamed
request on (0-based, counting every streamed request), ``stall`` sends one chunk and then nothing while
keeping the connection open, and ``endless`` streams chunks and never ends.

It ships in the package rather than next to the tests (issue 47): it is a documented ``python -m`` command, the
``benchmarks/`` calibration scripts run it (``loadgen_timing_accuracy.py``, ``loadgen_client_cpu.py``,
``fuzz_hostile_inputs.py``), and the tests of several distributions start it (the root ``conftest.py`` and
``tests/``, the report and loop plugins', by module name in a subprocess too).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import gzip
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

perf_counter = time.perf_counter


@dataclass
class FakeSettings:
    ttft_ms: float = 50.0
    itl_ms: float = 20.0
    model: str = "fake-model"
    tokens_per_chunk: int = 1
    records: list[dict[str, Any]] = field(default_factory=list)
    profiling: bool = False
    profile_calls: list[str] = field(default_factory=list)
    profile_dir: str | None = None
    misbehave: Literal["", "mute", "stall", "endless"] = ""
    misbehave_after: int = 0


def _write_trace(folder: str) -> None:
    """A minimal Chrome trace, as a torch profiler would leave one."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    events = [
        {"ph": "X", "cat": "kernel", "name": "fake_kernel", "ts": 10.0 * i, "dur": 5.0, "pid": 0, "tid": 7}
        for i in range(10)
    ]
    with gzip.open(path / f"fake_{os.getpid()}.pt.trace.json.gz", "wt") as fh:
        json.dump({"traceEvents": events}, fh)


def _chunk(obj: dict[str, Any]) -> bytes:
    body = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
    return f"{len(body):x}\r\n".encode() + body + b"\r\n"


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes] | None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = b""
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    return method, path, headers, body


_IMAGE_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}


def _content_text(content: Any) -> tuple[str, int]:
    """A chat message's text and its image count; ``ValueError`` names a malformed content part."""
    if isinstance(content, str):
        return content, 0
    if not isinstance(content, list):
        raise ValueError(f"content must be a string or a list of parts, got {type(content).__name__}")
    texts, images = [], 0
    for k, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url":
            _check_image(part.get("image_url"), k)
            images += 1
        else:
            raise ValueError(f"content[{k}]: not a text or image_url part: {str(part)[:80]}")
    return " ".join(texts), images


def _check_image(image: Any, k: int) -> None:
    url = image.get("url") if isinstance(image, dict) else None
    head, _, data = str(url).partition(";base64,")
    mime = head.removeprefix("data:")
    if not head.startswith("data:") or mime not in _IMAGE_MAGIC:
        raise ValueError(f"content[{k}]: image_url.url must be a data:image/png or image/jpeg base64 URL")
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        raise ValueError(f"content[{k}]: image_url.url is not valid base64") from None
    if not raw.startswith(_IMAGE_MAGIC[mime]):
        raise ValueError(f"content[{k}]: the data is not a {mime} file")


def _simple(status: int, obj: Any) -> bytes:
    body = json.dumps(obj).encode()
    reason = {200: "OK", 404: "Not Found", 400: "Bad Request"}.get(status, "Error")
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _stream(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    req: dict[str, Any],
    chat: bool,
    s: FakeSettings,
    recv: float,
) -> bool:
    n = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16)
    ttft = float(req.get("fake_ttft_ms", s.ttft_ms)) / 1000.0
    itl = float(req.get("fake_itl_ms", s.itl_ms)) / 1000.0
    fail_after = req.get("fake_fail_after")
    # chat: the whole conversation, so a multi-turn request's growing context shows in its prompt tokens
    images = 0
    if chat:
        parts = [_content_text(m.get("content", "")) for m in req["messages"]]
        prompt: Any = "\n".join(text for text, _ in parts)
        images = sum(n for _, n in parts)
    else:
        prompt = req.get("prompt")
    record: dict[str, Any] = {"key": str(prompt)[:64], "recv": recv, "sends": [], "images": images}
    misbehaving = s.misbehave if len(s.records) >= s.misbehave_after else ""
    s.records.append(record)
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    endless = req.get("fake_endless") or misbehaving == "endless"
    chunks = max(1, (n + s.tokens_per_chunk - 1) // s.tokens_per_chunk) if not endless else 1 << 62
    for k in range(chunks):
        if fail_after is not None and k >= int(fail_after):
            writer.close()
            return False
        delay = recv + ttft + k * itl - perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if chat:
            choice = {"index": 0, "delta": {"content": " tok"}, "finish_reason": None}
            obj = {"id": "fake", "object": "chat.completion.chunk", "choices": [choice]}
        else:
            obj = {"id": "fake", "object": "text_completion", "choices": [{"index": 0, "text": " tok"}]}
        writer.write(_chunk(obj))
        record["sends"].append(perf_counter())
        await writer.drain()
        if misbehaving == "stall":  # after the first chunk: silent, the connection open, until the client hangs up
            await reader.read()  # (not an Event nobody else holds: the garbage collector would take this task)
            return False
    usage = {"prompt_tokens": len(str(prompt).split()), "completion_tokens": n, "total_tokens": n}
    writer.write(_chunk({"id": "fake", "choices": [], "usage": usage}))
    done = b"data: [DONE]\n\n"
    writer.write(f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n")
    await writer.drain()
    return True


def _bad_chat(req: dict[str, Any]) -> str | None:
    """Why a chat request's messages are malformed (a real server answers 400 too), or None."""
    messages = req.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    for i, m in enumerate(messages):
        try:
            _content_text(m.get("content", "") if isinstance(m, dict) else None)
        except ValueError as exc:
            return f"messages[{i}].{exc}"
    return None


def make_handler(s: FakeSettings) -> Any:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if s.misbehave == "mute":
                await reader.read()  # takes the request, answers nothing, until the client hangs up
                return
            while True:
                try:
                    parsed = await _read_request(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                recv = perf_counter()
                if parsed is None:
                    break
                method, path, _headers, body = parsed
                if path == "/health" or path == "/v1/models":
                    writer.write(_simple(200, {"data": [{"id": s.model}]} if "models" in path else {}))
                elif path in ("/start_profile", "/stop_profile"):
                    s.profiling = path == "/start_profile"
                    s.profile_calls.append(path)
                    if path == "/stop_profile" and s.profile_dir:
                        _write_trace(s.profile_dir)
                    writer.write(_simple(200, {}))
                elif path == "/metrics":  # Prometheus text: requests streamed so far (a counter to read)
                    text = f"# TYPE fake_requests counter\nfake_requests_total {len(s.records)}\n".encode()
                    head = f"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {len(text)}\r\n\r\n"
                    writer.write(head.encode() + text)
                elif path == "/fake/stats":
                    writer.write(_simple(200, {"records": s.records, "profile_calls": s.profile_calls}))
                elif method == "POST" and path in ("/v1/completions", "/v1/chat/completions"):
                    req = json.loads(body or b"{}")
                    bad = _bad_chat(req) if path.endswith("chat/completions") else None
                    if req.get("fake_status"):
                        writer.write(_simple(int(req["fake_status"]), {"error": "fake failure"}))
                    elif bad:
                        writer.write(_simple(400, {"error": bad}))
                    elif not await _stream(reader, writer, req, path.endswith("chat/completions"), s, recv):
                        break
                else:
                    writer.write(_simple(404, {"error": f"no route {path}"}))
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    return handle


async def serve(host: str, port: int, settings: FakeSettings, ready: asyncio.Event | None = None) -> None:
    server = await asyncio.start_server(make_handler(settings), host, port, backlog=2048)
    if ready is not None:
        ready.set()
    async with server:
        await server.serve_forever()


@contextlib.contextmanager
def in_thread(settings: FakeSettings) -> Iterator[str]:
    """This server with ``settings`` on a free loopback port, on its own event loop in a daemon thread of this
    process, for the ``with`` block; yields its base URL once it listens."""
    from magpie_benchmark.serving.server import free_port

    port = free_port()
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    async def main() -> None:
        listening = asyncio.Event()
        server = asyncio.create_task(serve("127.0.0.1", port, settings, listening))
        await listening.wait()
        ready.set()
        await server

    thread = threading.Thread(target=lambda: _run_until_cancelled(loop, main()), daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("the fake server did not start listening within 10 s")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(lambda: [t.cancel() for t in asyncio.all_tasks(loop)])
        thread.join(5)


def _run_until_cancelled(loop: asyncio.AbstractEventLoop, main: Any) -> None:
    asyncio.set_event_loop(loop)
    with contextlib.suppress(asyncio.CancelledError):
        loop.run_until_complete(main)
    # the connection handlers were cancelled with it: let them finish before the loop closes
    loop.run_until_complete(asyncio.gather(*asyncio.all_tasks(loop), return_exceptions=True))
    loop.close()


@contextlib.contextmanager
def running(ttft_ms: float, itl_ms: float, *, own_session: bool = False) -> Iterator[str]:
    """This server in its own process on a free loopback port, for the ``with`` block; yields its base URL
    once ``/health`` answers, and stops the process afterwards. ``own_session``: start it in a new session."""
    from magpie_benchmark.serving.server import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "magpie_benchmark.loadgen.fake_server"]
    argv += ["--port", str(port), "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=own_session)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/health", timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"fake server exited with code {proc.returncode}") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--itl-ms", type=float, default=20.0)
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--profile-dir", default=os.environ.get("FAKE_PROFILE_DIR"), help="write a small trace here on /stop_profile"
    )
    parser.add_argument("--exit-after-s", type=float, default=None, help="crash on purpose after this long")
    parser.add_argument("--misbehave", choices=["mute", "stall", "endless"], default="", help="hang on purpose")
    parser.add_argument("--misbehave-after", type=int, default=0, help="streamed requests answered well first")
    args = parser.parse_args()
    settings = FakeSettings(
        ttft_ms=args.ttft_ms,
        itl_ms=args.itl_ms,
        model=args.model,
        profile_dir=args.profile_dir,
        misbehave=args.misbehave,
        misbehave_after=args.misbehave_after,
    )
    if args.exit_after_s is not None:
        threading.Timer(args.exit_after_s, lambda: os._exit(3)).start()
    print(f"fake server on 127.0.0.1:{args.port}", flush=True)
    try:
        asyncio.run(serve(args.host, args.port, settings))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
