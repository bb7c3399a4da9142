"""Event texts aimed at the compiled readers' tokenizer fast paths (``_kineto_scan.c``): keys that look like the
predicted Kineto spellings but are not, other spacings, minified and escaped keys and values, digit runs of every
length around the 8-byte steps, odd number spellings, separators, skipped values and cut pieces.

Each case is the text of one event (a JSON object) and whether the reader is expected to read it itself (``False``:
it may hand it back to msgspec, e.g. an escaped key or a float it cannot read exactly). The tests compare the
reader with msgspec on each of them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

Member = tuple[str, str]  # (key, value text)

#: a kernel as Kineto writes it
KERNEL: list[Member] = [
    ("ph", '"X"'),
    ("cat", '"kernel"'),
    ("name", '"void gemm<128>(float*)"'),
    ("pid", "9"),
    ("tid", "3"),
    ("ts", "4909918480103.493"),
    ("dur", "4.1"),
    (
        "args",
        '{"External id": 5, "correlation": 7, "device": 0, "stream": 7, "Input Dims": [[16, 16, 559, 64], []], '
        '"Ev Idx": 3}',
    ),
]
#: a flow event (other key order, an "id")
FLOW: list[Member] = [
    ("ph", '"f"'),
    ("id", "76778384"),
    ("pid", "2"),
    ("tid", "0"),
    ("ts", "6520621903612.131"),
    ("cat", '"ac2g"'),
    ("name", '"ac2g"'),
    ("bp", '"e"'),
]


def render(members: list[Member], colon: str = ": ", comma: str = ", ", key: Callable[[str], str] = json.dumps) -> str:
    return "{" + comma.join(key(k) + colon + v for k, v in members) + "}"


def _with(members: list[Member], k: str, v: str) -> list[Member]:
    return [(a, v if a == k else b) for a, b in members]


def _renamed(members: list[Member], k: str, new: str) -> list[Member]:
    return [(new if a == k else a, b) for a, b in members]


def _escaped_key(k: str) -> str:
    """The key with its first letter as a \\u escape (msgspec reads it as the key; the reader hands it back)."""
    return f'"\\u{ord(k[0]):04x}{k[1:]}"'


def digit_runs() -> Iterator[str]:
    """Digit runs of 1-25 characters: all nines, ascending digits, a leading 1 then zeros."""
    for n in range(1, 26):
        yield "9" * n
        yield "".join(str((i + 1) % 10) for i in range(n))
        yield "1" + "0" * (n - 1)


def float_texts() -> Iterator[str]:
    for run in digit_runs():
        yield run
        yield "-" + run
        for cut in (1, 3, 8, 9, 13, 16):
            if cut < len(run):
                yield run[:cut] + "." + run[cut:]
        yield "0." + run
        yield "0.000" + run
    yield from ["0", "-0", "0.0", "-0.0", "0e0", "-0e-5", "1e308", "1e309", "5e-324", "2.5e-3", "1E5", "1e+5"]
    yield from ["4909918480103.493e0", "4909918480103.493E-3", "12345678.12345678", "1234567812345678.5"]
    # not JSON numbers: the reader and msgspec must both refuse them
    yield from ["01", "00.5", "-", "1.", ".5", "1e", "1e+", "+1", "12a", "1_000", "NaN", "-NaN", "Infinity"]
    yield from ["-Infinity", "nan", "0x10", "1..2", "1.2.3", "--1", "1e5.5", "١٢"]


def int_texts() -> Iterator[str]:
    for run in digit_runs():
        yield run
        yield "-" + run
    yield from ["0", "-0", "007", "1.0", "1e3", "-1E2", "9223372036854775807", "9223372036854775808"]
    yield from ["-9223372036854775808", "-9223372036854775809", "18446744073709551616", "12a", "- 1", "+5"]


def _skip_values() -> Iterator[tuple[str, bool]]:
    """Texts for an args member nobody reads (skipped, but checked)."""
    yield from [
        ("[1,2]", True),
        ("[ 1 , 2 ]", True),
        ("[1,\n 2]", True),
        ("[1, 2,]", False),
        ("[1 2]", False),
        ("[1, ]", False),
        ("[, 1]", False),
        ('{"a": 1,}', False),
        ('{"a" 1}', False),
        ('{"a": [{"b": []}], "c": {}}', True),
        ("[[[[]]]]", True),
        ('["a", "b\\"c", "\\u00e9", "ü"]', True),
        ('["\\ud800"]', False),
        ('["\\x"]', False),
        ("[true, false, null]", True),
        ("[tru]", False),
        ("[nul]", False),
        ('"' + "x" * 100 + '"', True),
        ("[" * 200 + "]" * 200, True),
        ("[" * 300 + "]" * 300, False),
        ("[" * 4 + "]" * 3, False),
    ]


def cases() -> Iterator[tuple[str, bool]]:
    """(event text, read by the reader itself) for every fast path."""
    for base in (KERNEL, FLOW):
        yield render(base), True
        yield render(base, ":", ","), True  # minified: "ph":"X"
        yield render(base, " : ", " , "), True
        yield render(base, ":\t", ",\n  "), True
        yield render(base, ":  ", ",  "), True
        yield render(base, " :", ","), True
        yield render(base, ":\r\n", ", "), True
        keys = [k for k, _ in base]
        for k in keys:
            # keys that share the predicted key's first bytes, or differ from it after 8 bytes
            for new in (k + "x", k + "_and_more_after_eight", k[:-1], k.upper(), k + " ", " " + k):
                if new:
                    yield render(_renamed(base, k, new)), True
            yield render(base, key=lambda x, k=k: _escaped_key(x) if x == k else json.dumps(x)), False
            # one member spelled otherwise (the rest predicted)
            i = keys.index(k)
            odd = render(base[i : i + 1], " :")[1:-1]
            rest = [render(base[:i])[1:-1], odd, render(base[i + 1 :])[1:-1]]
            yield "{" + ", ".join(x for x in rest if x) + "}", True
            # a duplicate: the predicted spelling and another one
            yield "{" + render(base)[1:-1] + ", " + odd + "}", False
    # escapes where a predicted value sits
    yield render(_with(KERNEL, "ph", '"\\u0058"')), True
    yield render(_with(KERNEL, "cat", '"ker\\nnel"')), True
    yield render(_with(KERNEL, "name", '"\\"quoted\\" \\u00e9 \\ud83d\\ude00"')), True
    yield render(_with(KERNEL, "name", '"' + "n" * 300 + '"')), True
    for text in float_texts():
        for k in ("ts", "dur"):
            yield render(_with(KERNEL, k, text)), False
    for text in int_texts():
        for k in ("pid", "tid"):
            yield render(_with(KERNEL, k, text)), False
        yield render(_with(FLOW, "id", text)), False
        args = f'{{"External id": {text}, "correlation": {text}, "device": {text}, "stream": {text}}}'
        yield render(_with(KERNEL, "args", args)), False
    for text, valid in _skip_values():
        yield render(_with(KERNEL, "args", '{"Ev Idx": ' + text + ', "correlation": 7}')), valid
        yield render([*KERNEL, ("extra", text)]), valid


def cuts(piece: bytes) -> Iterator[bytes]:
    """The piece cut at every byte of its last 24 and inside each predicted key (e.g. ``[{"ph": "X", "pi``)."""
    for n in range(max(1, len(piece) - 24), len(piece)):
        yield piece[:n]
    for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args"):
        at = piece.find(b'"%s":' % k.encode())
        for n in range(at, at + len(k) + 4) if at >= 0 else ():
            yield piece[:n]
