"""Dataset semantics: random lengths, ShareGPT and JSONL parsing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from magpie_benchmark.loadgen.datasets import (
    DatasetError,
    jsonl_requests,
    random_requests,
    sampling_lengths,
    sharegpt_requests,
)


def test_sampling_lengths_bounds_and_seed():
    rng = np.random.default_rng(0)
    ins, outs, offs = sampling_lengths(rng, 2000, 0.5, 101, 10, vocab_size=1000, num_special_tokens=1)
    assert ins.min() == math.floor(100 * 0.5) and ins.max() == math.ceil(100 * 1.5)
    assert outs.min() == 5 and outs.max() == 15 and offs.max() < 1000
    # the same draws, in the same order, as numpy gives for this seed
    rng2 = np.random.default_rng(0)
    assert (ins == rng2.integers(50, 151, size=2000)).all()
    assert (outs == rng2.integers(5, 16, size=2000)).all()


def test_range_ratio_zero_and_output_floor():
    ins, outs, _ = sampling_lengths(np.random.default_rng(1), 50, 0.0, 64, 1, vocab_size=10)
    assert set(ins) == {64} and set(outs) == {1}
    _, outs, _ = sampling_lengths(np.random.default_rng(1), 50, 0.9, 64, 1, vocab_size=10)
    assert outs.min() >= 1
    with pytest.raises(DatasetError):
        sampling_lengths(np.random.default_rng(1), 1, 1.0, 64, 1, vocab_size=10)


class WordTok:
    """A toy tokenizer: token i is the word 'w<i>'; a BOS is added when asked."""

    vocab_size = 300
    all_special_ids = (0, 1)

    def num_special_tokens_to_add(self) -> int:
        return 1

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids = [int(w[1:]) for w in text.split()]
        return ([1] if add_special_tokens else []) + ids

    def decode(self, ids: list[int]) -> str:
        return " ".join(f"w{i}" for i in ids)


def test_random_with_tokenizer_hits_exact_lengths():
    out = random_requests(20, input_len=33, output_len=8, range_ratio=0.25, prefix_len=4, seed=7, tokenizer=WordTok())
    for r in out:
        assert len(WordTok().encode(r.prompt)) == r.prompt_len
        assert 4 + 24 <= r.prompt_len <= 4 + 40  # prefix + [floor(32*.75), ceil(32*1.25)]
        assert 6 <= r.expected_output_len <= 10
        assert 0 not in WordTok().encode(r.prompt)[4:] and 1 not in WordTok().encode(r.prompt)[4:]
    prefixes = {tuple(r.prompt.split()[:4]) for r in out}
    assert len(prefixes) == 1  # one shared prefix
    assert [r.prompt for r in out] == [r.prompt for r in random_requests(20, 33, 8, 0.25, 4, 7, WordTok())]


def test_random_without_tokenizer_uses_words():
    out = random_requests(5, 16, 4, 0.0, seed=0)
    assert all(len(r.prompt.split()) == r.prompt_len == 16 for r in out)
    assert len({r.prompt for r in out}) == 5


def test_sharegpt(tmp_path):
    data = [
        {"conversations": [{"from": "human", "value": "a b c d e"}, {"from": "gpt", "value": "1 2 3 4 5 6"}]},
        {"conversations": [{"from": "human", "value": "only one turn"}]},
        {"conversations": [{"from": "human", "value": "x"}, {"from": "gpt", "value": "too short prompt"}]},
    ]
    path = tmp_path / "sg.json"
    path.write_text(json.dumps(data))
    out = sharegpt_requests(path, 10)
    assert [(r.prompt, r.prompt_len, r.expected_output_len) for r in out] == [("a b c d e", 5, 6)]
    fixed = sharegpt_requests(path, 10, output_len=3)
    assert len(fixed) == 2 and {r.expected_output_len for r in fixed} == {3}
    with pytest.raises(DatasetError):
        sharegpt_requests(tmp_path / "missing.json", 1)


def test_jsonl(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "one two", "output_len": 5}\n\n{"prompt": [1, 2, 3]}\n')
    out = jsonl_requests(path, 3, output_len=9)
    assert [(r.prompt_len, r.expected_output_len) for r in out] == [(2, 5), (3, 9), (2, 5)]
    path.write_text('{"prompt": "a"}\nnot json\n')
    with pytest.raises(DatasetError, match=r"p.jsonl:2"):
        jsonl_requests(path, 5, output_len=1)
