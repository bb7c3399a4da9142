"""An httpx transport that knows when each byte reached the client.

A load generator that stamps a chunk when its coroutine gets round to it
measures its own event loop as much as the server: with hundreds of streams,
chunks that arrive together are handled one after another, and the last one
is late by the whole burst. Here the event loop's selector notes the moment
``select()`` returns, and the socket protocol files each read under that
moment; on Linux the kernel's own receive timestamp of the packet
(``SO_TIMESTAMPNS``) is used instead, which does not depend on the loop at
all. The request code then asks the stream when the bytes it just got
arrived (:attr:`TimedStream.last_arrival`), so a chunk's time is when it
reached the socket, not when it was parsed.

Plain-HTTP connections use this; TLS connections fall back to httpcore's own
backend and processing-time stamps (``clock: processing`` in the report).
"""

from __future__ import annotations

import asyncio
import collections
import selectors
import socket
import struct
import sys
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


#: Linux SO_TIMESTAMPNS (== SCM_TIMESTAMPNS): the kernel stamps each received packet
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("qq")


class TimedStream(httpcore.AsyncNetworkStream):
    """A TCP stream that records when the bytes it hands out arrived.

    Reads happen in a reader callback as soon as the loop sees the socket
    readable. With kernel receive timestamps (``SO_TIMESTAMPNS``, Linux) a
    read is dated when its last packet reached the socket, however busy the
    loop was; otherwise by the ``select()`` wake that saw it.
    """

    def __init__(self, sock: socket.socket, kernel_stamps: bool) -> None:
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        self.kernel_stamps = kernel_stamps
        self.chunks: collections.deque[tuple[float, bytes]] = collections.deque()
        self.eof = False
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self.last_arrival: float | None = None
        self._loop.add_reader(sock.fileno(), self._on_readable)

    def _on_readable(self) -> None:
        try:
            data, ancdata, _flags, _addr = self._sock.recvmsg(262144, 64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.error = exc
            data, ancdata = b"", []
        if not data:
            self.eof = True
            self._loop.remove_reader(self._sock.fileno())
        else:
            stamp = None
            for level, kind, cdata in ancdata:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(cdata) >= _TIMESPEC.size:
                    sec, nsec = _TIMESPEC.unpack_from(cdata)
                    # kernel stamps are CLOCK_REALTIME; move them onto the perf_counter clock
                    offset = time.time_ns() - time.perf_counter_ns()
                    stamp = (sec * 1_000_000_000 + nsec - offset) / 1e9
            self.chunks.append((stamp if stamp is not None else _wake_time(), data))
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if not self.chunks and not self.eof:
            self._waiter = self._loop.create_future()
            try:
                async with asyncio.timeout(timeout):
                    await self._waiter
            except TimeoutError as exc:
                raise httpcore.ReadTimeout(f"no data for {timeout} s") from exc
            finally:
                self._waiter = None
        if not self.chunks:
            if self.error is not None:
                raise httpcore.ReadError(str(self.error))
            return b""
        stamp, data = self.chunks[0]
        if len(data) > max_bytes:
            self.chunks[0] = (stamp, data[max_bytes:])
            data = data[:max_bytes]
        else:
            self.chunks.popleft()
        self.last_arrival = stamp
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self.eof and self.error is not None:
            raise httpcore.WriteError(str(self.error))
        try:
            async with asyncio.timeout(timeout):
                await self._loop.sock_sendall(self._sock, buffer)
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(f"write took over {timeout} s") from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    async def aclose(self) -> None:
        if self._sock.fileno() >= 0:
            self._loop.remove_reader(self._sock.fileno())
            self._sock.close()

    async def start_tls(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("TimedStream is plain TCP; TLS uses the default transport")

    def get_extra_info(self, info: str) -> Any:
        if info == "socket":
            return self._sock
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "is_readable":
            return bool(self.chunks) or self.eof
        return None


class TimedBackend(httpcore.AsyncNetworkBackend):
    """httpcore network backend producing :class:`TimedStream` connections."""

    def __init__(self, kernel_stamps: bool = True) -> None:
        self.kernel_stamps = kernel_stamps

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        if not infos:
            raise httpcore.ConnectError(f"cannot resolve {host}")
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            if local_address:
                sock.bind((local_address, 0))
            async with asyncio.timeout(timeout):
                await loop.sock_connect(sock, address)
        except TimeoutError as exc:
            sock.close()
            raise httpcore.ConnectTimeout(f"connect to {host}:{port} timed out") from exc
        except OSError as exc:
            sock.close()
            raise httpcore.ConnectError(str(exc)) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        kernel = self.kernel_stamps
        if kernel:
            try:
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            except OSError:
                kernel = False
        return TimedStream(sock, kernel)

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
        raise httpcore.ConnectError("unix sockets are not supported by the load generator")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> Any:
        try:
            async for part in self._stream:
                yield part
        except httpcore.TimeoutException as exc:
            raise httpx.ReadTimeout(str(exc)) from exc
        except (httpcore.NetworkError, httpcore.ProtocolError) as exc:
            raise httpx.RemoteProtocolError(str(exc)) from exc

    async def aclose(self) -> None:
        if hasattr(self._stream, "aclose"):
            await self._stream.aclose()


class TimedTransport(httpx.AsyncBaseTransport):
    """httpx transport over an httpcore pool that uses :class:`TimedBackend`."""

    def __init__(self, max_connections: int | None = None, kernel_stamps: bool = True) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            network_backend=TimedBackend(kernel_stamps),
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
        except (httpcore.NetworkError, httpcore.ProtocolError) as exc:
            raise httpx.ConnectError(str(exc)) from exc
        return httpx.Response(
            status_code=resp.status,
            headers=resp.headers,
            stream=_ResponseStream(resp.stream),
            extensions=resp.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


def make_client(
    base_url: str, max_connections: int | None, timeout: float, kernel_stamps: bool = True
) -> tuple[httpx.AsyncClient, str]:
    """An ``httpx.AsyncClient`` for ``base_url`` and the clock its chunk times use.

    ``kernel`` (socket receive timestamps), ``loop_wake`` (the ``select()``
    that saw the bytes) or ``processing`` (when the code got to them: TLS).
    """
    limits_timeout = httpx.Timeout(timeout, connect=min(timeout, 60.0))
    if base_url.startswith("http://"):
        transport: httpx.AsyncBaseTransport = TimedTransport(max_connections, kernel_stamps)
        clock = "kernel" if kernel_stamps and sys.platform.startswith("linux") else "loop_wake"
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
