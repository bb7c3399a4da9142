"""Engine step annotations: which iteration is prefill, decode or mixed, and its token sums.

Formats (the detailed variants carry the attention roofline sums; ``sq`` = query
tokens, ``sk`` = key/value tokens, ``sqsq`` = Σ sq_i², ``sqsk`` = Σ sq_i·sk_i over the
requests of the step; ``c`` = context/prefill requests, ``g`` = generation/decode):

* vLLM native (``GPUWorker.annotate_profile``):
  ``execute_context_<n_ctx>(<ctx_tokens>)_generation_<n_gen>(<gen_tokens>)``
* vLLM detailed (TraceLens-patched engines):
  ``execute_<tok>_context_<n>(sq<>sk<>sqsq<>sqsk<>)_generation_<n>(sq<>sk<>sqsq<>sqsk<>)``
* SGLang native: ``step[DECODE bs=64]``, ``step[EXTEND bs=2 toks=14721]``, ``step[MIXED bs=2]``;
  detailed adds ``c_sq= c_sk= c_sqsq= c_sqsk= g_sq= g_sk= g_sqsq= g_sqsk=`` (and ``c= g=`` for MIXED)
* ATOM: ``prefill[bs=2 tok=14721 ctx=[...]]``, ``decode[bs=64 tok=64 d=64]`` (``bs=117/128``: real/padded);
  detailed adds ``sqsq= sqsk= sk=``
* graph capture: ``capture_<bs>_<mode>`` (``capture_32_DECODE``, ``capture_32_FULL``)

The same formats are documented in TraceLens ``TraceUtils/annotation_utils.py`` (MIT); the
parsing here is our own.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

PREFILL = "prefill_only"
DECODE = "decode_only"
MIXED = "prefilldecode"

_VLLM_DETAILED = re.compile(
    r"^execute_(\d+)_context_(\d+)\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)"
    r"_generation_(\d+)\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)"
)
_VLLM_NATIVE = re.compile(r"^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)")
_SGLANG = re.compile(r"^step\[(EXTEND|DECODE|MIXED|PREFILL|IDLE)\b([^\]]*)\]")
_ATOM = re.compile(r"^(prefill|decode)\[(.*)\]$")
_CAPTURE = re.compile(r"^capture_(\d+)_(\w+)")
_KV = re.compile(r"(\w+)=(\[[^\]]*\](?:\.\.\.\+\d+)?|[^\s\]]+)")


@dataclass
class StepInfo:
    """One engine iteration as its annotation describes it."""

    engine: str  # "vllm" | "sglang" | "atom" | our recorder uses the vllm format
    detailed: bool
    context_requests: int = 0
    generation_requests: int = 0
    c_sq: int = 0
    c_sk: int = 0
    c_sqsq: int = 0
    c_sqsk: int = 0
    g_sq: int = 0
    g_sk: int = 0
    g_sqsq: int = 0
    g_sqsk: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def requests(self) -> int:
        return self.context_requests + self.generation_requests

    @property
    def tokens(self) -> int:
        return self.c_sq + self.g_sq

    @property
    def phase(self) -> str:
        has_c = self.context_requests > 0 or self.c_sq > 0
        has_g = self.generation_requests > 0 or self.g_sq > 0
        if has_c and has_g:
            return MIXED
        return PREFILL if has_c else DECODE

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(phase=self.phase, requests=self.requests, tokens=self.tokens)
        return d


def _i(v: Any) -> int:
    m = re.search(r"\d+", str(v))
    return int(m.group()) if m else 0


def parse_step(name: str) -> StepInfo | None:
    """The iteration an annotation names, or None when it is not a step annotation."""
    m = _VLLM_DETAILED.match(name)
    if m:
        g = [int(x) for x in m.groups()]
        return StepInfo(
            "vllm", True, g[1], g[6], g[2], g[3], g[4], g[5], g[7], g[8], g[9], g[10], meta={"num_tokens": g[0]}
        )
    m = _VLLM_NATIVE.match(name)
    if m:
        nc, ct, ng, gt = (int(x) for x in m.groups())
        return StepInfo("vllm", False, nc, ng, c_sq=ct, g_sq=gt)
    m = _SGLANG.match(name)
    if m:
        mode, body = m.group(1), m.group(2)
        kv = dict(_KV.findall(body))
        bs, toks = _i(kv.get("bs", 0)), _i(kv.get("toks", 0))
        detailed = "c_sqsk" in kv or "g_sqsk" in kv
        s = StepInfo("sglang", detailed, meta={"mode": mode, "bs": bs})
        for k in ("c_sq", "c_sk", "c_sqsq", "c_sqsk", "g_sq", "g_sk", "g_sqsq", "g_sqsk"):
            setattr(s, k, _i(kv.get(k, 0)))
        if mode == "DECODE":
            s.generation_requests = bs
            s.g_sq = s.g_sq or bs
        elif mode == "MIXED":
            s.context_requests = _i(kv.get("c", 0)) or (bs if not kv.get("g") else 0)
            s.generation_requests = _i(kv.get("g", 0))
            if not detailed and not s.generation_requests:
                s.generation_requests = 1  # a mixed step has both kinds; counts unknown without c=/g=
        elif mode == "IDLE":
            return None
        else:  # EXTEND / PREFILL
            s.context_requests = bs
            s.c_sq = s.c_sq or toks
        return s
    m = _ATOM.match(name)
    if m:
        phase, body = m.group(1), m.group(2)
        kv = dict(_KV.findall(body))
        bs, tok = _i(kv.get("bs", 0)), _i(kv.get("tok", 0))
        detailed = "sqsq" in kv and "sqsk" in kv
        s = StepInfo("atom", detailed, meta={k: v for k, v in kv.items() if k in ("ctx", "bs", "p", "d", "spec")})
        sk, sqsq, sqsk = _i(kv.get("sk", 0)), _i(kv.get("sqsq", 0)), _i(kv.get("sqsk", 0))
        if phase == "prefill":
            s.context_requests, s.c_sq, s.c_sk, s.c_sqsq, s.c_sqsk = bs, tok, sk, sqsq, sqsk
        else:
            p = _i(kv.get("p", 0))
            if p:  # decode batch carrying some prefill requests
                s.context_requests = p
            s.generation_requests, s.g_sq, s.g_sk, s.g_sqsq, s.g_sqsk = bs - p if p else bs, tok, sk, sqsq, sqsk
        return s
    return None


def parse_capture(name: str) -> tuple[int, str] | None:
    """``capture_<bs>_<mode>`` -> (batch size, mode)."""
    m = _CAPTURE.match(name)
    return (int(m.group(1)), m.group(2)) if m else None
