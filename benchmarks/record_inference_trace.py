"""Record a small Llama-style inference trace (prefill, then decode steps) with the torch profiler.

No downloads: a random-weight decoder (RMSNorm, RoPE, GQA attention through
``F.scaled_dot_product_attention``, SwiGLU MLP) runs prefill for a batch of prompts, then
``--decode-steps`` decode steps with a KV cache. Every step is wrapped in
``torch.profiler.record_function`` named in vLLM's detailed step format, which magpie's
``inference`` analyzer reads::

    execute_<tokens>_context_<n>(sq<Σsq>sk<Σsk>sqsq<Σsq²>sqsk<Σsq·sk>)_generation_<n>(sq..sk..sqsq..sqsk..)

(prefill: ``context_<batch>``, every prompt with sq = sk = prompt length; decode: ``generation_<batch>``,
sq = 1 and sk = tokens in the cache including the new one). With ``--finish-early K`` the last K
decode steps run with half the batch (requests that finished), so the steady-state window has
something to exclude. Shapes are recorded (``record_shapes=True``); the trace is written as
``.json.gz``. Works on CUDA/ROCm GPUs and on the CPU.

Usage: ``python benchmarks/record_inference_trace.py OUT.json.gz [--device cuda] [--batch 8]
[--prompt-len 128] [--decode-steps 16] [--layers 4] [--dtype bf16]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function


class Config:
    def __init__(self, layers: int, hidden: int, heads: int, kv_heads: int, inter: int, vocab: int) -> None:
        self.layers, self.hidden, self.heads, self.kv_heads = layers, hidden, heads, kv_heads
        self.head_dim = hidden // heads
        self.inter, self.vocab = inter, vocab


class Layer(torch.nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.c = c
        self.norm1 = torch.nn.Parameter(torch.ones(c.hidden))
        self.norm2 = torch.nn.Parameter(torch.ones(c.hidden))
        self.qkv = torch.nn.Linear(c.hidden, (c.heads + 2 * c.kv_heads) * c.head_dim, bias=False)
        self.o = torch.nn.Linear(c.heads * c.head_dim, c.hidden, bias=False)
        self.gate_up = torch.nn.Linear(c.hidden, 2 * c.inter, bias=False)
        self.down = torch.nn.Linear(c.inter, c.hidden, bias=False)

    def forward(self, x, cos, sin, cache, prefill: bool):  # type: ignore[no-untyped-def]
        c = self.c
        b, t, _ = x.shape
        h = F.rms_norm(x, (c.hidden,), self.norm1, eps=1e-6)
        q, k, v = self.qkv(h).split([c.heads * c.head_dim, c.kv_heads * c.head_dim, c.kv_heads * c.head_dim], -1)
        q = q.view(b, t, c.heads, c.head_dim).transpose(1, 2)
        k = k.view(b, t, c.kv_heads, c.head_dim).transpose(1, 2)
        v = v.view(b, t, c.kv_heads, c.head_dim).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=prefill, enable_gqa=True)
        x = x + self.o(attn.transpose(1, 2).reshape(b, t, c.heads * c.head_dim))
        h = F.rms_norm(x, (c.hidden,), self.norm2, eps=1e-6)
        g, u = self.gate_up(h).chunk(2, dim=-1)
        x = x + self.down(F.silu(g) * u)
        return x, (k, v)


def rope(x, cos, sin):  # type: ignore[no-untyped-def]
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Model(torch.nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.c = c
        self.embed = torch.nn.Embedding(c.vocab, c.hidden)
        self.layers = torch.nn.ModuleList(Layer(c) for _ in range(c.layers))
        self.norm = torch.nn.Parameter(torch.ones(c.hidden))
        self.lm_head = torch.nn.Linear(c.hidden, c.vocab, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, c.head_dim, 2).float() / c.head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, ids, start: int, caches, prefill: bool):  # type: ignore[no-untyped-def]
        t = ids.shape[1]
        pos = torch.arange(start, start + t, device=ids.device).float()
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        cos, sin = emb.cos().to(self.norm.dtype), emb.sin().to(self.norm.dtype)
        x = self.embed(ids)
        new = []
        for i, layer in enumerate(self.layers):
            x, kv = layer(x, cos, sin, None if caches is None else caches[i], prefill)
            new.append(kv)
        x = F.rms_norm(x[:, -1:, :], (self.c.hidden,), self.norm, eps=1e-6)
        return self.lm_head(x).argmax(-1), new


def step_name(ctx: list[tuple[int, int]], gen: list[tuple[int, int]]) -> str:
    """vLLM detailed step annotation from (sq, sk) per context and per generation request."""

    def sums(reqs: list[tuple[int, int]]) -> str:
        sq = sum(a for a, _ in reqs)
        sk = sum(b for _, b in reqs)
        return f"sq{sq}sk{sk}sqsq{sum(a * a for a, _ in reqs)}sqsk{sum(a * b for a, b in reqs)}"

    tokens = sum(a for a, _ in ctx) + sum(a for a, _ in gen)
    return f"execute_{tokens}_context_{len(ctx)}({sums(ctx)})_generation_{len(gen)}({sums(gen)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default=None, help="bf16 | fp16 | fp32 (default: bf16 on GPU, fp32 on CPU)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--decode-steps", type=int, default=16)
    ap.add_argument("--finish-early", type=int, default=3, help="last K decode steps run with half the batch")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--inter", type=int, default=1408)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--warmup", type=int, default=1, help="unprofiled warm-up rounds")
    args = ap.parse_args()
    dev = torch.device(args.device)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[
        args.dtype or ("bf16" if dev.type != "cpu" else "fp32")
    ]
    torch.manual_seed(0)
    c = Config(args.layers, args.hidden, args.heads, args.kv_heads, args.inter, args.vocab)
    model = Model(c).to(dev, dtype).eval()
    prompts = torch.randint(0, c.vocab, (args.batch, args.prompt_len), device=dev)

    def run() -> None:
        b, length = args.batch, args.prompt_len
        with record_function(step_name([(length, length)] * b, [])):
            tok, caches = model(prompts, 0, None, True)
        for s in range(args.decode_steps):
            if args.finish_early and s == args.decode_steps - args.finish_early:
                b = max(1, b // 2)
                tok = tok[:b]
                caches = [(k[:b], v[:b]) for k, v in caches]
            ctx = length + s + 1
            with record_function(step_name([], [(1, ctx)] * b)):
                tok, caches = model(tok, length + s, caches, False)
        if dev.type == "cuda":
            torch.cuda.synchronize()

    with torch.inference_mode():
        for _ in range(args.warmup):
            run()
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
        with profile(activities=acts, record_shapes=True) as prof:
            run()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(tmp)
        with open(tmp, "rb") as src, gzip.open(args.out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    finally:
        os.unlink(tmp)
    with gzip.open(args.out, "rt") as f:
        n = len(json.load(f).get("traceEvents", []))
    size = args.out.stat().st_size
    where = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    print(f"wrote {args.out} ({size / 1e6:.2f} MB, {n} events) on {dev} ({where})")
    if size > 16e6:
        print("warning: larger than 16 MB; use fewer --decode-steps or --layers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
