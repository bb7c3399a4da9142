"""What a benchmark run sends: its load points (:func:`plan_points`), each point's requests (random, ShareGPT or
JSONL prompts, images attached) or trace sessions (a trace file replayed, AgentX's corpus), and the tokenizer the
prompts are counted in."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magpie_benchmark.amd_magpie import switched_on
from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.loadgen import agentx_corpus
from magpie_benchmark.loadgen import datasets as ds
from magpie_benchmark.loadgen.multimodal import attach_images
from magpie_benchmark.loadgen.traces import TraceReplay, TraceSession, read_trace

if TYPE_CHECKING:
    from magpie_benchmark.report import BenchmarkReport

log = logging.getLogger("magpie.benchmark")


@dataclass
class Point:
    """One load point of a sweep."""

    concurrency: int | None
    request_rate: float
    input_len: int
    output_len: int
    num_prompts: int
    range_ratio: float

    trace: bool = False

    def label(self) -> str:
        if self.trace:
            return f"trace conc={self.concurrency}"
        rate = "inf" if math.isinf(self.request_rate) else f"{self.request_rate:g}"
        return f"conc={self.concurrency} rate={rate} isl={self.input_len} osl={self.output_len}"


def plan_points(config: BenchmarkConfig) -> list[Point]:
    """The load points of this run, in order."""
    envs = config.envs
    load, dset = config.load, config.dataset
    conc = load.max_concurrency or config.env_int("CONC")
    isl = dset.input_len or config.env_int("ISL") or 1024
    osl = dset.output_len or config.env_int("OSL") or 512
    rrr = dset.range_ratio if dset.range_ratio is not None else float(envs.get("RANDOM_RANGE_RATIO", 0.0))
    rate = load.request_rate if load.request_rate is not None else math.inf

    def prompts(c: int | None, explicit: int | None = None) -> int:
        return explicit or load.num_prompts or config.env_int("NUM_PROMPTS") or 10 * (c or 1)

    if config.sweep_matrix and config.sweep_matrix.cases:
        out = []
        for case in config.sweep_matrix.cases:
            c = case.CONC or conc
            out.append(
                Point(
                    c,
                    case.request_rate or rate,
                    case.ISL or isl,
                    case.OSL or osl,
                    prompts(c, case.NUM_PROMPTS),
                    case.RANDOM_RANGE_RATIO if case.RANDOM_RANGE_RATIO is not None else rrr,
                )
            )
        return out
    concs: list[int | None] = list(load.concurrencies) if load.concurrencies else [conc]
    if dset.name == "trace":  # the trace sets the arrivals: one point per concurrency
        return [Point(c, math.inf, isl, osl, prompts(c), rrr, trace=True) for c in concs]
    rates = list(load.request_rates) if load.request_rates else [rate]
    return [Point(c, r, isl, osl, prompts(c), rrr) for c in concs for r in rates]


def trace_problem(config: BenchmarkConfig) -> str | None:
    """Why a trace replay cannot start (no file, a bad row naming file:line), checked before any server."""
    if config.dataset.name != "trace":
        return None
    try:
        make_trace(config, plan_points(config)[0])
    except ds.DatasetError as exc:
        return f"agentx is on: {exc}" if switched_on(config.agentx) else str(exc)
    return None


def make_trace(
    config: BenchmarkConfig, point: Point, max_sessions: int | None = None, seed_shift: int = 0, tokenizer: Any = None
) -> TraceReplay:
    """The sessions of ``dataset.path`` as ``load.trace`` says (hash-id texts salted per repeat; lengths in
    ``tokenizer``'s tokens, else in words)."""
    tr, dset = config.load.trace, config.dataset
    source = trace_source(config)
    sessions = read_trace(
        source.path,
        fmt=tr.format,
        time_scale=tr.time_scale,
        block_size=tr.block_size,
        default_output_len=dset.output_len or point.output_len,
        max_sessions=max_sessions or tr.max_sessions,
        salt=dset.seed + seed_shift,
        tokenizer=tokenizer,
    )
    return TraceReplay(sessions, keep_timing=tr.timing == "trace", source=source.report())


def trace_source(config: BenchmarkConfig) -> agentx_corpus.CorpusFile:
    """The trace file to replay: ``dataset.path``, ``dataset.url`` (cached download), or with ``agentx`` on
    InferenceX's agentic-coding corpus (see :mod:`magpie_benchmark.loadgen.agentx_corpus`)."""
    dset = config.dataset
    source = agentx_corpus.resolve(
        path=dset.path,
        url=dset.url,
        expected_sha256=dset.sha256,
        agentx=switched_on(config.agentx),
        model=config.model,
        envs={str(k).upper(): v for k, v in config.envs.items()},
    )
    if source is None:
        raise ds.DatasetError(
            "dataset.name is trace: set dataset.path (--dataset-path) to the trace file to replay (Mooncake JSONL, "
            "AIPerf multi_turn sessions or Weka agentic traces), or dataset.url to download one"
        )
    return source


#: ``points[i].trace.warning`` when a replay's prompts are built from words (no tokenizer)
WORD_PROMPTS_WARNING = (
    "no tokenizer: the trace's input lengths and hash-id blocks are tokens, but its prompts were built from "
    "plain words, so the server saw another number of tokens (see trace.prompt_tokens) and shared blocks are "
    "not block_size tokens long; set `tokenizer` (--tokenizer) to the served model's tokenizer"
)


def trace_requests(sessions: list[TraceSession]) -> list[ds.SampleRequest]:
    """Each turn's new user message as a request (for the prompt digest of the fingerprint)."""
    return [ds.SampleRequest(t.text, t.input_len, t.output_len) for s in sessions for t in s.turns]


def make_requests(config: BenchmarkConfig, point: Point, tokenizer: Any, num: int, seed_shift: int = 0) -> list[Any]:
    dset = config.dataset
    if dset.name == "random":
        requests = ds.random_requests(
            num,
            point.input_len,
            point.output_len,
            point.range_ratio,
            dset.prefix_len,
            dset.seed + seed_shift,
            tokenizer,
        )
        if dset.multimodal is None:
            return requests
        return attach_images(requests, dset.multimodal.spec(), dset.seed + seed_shift)
    if not dset.path:
        raise ds.DatasetError(f"dataset.name {dset.name!r} needs dataset.path")
    fixed_out = dset.output_len
    if dset.name == "sharegpt":
        return ds.sharegpt_requests(dset.path, num, tokenizer, fixed_out, dset.seed + seed_shift)
    return ds.jsonl_requests(dset.path, num, tokenizer, fixed_out or point.output_len)


def tokenizer_for(config: BenchmarkConfig, report: BenchmarkReport) -> Any:
    """The tokenizer prompts are built and counted in (``tokenizer``, else a local model folder's); None, with a note
    in ``report.client_checks``, when there is none (prompts are then plain words)."""
    name = config.tokenizer or (config.model if Path(config.model).exists() else None)
    try:
        tok = ds.load_tokenizer(name)
    except Exception as exc:  # a missing hub tokenizer must not stop the run
        report.client_checks.setdefault("notes", []).append(f"tokenizer {name!r} not loaded: {exc}")
        return None
    if tok is None:
        import importlib.util

        fix = (
            "give `tokenizer` (a hub name or a local folder) in the benchmark YAML"
            if importlib.util.find_spec("transformers")
            else "install transformers (pip install 'magpie-benchmark[tokenizer]') and give `tokenizer`"
        )
        note = (
            "no tokenizer: random and trace prompts are plain words, so the server decides their token count "
            "(often several tokens per word: not the requested input length, and not comparable with another "
            f"tool's run of the same dataset); {fix}. Output tokens come from the server's usage counts, else from "
            "chunk counts"
        )
        report.client_checks.setdefault("notes", []).append(note)
        log.warning(note)
    return tok
