"""An httpx transport that knows when each byte reached the client.

A load generator that stamps a chunk when its coroutine gets round to it
measures its own event loop as much as the server: with hundreds of streams,
chunks that arrive together are handled one after another, and the last one
is late by the whole burst. Here the event loop's selector notes the moment
``select()`` returns, and the socket protocol files each read under that
moment. The request code then asks the stream when the bytes it just got
arrived (:attr:`TimedStream.last_arrival`), so a chunk's time is when the
loop first saw it readable, not when it was parsed.

Plain-HTTP connections use this; TLS connections fall back to httpcore's own
backend and processing-time stamps (``clock: processing`` in the report).
"""

from __future__ import annotations

import asyncio
import collections
import selectors
import socket
import time
from typing import Any

import httpcore
import httpx

perf_counter = time.perf_counter


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


def _wake_time() -> float:
    """When the running loop's selector last woke (now, if the loop is not ours)."""
    try:
        selector = asyncio.get_running_loop()._selector  # type: ignore[attr-defined]
    except (RuntimeError, AttributeError):
        return perf_counter()
    wake = getattr(selector, "last_wake", None)
    return wake if wake is not None else perf_counter()


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.chunks: collections.deque[tuple[float, bytes]] = collections.deque()
        self.waiter: asyncio.Future[None] | None = None
        self.transport: asyncio.Transport | None = None
        self.eof = False
        self.error: BaseException | None = None
        self._write_waiter: asyncio.Future[None] | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.chunks.append((_wake_time(), data))
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()
        if self._write_waiter is not None and not self._write_waiter.done():
            self._write_waiter.set_result(None)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._write_waiter is not None and not self._write_waiter.done():
            self._write_waiter.set_result(None)

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def drain(self) -> None:
        if self._paused:
            self._write_waiter = asyncio.get_running_loop().create_future()
            await self._write_waiter


class TimedStream(httpcore.AsyncNetworkStream):
    """A TCP stream that records when the bytes it hands out arrived."""

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self.last_arrival: float | None = None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        if not protocol.chunks and not protocol.eof:
            protocol.waiter = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await protocol.waiter
            except TimeoutError as exc:
                raise httpcore.ReadTimeout(f"no data for {timeout} s") from exc
            finally:
                protocol.waiter = None
        if not protocol.chunks:
            if protocol.error is not None:
                raise httpcore.ReadError(str(protocol.error))
            return b""
        stamp, data = protocol.chunks[0]
        if len(data) > max_bytes:
            protocol.chunks[0] = (stamp, data[max_bytes:])
            data = data[:max_bytes]
        else:
            protocol.chunks.popleft()
        self.last_arrival = stamp
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self._transport.is_closing():
            raise httpcore.WriteError("connection closed")
        self._transport.write(buffer)
        async with asyncio.timeout(timeout):
            await self._protocol.drain()

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("TimedStream is plain TCP; TLS uses the default transport")

    def get_extra_info(self, info: str) -> Any:
        if info == "socket":
            return self._transport.get_extra_info("socket")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "is_readable":
            return bool(self._protocol.chunks) or self._protocol.eof
        return None


class TimedBackend(httpcore.AsyncNetworkBackend):
    """httpcore network backend producing :class:`TimedStream` connections."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_connection(
                    _Protocol, host, port, local_addr=(local_address, 0) if local_address else None
                )
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"connect to {host}:{port} timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return TimedStream(transport, protocol)  # type: ignore[arg-type]

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
        raise httpcore.ConnectError("unix sockets are not supported by the load generator")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> Any:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        if hasattr(self._stream, "aclose"):
            await self._stream.aclose()


class TimedTransport(httpx.AsyncBaseTransport):
    """httpx transport over an httpcore pool that uses :class:`TimedBackend`."""

    def __init__(self, max_connections: int | None = None) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            network_backend=TimedBackend(),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        req = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,  # type: ignore[arg-type]
            extensions=request.extensions,
        )
        try:
            resp = await self._pool.handle_async_request(req)
        except httpcore.TimeoutException as exc:
            raise httpx.TimeoutException(str(exc), request=request) from exc
        except httpcore.NetworkError as exc:
            raise httpx.TransportError(str(exc)) from exc
        return httpx.Response(
            status_code=resp.status,
            headers=resp.headers,
            stream=_ResponseStream(resp.stream),
            extensions=resp.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


def make_client(base_url: str, max_connections: int | None, timeout: float) -> tuple[httpx.AsyncClient, str]:
    """An ``httpx.AsyncClient`` for ``base_url`` and the clock it gives (``arrival`` or ``processing``)."""
    limits_timeout = httpx.Timeout(timeout, connect=min(timeout, 60.0))
    if base_url.startswith("http://"):
        transport: httpx.AsyncBaseTransport = TimedTransport(max_connections=max_connections)
        clock = "arrival"
    else:
        transport = httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        )
        clock = "processing"
    return httpx.AsyncClient(base_url=base_url, transport=transport, timeout=limits_timeout), clock


def arrival_time(response: httpx.Response) -> float:
    """When the bytes last read for ``response`` reached the loop (now, if unknown)."""
    stream = response.extensions.get("network_stream")
    stamp = getattr(stream, "last_arrival", None)
    return stamp if stamp is not None else perf_counter()
