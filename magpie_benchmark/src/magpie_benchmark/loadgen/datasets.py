"""Request datasets: random tokens, ShareGPT conversations, JSONL prompts.

``random`` follows the widely used serving-benchmark semantics: per request,
an input length is drawn uniformly from the integers in
``[floor(L*(1-r)), ceil(L*(1+r))]`` with ``L = input_len - special tokens``
and an output length from ``[max(1, floor(O*(1-r))), ceil(O*(1+r))]``
(``r = range_ratio`` in ``[0, 1)``), plus a vocabulary offset; the prompt is
the token run ``(offset + i + arange(len)) % vocab`` over non-special tokens,
decoded and re-encoded until it has the drawn length. All draws come from
``numpy.random.default_rng(seed)`` in that order, so a seed gives the same
lengths as other tools that follow these semantics.

Without a tokenizer, random prompts are built from plain words (about one
token each) and their real length is read from the server's usage counts.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

#: common short English words, each one token in most BPE vocabularies
_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "at",
    "from",
    "his",
    "her",
    "it",
    "an",
    "were",
    "are",
    "which",
    "this",
    "be",
    "or",
    "has",
    "had",
    "not",
    "but",
    "one",
    "new",
    "first",
    "all",
    "their",
    "been",
    "also",
    "time",
    "two",
    "after",
    "can",
    "year",
    "more",
    "other",
    "its",
    "into",
    "people",
    "when",
    "city",
    "than",
    "some",
    "would",
    "only",
    "there",
    "her",
    "most",
    "over",
    "such",
    "where",
    "made",
    "many",
    "known",
    "these",
    "she",
    "may",
    "during",
    "part",
    "later",
    "team",
    "used",
    "while",
    "three",
    "world",
    "both",
    "between",
    "including",
    "under",
    "each",
    "then",
    "high",
    "well",
    "said",
    "school",
    "film",
    "state",
]


class Tokenizer(Protocol):
    vocab_size: int
    all_special_ids: list[int]

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...
    def decode(self, ids: list[int]) -> str: ...
    def num_special_tokens_to_add(self) -> int: ...


@dataclass
class SampleRequest:
    prompt: str | list[int]
    prompt_len: int
    expected_output_len: int
    #: the whole conversation for the chat endpoint (trace replay; images as content parts); None: ``prompt``
    #: as one user message
    messages: list[dict[str, Any]] | None = None


class DatasetError(ValueError):
    """A dataset file or setting that cannot be used."""


def load_tokenizer(name_or_path: str | None) -> Tokenizer | None:
    """A Hugging Face tokenizer when ``transformers`` is importable, else ``None``."""
    if not name_or_path:
        return None
    try:
        from transformers import AutoTokenizer  # type: ignore[import-not-found]
    except ImportError:
        return None
    return AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=False)  # type: ignore[no-any-return]


def sampling_lengths(
    rng: np.random.Generator,
    num_requests: int,
    range_ratio: float,
    input_len: int,
    output_len: int,
    vocab_size: int,
    num_special_tokens: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Input lengths, output lengths and vocabulary offsets for ``num_requests`` random requests."""
    if not 0.0 <= range_ratio < 1.0:
        raise DatasetError(f"range_ratio must be in [0, 1), got {range_ratio}")
    real_input_len = max(0, int(input_len) - num_special_tokens)
    input_low = math.floor(real_input_len * (1 - range_ratio))
    input_high = math.ceil(real_input_len * (1 + range_ratio))
    output_low = max(math.floor(output_len * (1 - range_ratio)), 1)
    output_high = max(math.ceil(output_len * (1 + range_ratio)), 1)
    input_lens = rng.integers(input_low, input_high + 1, size=num_requests)
    output_lens = rng.integers(output_low, output_high + 1, size=num_requests)
    offsets = rng.integers(0, vocab_size, size=num_requests)
    return input_lens, output_lens, offsets


def allowed_token_ids(tokenizer: Tokenizer) -> np.ndarray:
    """The vocabulary without special tokens: what synthetic prompts draw from."""
    special = set(tokenizer.all_special_ids)
    return np.array([t for t in range(tokenizer.vocab_size) if t not in special])


def decode_to_length(
    tokenizer: Tokenizer,
    tokens: list[int],
    target: int,
    rng: np.random.Generator,
    max_retry: int = 10,
    pool: np.ndarray | None = None,
) -> tuple[str, list[int]]:
    """Decode, re-encode, and pad or cut until the prompt has ``target`` tokens (or retries run out).
    Padding draws from ``pool`` (token ids), else from the whole vocabulary."""
    tries = max_retry
    while True:
        prompt = tokenizer.decode(tokens)
        tokens = list(tokenizer.encode(prompt, add_special_tokens=False))
        if tries <= 0 or len(tokens) == target:
            return prompt, tokens
        if len(tokens) < target:
            if pool is None:
                tokens.extend(rng.integers(0, tokenizer.vocab_size, size=target - len(tokens)).tolist())
            else:
                tokens.extend(pool[rng.integers(0, len(pool), size=target - len(tokens))].tolist())
        else:
            tokens = tokens[:target]
        tries -= 1


def random_requests(
    num_requests: int,
    input_len: int,
    output_len: int,
    range_ratio: float = 0.0,
    prefix_len: int = 0,
    seed: int = 0,
    tokenizer: Tokenizer | None = None,
) -> list[SampleRequest]:
    """Synthetic prompts of controlled length (see the module docstring)."""
    rng = np.random.default_rng(seed)
    if tokenizer is None:
        return _random_word_requests(rng, num_requests, input_len, output_len, range_ratio, prefix_len)
    num_special = int(tokenizer.num_special_tokens_to_add())
    input_lens, output_lens, offsets = sampling_lengths(
        rng, num_requests, range_ratio, input_len, output_len, tokenizer.vocab_size, num_special
    )
    allowed = allowed_token_ids(tokenizer)
    prefix: list[int] = []
    if prefix_len > 0:
        prefix = allowed[rng.integers(0, len(allowed), size=prefix_len)].tolist()
        _, prefix = decode_to_length(tokenizer, prefix, prefix_len, rng)
    out = []
    for i in range(num_requests):
        inner = allowed[(int(offsets[i]) + i + np.arange(int(input_lens[i]))) % len(allowed)].tolist()
        prompt, tokens = decode_to_length(tokenizer, prefix + inner, prefix_len + int(input_lens[i]), rng)
        out.append(SampleRequest(prompt=prompt, prompt_len=len(tokens), expected_output_len=int(output_lens[i])))
    return out


def _random_word_requests(
    rng: np.random.Generator, num: int, input_len: int, output_len: int, range_ratio: float, prefix_len: int
) -> list[SampleRequest]:
    input_lens, output_lens, offsets = sampling_lengths(rng, num, range_ratio, input_len, output_len, len(_WORDS))
    prefix = [_WORDS[int(k)] for k in rng.integers(0, len(_WORDS), size=prefix_len)] if prefix_len > 0 else []
    out = []
    for i in range(num):
        n = int(input_lens[i])
        words = prefix + [_WORDS[(int(offsets[i]) + i + j) % len(_WORDS)] for j in range(n)]
        out.append(
            SampleRequest(prompt=" ".join(words), prompt_len=len(words), expected_output_len=int(output_lens[i]))
        )
    return out


def _count(tokenizer: Tokenizer | None, text: str) -> int:
    if tokenizer is None:
        return max(1, len(text.split()))
    return len(tokenizer.encode(text, add_special_tokens=False))


def sharegpt_requests(
    path: str | Path,
    num_requests: int,
    tokenizer: Tokenizer | None = None,
    output_len: int | None = None,
    seed: int = 0,
) -> list[SampleRequest]:
    """First human turn as prompt, first reply's length as output length (unless ``output_len``).

    Conversations with fewer than two turns are skipped; without a fixed
    ``output_len``, pairs with a prompt or reply under 4 tokens, a prompt over
    1024 or a total over 2048 tokens are skipped too.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read ShareGPT JSON: {exc}") from exc
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of conversations")
    pairs = []
    for entry in data:
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if isinstance(turns, list) and len(turns) >= 2:
            pairs.append((str(turns[0].get("value", "")), str(turns[1].get("value", ""))))
    random.Random(seed).shuffle(pairs)
    out: list[SampleRequest] = []
    for prompt, reply in pairs:
        if len(out) >= num_requests:
            break
        prompt_len = _count(tokenizer, prompt)
        completion_len = _count(tokenizer, reply) if output_len is None else output_len
        if output_len is None and (
            prompt_len < 4 or completion_len < 4 or prompt_len > 1024 or prompt_len + completion_len > 2048
        ):
            continue
        out.append(SampleRequest(prompt=prompt, prompt_len=prompt_len, expected_output_len=completion_len))
    if not out:
        raise DatasetError(f"{path}: no usable conversation (need 'conversations' with two turns or more)")
    return out


def jsonl_requests(
    path: str | Path,
    num_requests: int,
    tokenizer: Tokenizer | None = None,
    output_len: int | None = None,
) -> list[SampleRequest]:
    """One JSON object per line with ``prompt`` (text or token ids) and optional ``output_len``/``max_tokens``."""
    out: list[SampleRequest] = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from exc
    for lineno, line in enumerate(lines, 1):
        if len(out) >= num_requests:
            break
        if not line.strip():
            continue
        try:
            obj: Any = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{lineno}: invalid JSON: {exc.msg}") from exc
        if not isinstance(obj, dict) or "prompt" not in obj:
            raise DatasetError(f"{path}:{lineno}: each line needs a 'prompt' key")
        prompt = obj["prompt"]
        n_out = obj.get("output_len", obj.get("max_tokens", output_len))
        if n_out is None:
            raise DatasetError(f"{path}:{lineno}: no output_len/max_tokens and no default output length")
        prompt_len = len(prompt) if isinstance(prompt, list) else _count(tokenizer, str(prompt))
        out.append(SampleRequest(prompt=prompt, prompt_len=prompt_len, expected_output_len=int(n_out)))
    if not out:
        raise DatasetError(f"{path}: no prompts")
    if len(out) < num_requests:  # cycle, as a fixed-size benchmark needs
        out = [out[i % len(out)] for i in range(num_requests)]
    return out
