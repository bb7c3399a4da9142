"""Replay a trace's sessions with their timing and growing context (see :mod:`magpie_benchmark.loadgen.traces`).

Every session runs as one task. Its first turn is due at its ``timestamp``; a later turn is due when
the previous answer has ended, plus its ``delay``, and not before its own ``timestamp``
(``keep_timing=False`` drops both: sessions start at once, turns follow each other directly).
``max_concurrency`` bounds the sessions in flight (AgentX's ``CONC``: active agent sessions); a
session keeps its slot between turns. The prompt of a turn is built when it is due, from the
answers actually received. A failed turn ends its session: the turns after it are not sent and are
reported as failures of kind ``session_aborted``.

Client checks as for rate-driven load: *schedule lag* is how late a turn's task woke up compared with
its due time (waiting for a session slot is queueing, reported per request as ``queue_delay_ms``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from magpie_benchmark.loadgen.client import RequestResult, StallWatch, build_payload, encode_payload, send_request
from magpie_benchmark.loadgen.datasets import SampleRequest
from magpie_benchmark.loadgen.point import LoadResult, LoadSpec, Progress, wait_for_point
from magpie_benchmark.loadgen.traces import TraceReplay, TraceSession, TraceTurn


class _Conversation:
    """The context of one session so far: user messages and the server's answers, in order. With
    ``full_prompts`` (Weka traces) each turn's text is already the whole prompt, so nothing accumulates."""

    def __init__(self, full_prompts: bool = False) -> None:
        self.full_prompts = full_prompts
        self.messages: list[dict[str, str]] = []
        #: the trace's tokens so far: earlier messages' input lengths and the answers' token counts
        self.tokens = 0

    def request(self, turn: TraceTurn) -> SampleRequest:
        """The next turn's request: everything so far, then the new user message."""
        messages = [*self.messages, {"role": "user", "content": turn.text}]
        prompt = "\n".join(m["content"] for m in messages)
        return SampleRequest(prompt, self.tokens + turn.input_len, turn.output_len, messages=messages)

    def add(self, turn: TraceTurn, answer: RequestResult) -> None:
        if self.full_prompts:
            return
        text = answer.generated_text
        self.messages += [{"role": "user", "content": turn.text}, {"role": "assistant", "content": text}]
        answered = answer.output_tokens if answer.output_tokens is not None else len(text.split())
        self.tokens += turn.input_len + answered


def _due(turn: TraceTurn, start: float, prev_end: float | None, keep_timing: bool) -> float:
    """When ``turn`` may be sent (perf_counter seconds)."""
    due = start if prev_end is None else prev_end
    if not keep_timing:
        return due
    if turn.at_s is not None:
        due = max(due, start + turn.at_s)
    if prev_end is not None and turn.delay_s is not None:
        due = max(due, prev_end + turn.delay_s)
    return due


def _aborted(session: TraceSession, k: int, why: str) -> RequestResult:
    turn = session.turns[k]
    return RequestResult(
        prompt_len=turn.input_len,
        expected_output_len=turn.output_len,
        error=why,
        error_kind="session_aborted",
        session_id=session.session_id,
        turn=k,
    )


async def measure_replay(spec: LoadSpec, trace: TraceReplay, client: Any, warmup_failed: int) -> LoadResult:
    """Replay ``trace`` against ``client``; one :class:`RequestResult` per turn, in session and turn order."""
    sessions = trace.sessions
    slots: asyncio.Semaphore | contextlib.nullcontext[None] = (
        asyncio.Semaphore(spec.max_concurrency) if spec.max_concurrency else contextlib.nullcontext()
    )
    progress = Progress(spec.progress, sum(len(s.turns) for s in sessions), spec.label)
    watch = StallWatch(spec.stall_timeout_s)
    results: list[list[RequestResult | None]] = [[None] * len(s.turns) for s in sessions]
    lags: list[float] = []
    cpu_start = time.process_time()
    start = time.perf_counter()

    async def run_session(i: int, session: TraceSession) -> None:
        conversation = _Conversation(session.full_prompts)
        prev_end: float | None = None
        held = False
        try:
            for k, turn in enumerate(session.turns):
                due = _due(turn, start, prev_end, trace.keep_timing)
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                woke = time.perf_counter()
                lags.append(max(0.0, woke - due))
                if not held:
                    await slots.__aenter__()
                    held = True
                request = conversation.request(turn)
                payload = build_payload(
                    spec.endpoint, spec.model, request, ignore_eos=spec.ignore_eos, extra_body=spec.extra_body
                )
                res = await send_request(
                    client,
                    spec.endpoint,
                    encode_payload(payload),
                    request,
                    spec.headers,
                    spec.request_deadline_s,
                    watch,
                )
                res.scheduled_time, res.dispatch_time = due, woke
                res.session_id, res.turn, res.trace_prompt_len = session.session_id, k, request.prompt_len
                results[i][k] = res
                progress.advance(res.success)
                if not res.success:
                    why = f"turn {k} of session {session.session_id} failed: {res.error_kind}"
                    for rest in range(k + 1, len(session.turns)):
                        results[i][rest] = _aborted(session, rest, why)
                    return
                prev_end = res.start_time + res.latency
                conversation.add(turn, res)
        finally:
            if held:
                await slots.__aexit__(None, None, None)

    tasks = [asyncio.create_task(run_session(i, s)) for i, s in enumerate(sessions)]
    ended = await wait_for_point(asyncio.gather(*tasks), tasks, spec.point_timeout_s, cpu_start, progress, watch)
    final: list[RequestResult] = []
    total = 0
    for session, rows in zip(sessions, results, strict=True):
        for k, r in enumerate(rows):
            total += 1
            if r is None and ended.interrupted:
                continue
            if r is None:
                error, kind = ended.unfinished_error(spec.point_timeout_s)
                r = _aborted(session, k, error)
                r.error_kind = kind
            final.append(r)
    return LoadResult(
        results=final,
        duration_s=ended.end - start,
        client_cpu_s=ended.cpu_s,
        clock=client.clock,
        schedule_lag_s=lags,
        warmup_failed=warmup_failed,
        timed_out=ended.timed_out,
        started_at=start,
        interrupted=ended.interrupted,
        unfinished=total - len(final),
        stall=ended.stall,
    )


def session_metrics(results: list[RequestResult]) -> dict[str, Any]:
    """Per-turn and per-session numbers of a replay: TTFT and prompt length by turn index, session spans."""
    from magpie_benchmark.loadgen.metrics import summarize

    by_turn: dict[int, list[RequestResult]] = {}
    by_session: dict[str, list[RequestResult]] = {}
    for r in results:
        if r.session_id is None or r.turn is None:
            continue
        by_turn.setdefault(r.turn, []).append(r)
        by_session.setdefault(r.session_id, []).append(r)
    turns = []
    for k in sorted(by_turn):
        ok = [r for r in by_turn[k] if r.success]
        turns.append(
            {
                "turn": k,
                "requests": len(by_turn[k]),
                "completed": len(ok),
                "mean_prompt_tokens": sum(r.prompt_len for r in ok) / len(ok) if ok else 0.0,
                "mean_trace_prompt_tokens": sum(r.trace_prompt_len or 0 for r in ok) / len(ok) if ok else 0.0,
                "ttft": summarize([r.ttft for r in ok]),
                "e2el": summarize([r.latency for r in ok]),
            }
        )
    spans = []
    for rows in by_session.values():
        if all(r.success for r in rows):
            spans.append(max(r.start_time + r.latency for r in rows) - min(r.start_time for r in rows))
    return {
        "sessions": len(by_session),
        "completed_sessions": len(spans),
        "aborted_sessions": len(by_session) - len(spans),
        "session_duration": summarize(spans),
        "per_turn": turns,
        "prompt_tokens": prompt_token_match(results),
    }


def prompt_token_match(results: list[RequestResult]) -> dict[str, Any]:
    """How close each prompt came to the trace: the server's prompt tokens vs the trace's, per request
    (relative error |server - trace| / trace), over the answered requests whose server sent usage counts."""
    pairs = [
        (r.trace_prompt_len, r.server_prompt_len)
        for r in results
        if r.success and r.trace_prompt_len and r.server_prompt_len is not None
    ]
    errors = [abs(server - trace) / trace for trace, server in pairs]
    return {
        "compared": len(pairs),
        "trace_tokens": sum(trace for trace, _ in pairs),
        "server_tokens": sum(server for _, server in pairs),
        "mean_rel_error": sum(errors) / len(errors) if errors else None,
        "max_rel_error": max(errors) if errors else None,
    }
