"""Damaged copies of a trace file for the readers' differential tests (compiled reader vs msgspec)."""

from __future__ import annotations

import random


def corrupted(data: bytes, seed: int) -> bytes:
    """``data`` truncated (seed % 3 == 0), with a few bytes flipped (1), or with invalid UTF-8 in a name (2)."""
    rng = random.Random(seed)
    out = bytearray(data)
    if seed % 3 == 0:
        return bytes(out[: rng.randrange(1, len(out))])
    if seed % 3 == 1:
        for _ in range(3):  # invalid UTF-8 or structure included
            out[rng.randrange(len(out))] = rng.choice(b'\x80\xff{}[]",:\\\x00 ')
        return bytes(out)
    i = out.index(b'"name"')
    out[i + 9 : i + 9] = rng.choice([b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82"])
    return bytes(out)
