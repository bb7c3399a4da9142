"""Write a tiny random Llama (config, weights, locally trained BPE tokenizer) into a folder.

Run with a python that has torch, transformers and tokenizers (the vLLM venv):
    python tests/helpers/make_tiny_llama.py OUT_DIR
Nothing is downloaded.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "a",
    "small",
    "model",
    "writes",
    "tokens",
    "to",
    "measure",
    "serving",
    "latency",
    "and",
    "throughput",
    "under",
    "load",
    "with",
    "many",
    "concurrent",
    "streams",
    "of",
    "text",
]


def make_tiny_tokenizer(out: Path) -> Any:
    """The tiny Llama's byte-level BPE tokenizer (512 ids), saved into ``out`` (needs tokenizers and
    transformers, not torch: the unit tests build it in magpie's own venv)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512, special_tokens=["<unk>", "<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    corpus = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))] * 20
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.add_bos_token = True
    fast.save_pretrained(out)
    return fast


def main(out: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    fast = make_tiny_tokenizer(out)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=fast.vocab_size if fast.vocab_size >= 512 else 512,
        hidden_size=256,
        # head_dim 64: vLLM's CPU attention rejects 16
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=1,
        eos_token_id=2,
        torch_dtype="bfloat16",
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    print(f"tiny llama written to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
