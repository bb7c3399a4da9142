"""Cutting a trace file's event array into pieces of whole events and decoding each: :func:`stream_events`.

The ``traceEvents`` array is cut at event boundaries into pieces of about ``chunk_bytes``, read (or decompressed)
into one reused buffer, or in place from a read-only mapping of a plain file; each piece is decoded with msgspec
(or read by the compiled reader) and handed to a sink, so only one piece is ever decoded at a time. Whenever it meets
something it does not expect (a piece that does not decode, no ``traceEvents`` key, a broken gzip stream), it raises
:class:`~magpie_trace.fastpath.FallBack`: the caller then decodes the whole file with
:func:`~magpie_trace.loader.load_trace`, whose errors name the file and position.
"""

from __future__ import annotations

import mmap
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from magpie_trace.fastpath import FallBack
from magpie_trace.loader import LIST_DECODER, OBJECT_DECODER, TraceObject

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_WS = b" \t\r\n"
_NON_WS = re.compile(rb"[^ \t\r\n]")
#: how many bytes :func:`stream_events` reads (or decompresses) at a time
BLOCK_BYTES = 4 << 20

#: what the last piece cut from a full buffer leaves for the next fill to move to its front (a memmove holding the GIL):
#: the bytes after the first event boundary in its last _TAIL_BYTES, rather than up to a piece (~1/3 of the file)
_TAIL_BYTES = 64 << 10


def _gunzip(f: Any, first: bytes, block: int) -> Iterator[bytes]:
    """Decompressed blocks of a gzip stream (members in sequence, NUL padding between them skipped)."""
    dec = zlib.decompressobj(zlib.MAX_WBITS | 16)
    data = first
    while True:
        if not data:
            data = f.read(block)
            if not data:
                if not dec.eof:
                    raise FallBack("truncated gzip")
                return
        if dec.eof:
            data = data.lstrip(b"\x00")
            if not data:
                continue
            dec = zlib.decompressobj(zlib.MAX_WBITS | 16)
        try:
            out = dec.decompress(data, block)
            while out:
                yield out
                out = dec.decompress(dec.unconsumed_tail, block) if dec.unconsumed_tail else b""
        except zlib.error as exc:
            raise FallBack(f"gzip: {exc}") from None
        data = dec.unused_data if dec.eof else b""


class _Source:
    """Reads a trace's (decompressed) bytes into a caller's buffer."""

    def __init__(self, f: Any, block: int) -> None:
        self._f = self.file = f
        self.size = 0
        self._gz: Iterator[bytes] | None = None
        self._pending = memoryview(b"")
        first = f.read(2)
        self.gzipped = first == b"\x1f\x8b"
        if self.gzipped:
            self._gz = _gunzip(f, first + f.read(block), block)
        else:
            self._pending = memoryview(first)

    def seek(self, offset: int) -> None:
        """Continue from ``offset`` of a plain file (drops the bytes read ahead for the gzip check)."""
        self._f.seek(offset)
        self._pending = memoryview(b"")

    def readinto(self, out: memoryview) -> int:
        if not len(self._pending):
            if self._gz is None:
                n = self._f.readinto(out) or 0
                self.size += n
                return n
            blk = next(self._gz, None)
            if blk is None:
                return 0
            self._pending = memoryview(blk)
        k = min(len(out), len(self._pending))
        out[:k] = self._pending[:k]
        self._pending = self._pending[k:]
        self.size += k
        return k


def _read_header(f: Any, block: int) -> tuple[bytes | None, int]:
    """(bytes before the event array's ``[`` or None for a bare list, file offset just after that ``[``)."""
    f.seek(0)
    data = b""
    while True:
        blk = f.read(block)
        if not blk:
            raise FallBack("no event array")
        data += blk
        m = _NON_WS.search(data)
        if m is None:
            continue
        if data[m.start()] == 0x5B:
            return None, m.start() + 1
        if data[m.start()] != 0x7B:
            raise FallBack("not JSON")
        m = _EVENTS_KEY.search(data)
        if m is not None:
            return data[: m.end() - 1], m.end()


@dataclass
class StreamedFile:
    """What :func:`stream_events` read besides the events."""

    size_bytes: int  # decompressed size (the size on disk for a part of a plain file)
    #: the keys around the event array (distributedInfo, deviceProperties, ...); None for a bare event
    #: list and for a part that does not reach the end of the file
    header: TraceObject | None = None
    #: events in pieces skipped whole because every event in them had a ``skip_categories`` category
    skipped_events: int = 0


class PieceSkipper:
    """Tells whether a piece holds only events of one skipped category, from byte counts alone.

    Profilers write such events in long runs (a Kineto trace's Python frames and CPU instant events: over
    half of its bytes, in one run per profiling window), so a sink that drops them anyway need not have
    them decoded. A piece qualifies when its first event's ``"cat": "<skipped>"`` key occurs as often as
    ``"ph":`` keys do (one per event, however spelled: the trace format requires it); otherwise, or for a
    trace written with other spacing, it is decoded as usual."""

    def __init__(self, categories: Iterable[str]) -> None:
        cats = [json_string(c) for c in sorted(set(categories))]
        self.keys = [b'"cat": ' + c for c in cats] + [b'"cat":' + c for c in cats]
        self.skipped = 0

    def skips(self, work: bytearray, lo: int, hi: int) -> bool:
        first = work.find(b'"cat":', lo, hi)
        if first < 0:
            return False
        key = next((k for k in self.keys if work.startswith(k, first)), None)
        if key is None:  # the piece's first event is kept: decode (the cheap, common rejection)
            return False
        events = work.count(b'"ph":', lo, hi)
        if events == 0 or work.count(key, lo, hi) != events:
            return False
        self.skipped += events
        return True


class _PieceBuffer:
    """The one reused buffer :func:`stream_events` decodes pieces from, and where it stands in the file.

    Data lies in ``work[wpos:end]``; ``work[1]`` is file offset ``base``; ``work[0]`` is room for the first
    piece's ``[``. Each step below runs once per block or piece read, never per event."""

    def __init__(
        self,
        src: _Source,
        chunk_bytes: int,
        block_bytes: int,
        decoder: msgspec.json.Decoder[Any],
        sink: Callable[[Any], None],
        skipper: PieceSkipper | None,
        scanner: Callable[..., Any] | None = None,
        work: Any = None,
    ) -> None:
        self.src = src
        self.scanner = scanner
        self.chunk_bytes = chunk_bytes
        self.block_bytes = block_bytes
        self.decoder = decoder
        self.sink = sink
        self.skipper = skipper
        self.work = bytearray(1 + chunk_bytes + block_bytes) if work is None else work
        self.wpos = 1
        self.end = 1
        self.base = 0

    def fill(self) -> bool:
        """Move the unread data to the front, grow the buffer if one event outgrew it, read one block."""
        work, wpos, end = self.work, self.wpos, self.end
        r = end - wpos
        if wpos > 1:
            work[1 : 1 + r] = work[wpos:end]
            self.base += wpos - 1
            wpos, end = 1, 1 + r
        if len(work) - end < self.block_bytes // 2:  # one event larger than a chunk: grow
            grown = bytearray(end + self.block_bytes)
            grown[:end] = work[:end]
            work = self.work = grown
        n = self.src.readinto(memoryview(work)[end:])
        self.wpos, self.end = wpos, end + n
        return n > 0

    def find_event_array(self) -> bytes | None:
        """Move to the first event of the file's event array; the bytes before its ``[`` (None: a bare list)."""
        while True:
            if not self.fill():
                raise FallBack("no event array")
            work = self.work
            m = _NON_WS.search(work, 1, self.end)
            if m is None:
                continue
            c = work[m.start()]
            if c == 0x5B:  # "[": a bare event list
                self.wpos = m.start() + 1
                return None
            if c != 0x7B:  # "{"
                raise FallBack("not JSON")
            m = _EVENTS_KEY.search(work, 1, self.end)
            if m is not None:
                self.wpos = m.end()
                return bytes(work[1 : m.end() - 1])

    def find_first_event(self, f: Any, start_at: int) -> bytes | None:
        """For a later part: move to the first event boundary at or after file offset ``start_at``;
        the bytes before the event array (read separately, from the start of the file)."""
        header, array_at = _read_header(f, 1 << 20)  # the header is near the start: small reads
        if start_at <= array_at:
            raise FallBack("part starts before the event array")
        self.src.seek(start_at)
        self.base = start_at
        while True:
            if not self.fill():
                raise FallBack("no event boundary in this part")
            m = _BOUNDARY.search(self.work, 1, self.end)
            if m is not None:
                self.wpos = m.end() - 1
                return header
            self.wpos = max(1, self.end - 64)  # keep a possible boundary's beginning

    def decode(self, lo: int, hi: int) -> None:
        """Decode the events in work[lo:hi] (the bytes at lo - 1 and hi are separators) and hand them on."""
        work = self.work
        if self.skipper is not None and self.skipper.skips(work, lo, hi):
            return
        work[lo - 1] = 0x5B
        work[hi] = 0x5D
        piece = memoryview(work)[lo - 1 : hi + 1]
        events = self.scanner(piece) if self.scanner is not None else None
        if events is None:
            try:
                events = self.decoder.decode(piece)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
                raise FallBack(str(exc)) from None
        self.sink(events)

    def decode_pieces(self, stop_at: int | None) -> bool:
        """Decode whole pieces of about ``chunk_bytes``. True when the part that ends at the first event
        boundary at or after file offset ``stop_at`` is done; False at the end of the file, where the
        last piece and what follows the array are left in the buffer (:meth:`rest`)."""
        chunk_bytes = self.chunk_bytes
        eof = False
        stop = -1  # index in ``work`` of the byte after this part's last event, once known
        while True:
            if stop_at is not None and stop < 0 and self.base + self.end - 1 > stop_at:
                m = _BOUNDARY.search(self.work, max(self.wpos, stop_at - self.base + 1), self.end)
                if m is not None:
                    stop = m.start() + 1
            end = self.end
            limit = stop if stop >= 0 else (end if stop_at is None else min(end, stop_at - self.base + 1))
            while limit - self.wpos > chunk_bytes:
                m = _BOUNDARY.search(self.work, self.wpos + chunk_bytes, limit)
                if m is None:
                    break
                if limit - m.end() < chunk_bytes:  # less than a piece would be left: take it, but the last few KiB
                    m = _BOUNDARY.search(self.work, max(m.end(), limit - _TAIL_BYTES), limit) or m
                self.decode(self.wpos, m.start() + 1)
                self.wpos = m.end() - 1
            if stop >= 0:
                self.decode(self.wpos, stop)
                return True
            if eof:
                if stop_at is not None:
                    raise FallBack("no event boundary after the end of this part")
                return False
            eof = not self.fill()

    def rest(self) -> bytes:
        """The unread bytes (a copy), the buffer released."""
        rest = bytes(self.work[self.wpos : self.end])
        self.work = bytearray()
        return rest


class _MappedPieces(_PieceBuffer):
    """The pieces of a plain file cut from a read-only mapping of it (:func:`~magpie_trace.native.guarded_map`):
    nothing is copied into a buffer. ``work`` is the mapping, so an index is a file offset (``base`` 1, see
    :class:`_PieceBuffer`), and a piece's items go to the compiled reader without brackets (``bare``): a mapped byte
    cannot be turned into ``[``. A piece the reader does not handle is copied, bracketed, for msgspec."""

    def __init__(
        self,
        mapping: Any,
        src: _Source,
        chunk_bytes: int,
        decoder: msgspec.json.Decoder[Any],
        sink: Callable[[Any], None],
        scanner: Callable[..., Any],
    ) -> None:
        super().__init__(src, chunk_bytes, 0, decoder, sink, None, scanner, work=mapping)
        self.view = memoryview(mapping)
        self.wpos, self.end, self.base = 0, len(mapping), 1
        self.released = 0  # the mapping's pages below this offset were handed back (release_read)

    def fill(self) -> bool:
        return False  # the whole file is there

    def find_event_array(self) -> bytes | None:
        header, self.wpos = _read_header(self.src.file, 1 << 20)
        return header

    def find_first_event(self, f: Any, start_at: int) -> bytes | None:
        header, array_at = _read_header(f, 1 << 20)
        if start_at <= array_at:
            raise FallBack("part starts before the event array")
        m = _BOUNDARY.search(self.work, start_at)
        if m is None:
            raise FallBack("no event boundary in this part")
        self.wpos = m.end() - 1
        return header

    def decode(self, lo: int, hi: int) -> None:
        piece = self.view[lo:hi]
        events = self.scanner(piece, True)  # type: ignore[misc]
        if events is None:
            try:
                events = self.decoder.decode(b"".join((b"[", piece, b"]")))
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
                raise FallBack(str(exc)) from None
        piece.release()
        self.release_read(hi)
        self.sink(events)

    def release_read(self, upto: int) -> None:
        """Hand back the mapping's pages read so far (whole pages below ``upto``). Mapped pages count in the process's
        resident memory, so without this a 550 MB trace read in place would show ~550 MB more of it than read through a
        buffer; the page cache keeps them, and a byte read again (a part's end) is simply mapped again."""
        upto -= upto % mmap.PAGESIZE
        if upto > self.released:
            with suppress(OSError, ValueError, AttributeError):  # a hint: without MADV_DONTNEED the pages just stay
                self.work.madvise(mmap.MADV_DONTNEED, self.released, upto - self.released)
            self.released = upto

    def rest(self) -> bytes:
        rest = bytes(self.view[self.wpos : self.end])
        self.view.release()
        return rest


def _decode_last_piece(
    rest: bytes,
    header: bytes | None,
    decoder: msgspec.json.Decoder[Any],
    sink: Callable[[Any], None],
    scanner: Callable[[Any], Any] | None = None,
) -> TraceObject | None:
    """Decode the last piece of the event array and the keys after it, from ``rest`` (the file from the
    last piece on). The array's closing ``]`` is one of the last ``]`` in ``rest``: the first of them after
    which the rest of the file decodes. The header object, or None for a bare event list."""
    obj: TraceObject | None = None
    k = len(rest)
    for _ in range(8):
        k = rest.rfind(b"]", 0, k)
        if k < 0:
            break
        tail = rest[k + 1 :]
        try:
            if header is None:
                if tail.strip(_WS):
                    raise FallBack("trailing data")
            else:
                obj = OBJECT_DECODER.decode(header + b"[]" + tail)
                if obj.traceEvents:
                    raise FallBack("second event array")
            piece = b"".join((b"[", rest[:k], b"]"))
            events = scanner(piece) if scanner is not None else None
            if events is None:
                events = decoder.decode(piece)
        except (msgspec.DecodeError, msgspec.ValidationError, FallBack, RecursionError):
            obj = None
            continue
        sink(events)
        del events
        break
    else:
        raise FallBack("end of the event array not found")
    if k < 0:
        raise FallBack("end of the event array not found")
    return obj


def json_string(text: str) -> bytes:
    """``text`` as a JSON string literal, as trace writers spell it (non-ASCII kept)."""
    return msgspec.json.encode(text)


def stream_events(
    path: Path,
    sink: Callable[[list[Any]], None],
    *,
    decoder: msgspec.json.Decoder[Any] = LIST_DECODER,
    part: tuple[int, int] = (0, 1),
    chunk_bytes: int = 1 << 20,  # 1-4 MiB decoded fastest here (a chunk's objects stay in cache)
    block_bytes: int = BLOCK_BYTES,
    skip_categories: Iterable[str] = (),
    scanner: Callable[..., Any] | None = None,
    map_file: bool = False,
) -> StreamedFile:
    """Decode the events of ``path`` piece by piece, handing each piece's list to ``sink``; raises
    :class:`FallBack` when it cannot.

    ``decoder`` decodes a JSON list of events (default: a list of core :class:`Event`); plugins that need
    other fields pass their own, so they share the streaming, splitting and gzip handling.
    ``msgspec.Raw`` fields are views of the bytes they were decoded from, and pieces are decoded in place
    from a reused buffer: a sink that keeps Raw values past its call must copy them.

    Pieces are decoded in place from one reused buffer: the byte before a piece's first event becomes
    ``[`` and the one after its last event ``]`` (both are separators, never needed again).

    ``part=(i, n)`` (plain JSON only) decodes the i-th of n byte ranges of the file: the events from the
    first event boundary at or after ``i * size // n`` up to the first one at or after ``(i + 1) * size // n``;
    :func:`merge_tables` joins the parts. A cut that is not at the top level of the event array makes a
    piece fail to decode, so a part either is right or raises :class:`FallBack`.

    ``skip_categories``: categories the sink would drop. A piece in which every event has one of them is
    not decoded at all (only counted, in :attr:`StreamedFile.skipped_events`); the sink may still get such
    events in pieces that also hold others.

    ``scanner`` (:func:`magpie_trace.native.scanner`): each piece is first read by it, and what it returns
    (columns) goes to the sink instead of the decoded list; a piece it does not handle (None) is decoded as usual.
    ``map_file``: the scanner also reads a piece's items without their brackets (``scanner(buf, True)``): with it (and
    no ``skip_categories``) a plain file's pieces are read in place from a read-only mapping of the file, not copied
    into a buffer; a file that shrinks meanwhile raises :class:`FallBack` once the read is done.
    """
    from magpie_trace.native import guarded_map

    index, count = part
    skipper = PieceSkipper(skip_categories) if skip_categories else None
    with path.open("rb") as f:
        size_on_disk = os.fstat(f.fileno()).st_size
        src = _Source(f, block_bytes)
        if count > 1 and src.gzipped:
            raise FallBack("a gzip stream cannot be split")
        mappable = map_file and scanner is not None and skipper is None and not src.gzipped
        with guarded_map(f, size_on_disk if mappable else 0) as mapping:
            if mapping is not None:
                buf: _PieceBuffer = _MappedPieces(mapping, src, chunk_bytes, decoder, sink, scanner)
            else:
                buf = _PieceBuffer(src, chunk_bytes, block_bytes, decoder, sink, skipper, scanner)
            stop_at = (index + 1) * size_on_disk // count if index < count - 1 else None
            start_at = index * size_on_disk // count
            header = buf.find_event_array() if index == 0 else buf.find_first_event(f, start_at)
            ended = buf.decode_pieces(stop_at)  # True: this part ended before the end of the file
            if not ended:
                rest = buf.rest()
            del buf
        if ended:
            return StreamedFile(size_bytes=size_on_disk, skipped_events=skipper.skipped if skipper else 0)
        size = src.size if index == 0 and mapping is None else size_on_disk
    obj = _decode_last_piece(rest, header, decoder, sink, scanner)
    return StreamedFile(size_bytes=size, header=obj, skipped_events=skipper.skipped if skipper else 0)
