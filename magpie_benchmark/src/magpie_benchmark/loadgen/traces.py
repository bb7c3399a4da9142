"""Trace files for replay: Mooncake JSONL, AIPerf's ``multi_turn`` sessions, Weka agentic traces, and their prompts.

**Mooncake** (kvcache-ai/Mooncake's open traces; AIPerf's ``mooncake_trace`` dataset type): one JSON
object per line with ``timestamp`` (ms from the trace start), ``input_length`` (tokens; or
``text_input``, the exact text), ``output_length`` (tokens) and ``hash_ids`` (one id per block of
``block_size`` input tokens, 512 in the published traces: two requests with the same first ids share
that prefix). AIPerf's extensions are read too: ``session_id`` groups lines into one multi-turn
session (in file order) and ``delay`` (ms) is the pause after the previous turn's answer.

**AIPerf multi_turn**: one session per line, ``{"session_id": ..., "turns": [{"text" | "texts" |
"input_length", "timestamp" | "delay", "output_length" | "max_tokens", "hash_ids"}, ...]}``.

**Weka** (kv-cache-tester's agentic-coding format; InferenceX's AgentX corpus ``traces.jsonl``, read by
AIPerf's weka loader): one trace per line, ``{"id", "block_size" (64), "hash_id_scope" ("local": ids are
per trace; "global": shared by all traces), "requests": [...]}``; a request is ``{"type": "n" | "s", "t"
(seconds from the trace start), "in", "out" (tokens), "hash_ids", "api_time" (seconds the server took)}``
and a ``{"type": "subagent", "t", "agent_id", "requests": [...]}`` entry holds a subagent's own requests
(nested ones too; their ``t`` is absolute, or relative to the entry when smaller than its ``t``). A
trace's requests are one session; each subagent is a session of its own, starting at its first request
(magpie does not hold the parent's next turn until the subagent ends, as AIPerf's spawn/join does).
``in`` counts the request's **whole** context (its ``hash_ids`` cover it all, so consecutive requests share
their leading blocks), so each turn is sent as one message of ``in`` tokens rather than appended to the
conversation; a turn is due ``t`` after the session start and not before the previous answer plus the
recorded idle gap ``t - (t_prev + api_time_prev)``, as AIPerf replays it (end to start).

A session's turn N+1 is sent after turn N's answer (plus its ``delay``, and not before its
``timestamp``); its prompt is the whole conversation so far (every earlier user message and the
server's actual answers) followed by the new user message, so the context grows as an agent's does.
``input_length``/``hash_ids`` describe that new user message.

Prompt synthesis follows the trace's unit, tokens, when a tokenizer is given (the benchmark passes the
one it resolves from ``tokenizer`` / the model): a hash id's block is a fixed run of ``block_size`` token
ids drawn from the vocabulary (special tokens left out) by a generator seeded by (id, block size, salt)
and settled by decoding and re-encoding until its text is exactly ``block_size`` tokens, so the same id
gives the same tokens in every request and a server's prefix cache can hit; the tokens after the listed
blocks are drawn from a generator seeded by the request's place in the file, so they are unique to it.
The message (its last block cut to fit) is decoded to text, re-encoded, and its tail cut or padded until
it is ``input_length`` tokens (less the special tokens the tokenizer adds, for a session's first
message, which opens the prompt), as serving benchmarks build their random prompts. Without a tokenizer
the same recipe runs on plain words (about one token each with BPE vocabularies, often several with
small ones), and the server decides the token count. Malformed lines raise
:class:`~magpie_benchmark.loadgen.datasets.DatasetError` naming ``file:line`` and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from magpie_benchmark.loadgen.datasets import _WORDS, DatasetError, Tokenizer, allowed_token_ids, decode_to_length

TraceFormat = Literal["auto", "mooncake", "multi_turn", "weka"]
#: tokens per hash id in the published Mooncake traces (and AIPerf's default block size)
DEFAULT_BLOCK_SIZE = 512
#: keeps unique filler apart from any hash id's text (hash ids are non-negative)
_UNIQUE_SALT = 0x6D616770
#: decode/re-encode rounds that settle a message on its token count (joins of blocks rarely need more than one)
_FIT_TRIES = 8


@dataclass
class TraceTurn:
    """One request of a trace: the new user message and when it may be sent."""

    text: str
    input_len: int
    output_len: int
    #: earliest send time, seconds from the replay start (already multiplied by the time scale)
    at_s: float | None = None
    #: pause after the previous turn's answer, seconds (already scaled)
    delay_s: float | None = None
    hash_ids: tuple[int, ...] = ()
    where: str = ""


@dataclass
class TraceSession:
    session_id: str
    turns: list[TraceTurn] = field(default_factory=list)
    #: each turn's text is the whole prompt (Weka: ``in`` counts the full context), not a message to append
    full_prompts: bool = False

    @property
    def start_s(self) -> float:
        return (self.turns[0].at_s or 0.0) if self.turns else 0.0


@dataclass
class TraceReplay:
    """What the load generator replays: sessions, and whether their timestamps and delays are kept."""

    sessions: list[TraceSession]
    #: False: every session starts at once (as concurrency allows) and turns follow without pauses
    keep_timing: bool = True
    #: where the trace file came from (url, cached path, SHA-256) for the report
    source: dict[str, Any] | None = None


def block_words(hash_id: int, block_size: int, salt: int = 0) -> list[str]:
    """The fixed words of one hash id's block (the same in every request of every session). A different
    ``salt`` (the seed of a repeat) gives other words, so a cache filled by one repeat does not serve the next."""
    rng = np.random.default_rng([int(hash_id), block_size, salt])
    return [_WORDS[int(k)] for k in rng.integers(0, len(_WORDS), size=block_size)]


def synth_text(input_len: int, hash_ids: tuple[int, ...], block_size: int, unique_seed: int, salt: int = 0) -> str:
    """``input_len`` words: the blocks of ``hash_ids`` in order (the last one cut to fit), then unique words."""
    words: list[str] = []
    for hid in hash_ids:
        if len(words) >= input_len:
            break
        words.extend(block_words(hid, block_size, salt)[: input_len - len(words)])
    rest = input_len - len(words)
    if rest > 0:
        rng = np.random.default_rng([_UNIQUE_SALT, unique_seed, salt])
        words.extend(_WORDS[int(k)] for k in rng.integers(0, len(_WORDS), size=rest))
    return " ".join(words)


class TokenSynth:
    """Token-exact trace prompts: hash-id blocks as fixed token runs, the rest unique (module docstring)."""

    def __init__(self, tokenizer: Tokenizer, block_size: int, salt: int = 0) -> None:
        self.tokenizer, self.block_size, self.salt = tokenizer, block_size, salt
        self.pool = _standalone_ids(tokenizer)
        #: added by the server's tokenizer to a whole prompt (a BOS), so left out of a prompt's first message
        self.special = int(tokenizer.num_special_tokens_to_add())
        self._blocks: dict[int, list[int]] = {}

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def block(self, hash_id: int) -> list[int]:
        """The token ids of one hash id's block, the same in every request (cached: traces repeat ids)."""
        ids = self._blocks.get(hash_id)
        if ids is None:
            rng = np.random.default_rng([int(hash_id), self.block_size, self.salt])
            ids = self._fit(self._draw(rng, self.block_size), self.block_size, rng)[1]
            self._blocks[hash_id] = ids
        return ids

    def text(self, input_len: int, hash_ids: tuple[int, ...], unique_seed: int, opens_prompt: bool) -> str:
        """A message of ``input_len`` tokens: the blocks of ``hash_ids`` (the last cut to fit), then unique
        tokens; re-encoding can merge tokens where pieces join, so the tail is cut or padded until it fits."""
        target = max(1, input_len - (self.special if opens_prompt else 0))
        ids: list[int] = []
        for hid in hash_ids:
            if len(ids) >= target:
                break
            ids.extend(self.block(hid)[: target - len(ids)])
        rng = np.random.default_rng([_UNIQUE_SALT, unique_seed, self.salt])
        ids.extend(self._draw(rng, target - len(ids)))
        return self._fit(ids, target, rng)[0]

    def _fit(self, ids: list[int], target: int, rng: np.random.Generator) -> tuple[str, list[int]]:
        return decode_to_length(self.tokenizer, ids, target, rng, max_retry=_FIT_TRIES, pool=self.pool)

    def _draw(self, rng: np.random.Generator, n: int) -> list[int]:
        return self.pool[rng.integers(0, len(self.pool), size=max(0, n))].tolist()


def _standalone_ids(tokenizer: Tokenizer) -> np.ndarray:
    """The non-special ids whose text re-encodes to the id itself. Others (a byte-level id holding part of a
    UTF-8 character decodes to a replacement character, three tokens again) would make lengths drift."""
    ids = allowed_token_ids(tokenizer)
    singles = [[int(i)] for i in ids]
    if hasattr(tokenizer, "batch_decode"):  # a Hugging Face tokenizer: one batched call each way (large vocabularies)
        texts = tokenizer.batch_decode(singles)
        again = tokenizer(texts, add_special_tokens=False)["input_ids"]
    else:
        texts = [tokenizer.decode(one) for one in singles]
        again = [tokenizer.encode(t, add_special_tokens=False) for t in texts]
    keep = [one[0] for one, back in zip(singles, again, strict=True) if list(back) == one]
    return np.array(keep) if keep else ids


def _int_field(obj: dict[str, Any], key: str, where: str, *, minimum: int = 0, required: bool = False) -> int | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise DatasetError(f"{where}: missing field '{key}'")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < minimum:
        raise DatasetError(f"{where}: field '{key}' must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def _ms_field(obj: dict[str, Any], key: str, where: str, scale: float) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise DatasetError(f"{where}: field '{key}' must be milliseconds >= 0, got {value!r}")
    return float(value) / 1000.0 * scale


def _hash_ids(obj: dict[str, Any], where: str) -> tuple[int, ...]:
    ids = obj.get("hash_ids")
    if ids is None:
        return ()
    if not isinstance(ids, list) or any(isinstance(h, bool) or not isinstance(h, int) or h < 0 for h in ids):
        raise DatasetError(f"{where}: field 'hash_ids' must be a list of whole numbers >= 0, got {ids!r}")
    return tuple(ids)


def _turn(
    obj: dict[str, Any],
    where: str,
    *,
    scale: float,
    block_size: int,
    default_output: int | None,
    seed: int,
    salt: int,
    synth: TokenSynth | None,
    opens: bool,
) -> TraceTurn:
    """One request from a Mooncake line or a multi_turn turn (``opens``: the first of its session)."""
    hash_ids = _hash_ids(obj, where)
    text = obj.get("text_input", obj.get("text"))
    if text is None and isinstance(obj.get("texts"), list):
        text = "\n".join(str(t) for t in obj["texts"])
    if text is not None and not isinstance(text, str):
        raise DatasetError(f"{where}: field 'text' must be a string, got {type(text).__name__}")
    input_len = _int_field(obj, "input_length", where, minimum=1)
    if text is None:
        if input_len is None:
            raise DatasetError(f"{where}: needs 'input_length' (tokens) or a text ('text_input', 'text', 'texts')")
        if synth is None:
            text = synth_text(input_len, hash_ids, block_size, seed, salt)
        else:
            text = synth.text(input_len, hash_ids, seed, opens)
    elif synth is None:
        input_len = max(1, len(text.split()))
    else:
        input_len = max(1, synth.count(text) + (synth.special if opens else 0))
    output_len = _int_field(obj, "output_length", where, minimum=1)
    if output_len is None:
        output_len = _int_field(obj, "max_tokens", where, minimum=1)
    if output_len is None:
        if default_output is None:
            raise DatasetError(f"{where}: missing field 'output_length' and no default output length")
        output_len = default_output
    at_s = _ms_field(obj, "timestamp", where, scale)
    delay_s = _ms_field(obj, "delay", where, scale)
    return TraceTurn(text, input_len, output_len, at_s, delay_s, hash_ids, where)


def _lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    try:
        raw = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read the trace: {exc}") from exc
    rows = []
    for lineno, line in enumerate(raw, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{lineno}: invalid JSON: {exc.msg}") from exc
        if not isinstance(obj, dict):
            raise DatasetError(f"{path}:{lineno}: each line must be a JSON object")
        rows.append((lineno, obj))
    if not rows:
        raise DatasetError(f"{path}: the trace has no requests")
    return rows


def detect_format(rows: list[tuple[int, dict[str, Any]]]) -> Literal["mooncake", "multi_turn", "weka"]:
    first = rows[0][1]
    if "turns" in first:
        return "multi_turn"
    return "weka" if "requests" in first else "mooncake"


def read_trace(
    path: str | Path,
    *,
    fmt: TraceFormat = "auto",
    time_scale: float = 1.0,
    block_size: int = DEFAULT_BLOCK_SIZE,
    default_output_len: int | None = None,
    max_sessions: int | None = None,
    salt: int = 0,
    tokenizer: Tokenizer | None = None,
) -> list[TraceSession]:
    """The sessions of a trace file, ordered by their first send time (ties: file order). With
    ``tokenizer``, synthetic messages are ``input_length`` tokens of it; without, that many words."""
    if not time_scale > 0 or block_size < 1:
        raise DatasetError(f"{path}: time_scale must be > 0 and block_size >= 1")
    path = Path(path)
    rows = _lines(path)
    kind = detect_format(rows) if fmt == "auto" else fmt
    synth = TokenSynth(tokenizer, block_size, salt) if tokenizer is not None else None
    opts = {
        "scale": time_scale,
        "block_size": block_size,
        "default_output": default_output_len,
        "salt": salt,
        "synth": synth,
    }
    sessions = {"multi_turn": _multi_turn, "weka": _weka, "mooncake": _mooncake}[kind](path, rows, opts)
    sessions.sort(key=lambda s: s.start_s)  # stable: file order among equal start times
    return sessions[:max_sessions] if max_sessions else sessions


def _mooncake(path: Path, rows: list[tuple[int, dict[str, Any]]], opts: dict[str, Any]) -> list[TraceSession]:
    by_id: dict[str, TraceSession] = {}
    out: list[TraceSession] = []
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        sid = obj.get("session_id")
        if sid is None:
            out.append(TraceSession(f"line-{lineno}", [_turn(obj, where, seed=lineno, opens=True, **opts)]))
            continue
        if not isinstance(sid, str | int) or isinstance(sid, bool):
            raise DatasetError(f"{where}: field 'session_id' must be a string or a number, got {sid!r}")
        session = by_id.get(str(sid))
        if session is None:
            session = by_id[str(sid)] = TraceSession(str(sid))
            out.append(session)
        session.turns.append(_turn(obj, where, seed=lineno, opens=not session.turns, **opts))
    return out


def _multi_turn(path: Path, rows: list[tuple[int, dict[str, Any]]], opts: dict[str, Any]) -> list[TraceSession]:
    out: list[TraceSession] = []
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        turns = obj.get("turns")
        if not isinstance(turns, list) or not turns:
            raise DatasetError(f"{where}: field 'turns' must be a non-empty list of turns")
        session = TraceSession(str(obj.get("session_id") or f"line-{lineno}"))
        for k, t in enumerate(turns):
            if not isinstance(t, dict):
                raise DatasetError(f"{where}: turns[{k}] must be a JSON object")
            session.turns.append(_turn(t, f"{where}: turns[{k}]", seed=lineno * 100_003 + k, opens=k == 0, **opts))
        out.append(session)
    return out


#: keeps a "local"-scope trace's hash ids apart from every other trace's (ids are far below 2**40)
_LOCAL_SCOPE_SHIFT = 40


def _weka(path: Path, rows: list[tuple[int, dict[str, Any]]], opts: dict[str, Any]) -> list[TraceSession]:
    out: list[TraceSession] = []
    synths: dict[int, TokenSynth] = {}  # by block size: the trace's own (64 in the AgentX corpus), built once
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        requests = obj.get("requests")
        if not isinstance(requests, list) or not requests:
            raise DatasetError(f"{where}: field 'requests' must be a non-empty list")
        scope = obj.get("hash_id_scope", "local")
        if scope not in ("local", "global"):
            raise DatasetError(f"{where}: field 'hash_id_scope' must be 'local' or 'global', got {scope!r}")
        block = _int_field(obj, "block_size", where, minimum=1) or opts["block_size"]
        synth = opts["synth"]
        if synth is not None and synth.block_size != block:
            synth = synths.setdefault(block, TokenSynth(synth.tokenizer, block, synth.salt))
        line_opts = {**opts, "block_size": block, "synth": synth}
        stream = _WekaStream(where, lineno, lineno << _LOCAL_SCOPE_SHIFT if scope == "local" else 0, line_opts)
        stream.walk(str(obj.get("id") or f"line-{lineno}"), requests, 0.0, out)
    return out


class _WekaStream:
    """Turns one Weka trace (and its subagents, each a session) into sessions."""

    def __init__(self, where: str, lineno: int, id_offset: int, opts: dict[str, Any]) -> None:
        self.where, self.id_offset, self.opts = where, id_offset, opts
        self.seed = lineno * 100_003  # unique filler per request across the file

    def walk(self, sid: str, requests: list[Any], origin_s: float, out: list[TraceSession]) -> None:
        session = TraceSession(sid, full_prompts=True)
        out.append(session)
        prev: tuple[float, float] | None = None  # (t, api_time) of the previous request
        for k, req in enumerate(requests):
            where = f"{self.where}: {sid} requests[{k}]"
            if not isinstance(req, dict):
                raise DatasetError(f"{where}: must be a JSON object")
            t = _seconds(req, "t", where)
            if t < origin_s:  # older captures give a subagent's times relative to its spawn
                t += origin_s
            if req.get("type") == "subagent":
                inner = req.get("requests")
                if not isinstance(inner, list):
                    raise DatasetError(f"{where}: field 'requests' of a subagent must be a list")
                if inner:
                    self.walk(f"{sid}::sa:{req.get('agent_id', k)}", inner, t, out)
                continue
            if req.get("type") not in ("n", "s"):
                raise DatasetError(f"{where}: field 'type' must be 'n', 's' or 'subagent', got {req.get('type')!r}")
            session.turns.append(self._turn(req, where, t, prev, opens=not session.turns))
            prev = (t, _seconds(req, "api_time", where, default=0.0))

    def _turn(
        self, req: dict[str, Any], where: str, t: float, prev: tuple[float, float] | None, opens: bool
    ) -> TraceTurn:
        ids = _hash_ids(req, where)
        row = {
            "input_length": max(1, _int_field(req, "in", where, required=True) or 0),
            "output_length": max(1, _int_field(req, "out", where, required=True) or 0),
            "hash_ids": [h + self.id_offset for h in ids],
        }
        self.seed += 1
        turn = _turn(row, where, seed=self.seed, opens=opens, **self.opts)
        scale = self.opts["scale"]
        turn.at_s = t * scale
        if prev is not None:
            turn.delay_s = max(0.0, t - prev[0] - prev[1]) * scale
        return turn


def _seconds(obj: dict[str, Any], key: str, where: str, default: float | None = None) -> float:
    value = obj.get(key)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise DatasetError(f"{where}: field '{key}' must be seconds >= 0, got {value!r}")
    return float(value)


def summary(sessions: list[TraceSession]) -> dict[str, Any]:
    """What the trace holds: sessions, turns, tokens, and how much of its input is listed as shared blocks."""
    turns = [t for s in sessions for t in s.turns]
    seen: set[int] = set()
    repeated = 0
    for t in turns:
        repeated += sum(1 for h in t.hash_ids if h in seen)
        seen.update(t.hash_ids)
    listed = sum(len(t.hash_ids) for t in turns)
    return {
        "sessions": len(sessions),
        "turns": len(turns),
        "multi_turn_sessions": sum(1 for s in sessions if len(s.turns) > 1),
        "input_tokens": sum(t.input_len for t in turns),
        "output_tokens": sum(t.output_len for t in turns),
        "hash_blocks": listed,
        "repeated_hash_blocks": repeated,
        "span_s": max((t.at_s or 0.0) for t in turns) if turns else 0.0,
    }
