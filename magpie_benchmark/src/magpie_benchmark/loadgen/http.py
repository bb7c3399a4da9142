"""The load generator's HTTP client: streaming POSTs, each body chunk dated when it reached the socket.

Why not httpx or aiohttp: on a machine where the server under test shares the
CPU with the client (a CPU build of an engine, a small box), every microsecond
the client spends per streamed chunk is taken from the server and shows up as
lower throughput and higher latency. httpx over httpcore/h11 cost about 86 us
of client CPU per chunk here; this client reads the socket directly, decodes
chunked transfer encoding on bytes and hands out ``(arrival, data)`` pairs,
and costs a fraction of that (docs/benchmarks/benchmark_accuracy.md).

Arrival times: a reader callback reads the socket as soon as the loop sees it
readable. On Linux each read carries the kernel's receive timestamp of its
last packet (``SO_TIMESTAMPNS``), which does not depend on how busy the loop
was; elsewhere the ``select()`` wake that saw the bytes dates them
(:func:`new_event_loop`). Both are moved onto the ``time.perf_counter`` clock.

Plain ``http://`` only, HTTP/1.1 with keep-alive. ``https://`` base URLs use
:class:`HttpxStreamClient` (httpx; chunks dated when the code gets to them).
"""

from __future__ import annotations

import asyncio
import collections
import selectors
import socket
import struct
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol
from urllib.parse import urlsplit

perf_counter = time.perf_counter

#: Linux SO_TIMESTAMPNS (== SCM_TIMESTAMPNS): the kernel stamps each received packet
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("qq")
_READ_BYTES = 65536


class ClientError(Exception):
    """A connection-level failure (refused, reset, malformed response)."""


class ClientTimeout(ClientError):
    """No byte arrived (or could be sent) within the timeout."""


class TimestampingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """A selector that remembers when each ``select()`` returned."""

    def __init__(self) -> None:
        super().__init__()
        self.last_wake = perf_counter()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = super().select(timeout)
        self.last_wake = perf_counter()
        return events


def new_event_loop() -> asyncio.AbstractEventLoop:
    """An event loop whose reads can be dated to the ``select()`` that saw them."""
    return asyncio.SelectorEventLoop(TimestampingSelector())


def _wake_time(loop: asyncio.AbstractEventLoop) -> float:
    wake = getattr(getattr(loop, "_selector", None), "last_wake", None)
    return wake if wake is not None else perf_counter()


class Response(Protocol):
    status: int
    headers: Mapping[str, str]

    async def read(self) -> bytes: ...

    def chunks(self) -> AsyncIterator[tuple[float, bytes]]:
        """Body data as ``(arrival time on the perf_counter clock, bytes)``."""
        ...


class StreamClient(Protocol):
    #: how chunk times are taken: ``kernel``, ``loop_wake`` or ``processing``
    clock: str

    def post(self, path: str, body: bytes, headers: Mapping[str, str] | None = None) -> Any:
        """``async with client.post(...) as response``: a :class:`Response`."""
        ...

    async def aclose(self) -> None: ...


# -- one connection ----------------------------------------------------------------------------


class _Connection:
    """A non-blocking TCP socket read by a loop callback into ``(arrival, bytes)`` pieces."""

    def __init__(self, sock: socket.socket, kernel_stamps: bool) -> None:
        self.sock = sock
        self.loop = asyncio.get_running_loop()
        self.kernel_stamps = kernel_stamps
        self.pieces: collections.deque[tuple[float, bytes]] = collections.deque()
        self.eof = False
        self.error: OSError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self.waiting_since = 0.0
        self._fd = sock.fileno()
        self.loop.add_reader(self._fd, self._on_readable)

    def _on_readable(self) -> None:
        try:
            data, ancdata, _flags, _addr = self.sock.recvmsg(_READ_BYTES, 64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.error = exc
            data, ancdata = b"", []
        if not data:
            self.eof = True
            self.loop.remove_reader(self._fd)
        else:
            stamp = None
            for level, kind, cdata in ancdata:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(cdata) >= _TIMESPEC.size:
                    sec, nsec = _TIMESPEC.unpack_from(cdata)
                    # kernel stamps are CLOCK_REALTIME; move them onto the perf_counter clock
                    offset = time.time_ns() - time.perf_counter_ns()
                    stamp = (sec * 1_000_000_000 + nsec - offset) / 1e9
            self.pieces.append((stamp if stamp is not None else _wake_time(self.loop), data))
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next_piece(self, timeout: float | None) -> tuple[float, bytes] | None:
        """The next ``(arrival, bytes)``; None at end of stream.

        ``timeout`` is enforced by the client's watchdog (:meth:`expire`), not by a timer per read: an
        ``asyncio.timeout`` around every read cost about 15 us per chunk here."""
        if not self.pieces and not self.eof:
            self._waiter = waiter = self.loop.create_future()
            self.waiting_since = perf_counter()
            try:
                await waiter
            finally:
                self._waiter = None
        if self.pieces:
            return self.pieces.popleft()
        if self.error is not None:
            raise ClientError(f"connection: {self.error}")
        return None

    def expire(self, now: float, timeout: float) -> None:
        """Fail a read that has waited longer than ``timeout`` (called by the client's watchdog)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done() and now - self.waiting_since > timeout:
            waiter.set_exception(ClientTimeout(f"no data for {timeout} s"))

    async def send(self, data: bytes, timeout: float | None) -> None:
        if self.eof:
            raise ClientError("connection closed by the server")
        try:
            async with asyncio.timeout(timeout):
                await self.loop.sock_sendall(self.sock, data)
        except TimeoutError:
            raise ClientTimeout(f"sending took over {timeout} s") from None
        except OSError as exc:
            raise ClientError(f"connection: {exc}") from exc

    def close(self) -> None:
        if self.sock.fileno() >= 0:
            if not self.eof:
                self.loop.remove_reader(self._fd)
            self.sock.close()


# -- one response ------------------------------------------------------------------------------


class _LeanResponse:
    """Status, headers and the (de-chunked) body of one HTTP/1.1 response on a :class:`_Connection`."""

    def __init__(self, conn: _Connection, timeout: float | None) -> None:
        self._conn = conn
        self._timeout = timeout
        self.status = 0
        self.headers: dict[str, str] = {}
        self._buf = b""
        self._stamp = 0.0
        self.complete = False  # the whole body was read: the connection can be reused
        self.keep_alive = True

    async def _more(self) -> bool:
        piece = await self._conn.next_piece(self._timeout)
        if piece is None:
            return False
        self._stamp, data = piece
        self._buf = self._buf + data if self._buf else data
        return True

    async def read_head(self) -> None:
        while True:
            end = self._buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if not await self._more():
                raise ClientError("the server closed the connection before a response")
        head, self._buf = self._buf[:end].decode("latin-1"), self._buf[end + 4 :]
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ClientError(f"malformed status line {lines[0][:80]!r}")
        self.status = int(parts[1])
        for line in lines[1:]:
            key, _, value = line.partition(":")
            self.headers[key.strip().lower()] = value.strip()
        self.keep_alive = parts[0] != "HTTP/1.0" and self.headers.get("connection", "").lower() != "close"

    async def chunks(self) -> AsyncIterator[tuple[float, bytes]]:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            async for item in self._chunked():
                yield item
            return
        length = self.headers.get("content-length")
        if length is not None:
            left = int(length)
            while left > 0:
                if not self._buf and not await self._more():
                    raise ClientError(f"the body ended {left} bytes short of its Content-Length")
                data, self._buf = self._buf[:left], self._buf[left:]
                left -= len(data)
                yield self._stamp, data
        else:  # read to end of stream
            self.keep_alive = False
            while True:
                if self._buf:
                    data, self._buf = self._buf, b""
                    yield self._stamp, data
                if not await self._more():
                    break
        self.complete = True

    async def _chunked(self) -> AsyncIterator[tuple[float, bytes]]:
        out: list[bytes] = []
        while True:
            # take every complete chunk in the buffer, then hand out what they carried as one piece
            buf, pos, size = self._buf, 0, -1
            while True:
                line_end = buf.find(b"\r\n", pos)
                if line_end < 0:
                    break
                try:
                    size = int(buf[pos:line_end].split(b";", 1)[0], 16)
                except ValueError:
                    raise ClientError(f"malformed chunk size {buf[pos:line_end][:40]!r}") from None
                if size == 0:
                    trailer_end = buf.find(b"\r\n\r\n", line_end)
                    if trailer_end < 0 and buf[line_end : line_end + 4] != b"\r\n\r\n":
                        break  # trailers not complete yet
                    pos = len(buf)
                    break
                data_end = line_end + 2 + size
                if len(buf) < data_end + 2:
                    size = -1
                    break
                out.append(buf[line_end + 2 : data_end])
                pos = data_end + 2
            self._buf = buf[pos:]
            if out:
                yield self._stamp, out[0] if len(out) == 1 else b"".join(out)
                out.clear()
            if size == 0 and pos == len(buf):
                self.complete = True
                return
            if not await self._more():
                raise ClientError("the server closed the connection in the middle of a chunked body")

    async def read(self) -> bytes:
        return b"".join([data async for _, data in self.chunks()])


# -- the client --------------------------------------------------------------------------------


class LeanStreamClient:
    """Keep-alive HTTP/1.1 POSTs to one ``http://`` server, at most ``max_connections`` at once."""

    def __init__(self, base_url: str, max_connections: int | None, timeout: float, kernel_stamps: bool = True) -> None:
        url = urlsplit(base_url)
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"LeanStreamClient needs an http:// URL, got {base_url!r}")
        self.host = url.hostname
        self.port = url.port or 80
        self.prefix = url.path.rstrip("/")
        self.timeout = timeout
        self.kernel_stamps = kernel_stamps and sys.platform.startswith("linux")
        self.clock = "kernel" if self.kernel_stamps else "loop_wake"
        host = f"[{self.host}]" if ":" in self.host else self.host
        self._host_header = host if self.port == 80 else f"{host}:{self.port}"
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(max_connections) if max_connections else None
        self._open: set[_Connection] = set()
        self._watchdog: asyncio.TimerHandle | None = None

    def _watch(self) -> None:
        """Every second or so: fail reads that waited longer than the timeout."""
        now = perf_counter()
        for conn in self._open:
            conn.expire(now, self.timeout)
        period = min(1.0, self.timeout / 4)
        self._watchdog = asyncio.get_running_loop().call_later(period, self._watch)

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        if not infos:
            raise ClientError(f"cannot resolve {self.host}")
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            async with asyncio.timeout(min(self.timeout, 60.0)):
                await loop.sock_connect(sock, address)
        except TimeoutError:
            sock.close()
            raise ClientTimeout(f"connect to {self.host}:{self.port} timed out") from None
        except OSError as exc:
            sock.close()
            raise ClientError(f"connect to {self.host}:{self.port}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        kernel = self.kernel_stamps
        if kernel:
            try:
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            except OSError:
                kernel = False
        if self._watchdog is None:
            self._watchdog = loop.call_later(min(1.0, self.timeout / 4), self._watch)
        return _Connection(sock, kernel)

    def _request_bytes(self, path: str, body: bytes, headers: Mapping[str, str] | None) -> bytes:
        lines = [
            f"POST {self.prefix}{path} HTTP/1.1",
            f"Host: {self._host_header}",
            "Content-Type: application/json",
            "Accept: text/event-stream, application/json",
            f"Content-Length: {len(body)}",
        ]
        lines.extend(f"{k}: {v}" for k, v in (headers or {}).items() if k.lower() not in _MANAGED_HEADERS)
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    @asynccontextmanager
    async def post(
        self, path: str, body: bytes, headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[_LeanResponse]:
        if self._slots is not None:
            await self._slots.acquire()
        conn: _Connection | None = None
        try:
            request = self._request_bytes(path, body, headers)
            response = None
            for attempt in (0, 1):
                reused = bool(self._idle)
                conn = self._idle.pop() if reused else await self._connect()
                self._open.add(conn)
                try:
                    await conn.send(request, self.timeout)
                    response = _LeanResponse(conn, self.timeout)
                    await response.read_head()
                    break
                except ClientError:
                    # a kept-alive connection the server had already closed: retry once on a new one
                    self._discard(conn)
                    conn = None
                    if not reused or attempt:
                        raise
            assert response is not None and conn is not None
            try:
                yield response
            finally:
                if response.complete and response.keep_alive and not conn.eof:
                    self._idle.append(conn)
                else:
                    self._discard(conn)
        finally:
            if self._slots is not None:
                self._slots.release()

    def _discard(self, conn: _Connection) -> None:
        self._open.discard(conn)
        conn.close()

    async def aclose(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()


_MANAGED_HEADERS = {"host", "content-length", "content-type", "transfer-encoding", "connection"}


class HttpxStreamClient:
    """The same interface over httpx, for ``https://`` servers (chunks dated when read: ``processing``)."""

    clock = "processing"

    def __init__(self, base_url: str, max_connections: int | None, timeout: float) -> None:
        import httpx

        self._httpx = httpx
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._client = httpx.AsyncClient(
            base_url=base_url,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 60.0)),
            transport=httpx.AsyncHTTPTransport(limits=limits),
        )

    @asynccontextmanager
    async def post(self, path: str, body: bytes, headers: Mapping[str, str] | None = None) -> AsyncIterator[Any]:
        httpx = self._httpx
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        try:
            async with self._client.stream("POST", path, content=body, headers=hdrs) as response:
                yield _HttpxResponse(response)
        except httpx.TimeoutException as exc:
            raise ClientTimeout(str(exc)) from exc
        except (httpx.TransportError, httpx.StreamError) as exc:
            raise ClientError(f"{type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        await self._client.aclose()


class _HttpxResponse:
    def __init__(self, response: Any) -> None:
        self._response = response
        self.status = response.status_code
        self.headers = response.headers

    async def read(self) -> bytes:
        return bytes(await self._response.aread())

    async def chunks(self) -> AsyncIterator[tuple[float, bytes]]:
        async for data in self._response.aiter_raw():
            yield perf_counter(), data


def make_client(base_url: str, max_connections: int | None, timeout: float, kernel_stamps: bool = True) -> StreamClient:
    """The streaming client for ``base_url``: lean for ``http://``, httpx for ``https://``."""
    if base_url.startswith("http://"):
        return LeanStreamClient(base_url, max_connections, timeout, kernel_stamps)
    return HttpxStreamClient(base_url, max_connections, timeout)
