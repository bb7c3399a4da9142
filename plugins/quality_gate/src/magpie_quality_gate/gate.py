"""The ``lm_eval`` benchmark check: lm-eval as a subprocess against the served model's OpenAI-compatible
endpoint, once the load is done.

lm-eval runs in its own process group through magpie's process plumbing (bounded by
``timeout_s``, stopped with its group on Ctrl-C), with ``local-completions`` or
``local-chat-completions`` (``--apply_chat_template``, as AMD Magpie runs it), text requests
(``tokenized_requests=False``) and, by default, no tokenizer (nothing downloaded). Its files go to
``<workspace>/lm_eval/`` (AMD Magpie's place): ``results_*.json``, ``samples_*.jsonl``, ``lm_eval.log``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, ClassVar

from magpie_benchmark.interfaces import BenchmarkCheck, CheckTarget, CheckUnavailable

from magpie_core.runtime.processes import run_command, tail
from magpie_quality_gate import config as cfg
from magpie_quality_gate.results import ResultsError, find_results, parse_results, verdict

log = logging.getLogger("magpie.quality_gate")

INSTALL = "pip install 'magpie-quality-gate[lm-eval]'"
_PROBE = "import importlib.metadata as m, lm_eval, aiohttp, tenacity; print(m.version('lm_eval'))"
#: endpoint -> (lm-eval model type, path under the server's base URL)
ENDPOINTS = {
    "completions": ("local-completions", "/v1/completions"),
    "chat": ("local-chat-completions", "/v1/chat/completions"),
}


def lm_eval_version(python: str, key: str) -> str:
    """lm-eval's version in ``python``; :class:`CheckUnavailable` (naming ``key`` and the install) without it."""
    outcome = run_command([python, "-c", _PROBE], cwd=Path.cwd(), timeout_s=120)
    if outcome.ok:
        return outcome.output.strip().splitlines()[-1]
    why = tail(outcome.output, 1) or outcome.describe()
    raise CheckUnavailable(
        key,
        f"lm-eval (with its API client extra) cannot be imported by {python} ({why}); install it with "
        f"{INSTALL} (or {python} -m pip install 'lm-eval[api]'), or point quality_gate.python / "
        "envs.MAGPIE_EVAL_PYTHON at a python that has it",
    )


def _model_args(s: cfg.GateSettings, target: CheckTarget) -> str:
    _, path = ENDPOINTS[s.endpoint]
    b = s.block
    args: dict[str, Any] = {
        "model": target.model,
        "base_url": target.base_url.rstrip("/") + path,
        "tokenizer_backend": b.tokenizer_backend,
        "tokenized_requests": False,
        "num_concurrent": s.num_concurrent,
        "max_retries": 3,
        "timeout": int(b.request_timeout_s),
        "tokenizer": b.tokenizer,
        "max_length": b.max_length,
    }
    parts = [f"{k}={v}" for k, v in args.items() if v is not None]
    bad = [p for p in parts if p.count(",") or p.count("=") != 1]
    if bad:  # lm-eval splits model_args on ',' and '=': such a value would be read as something else
        raise CheckUnavailable(s.key, f"lm-eval model_args cannot carry {bad[0]!r} (a ',' or '=' in a value)")
    return ",".join(parts)


def command(s: cfg.GateSettings, target: CheckTarget, output_dir: Path) -> list[str]:
    """lm-eval's argv (the legacy form without ``run``, which every 0.4 release reads)."""
    b = s.block
    model_type, _ = ENDPOINTS[s.endpoint]
    argv = [s.python, "-m", "lm_eval", "--model", model_type, "--model_args", _model_args(s, target)]
    argv += ["--tasks", ",".join(s.tasks), "--output_path", str(output_dir), "--log_samples"]
    argv += ["--batch_size", str(b.batch_size), "--seed", str(b.seed)]
    if b.include_path:
        argv += ["--include_path", str(_include_dir(b.include_path))]
    if s.endpoint == "chat":
        argv.append("--apply_chat_template")
    if b.num_fewshot is not None:
        argv += ["--num_fewshot", str(b.num_fewshot)]
    if b.limit is not None:
        argv += ["--limit", f"{b.limit:g}"]
    gen = {**({"max_tokens": b.max_gen_tokens} if b.max_gen_tokens else {}), **b.gen_kwargs}
    if gen:
        argv += ["--gen_kwargs", ",".join(f"{k}={v}" for k, v in gen.items())]
    return [*argv, *b.extra_args]


def _include_dir(path: str) -> Path:
    """AMD Magpie's ``EVAL_TASKS_DIR`` may name the task file itself; lm-eval wants its folder."""
    p = Path(path).expanduser().resolve()
    return p.parent if p.is_file() else p


class LmEvalGate(BenchmarkCheck):
    name: ClassVar[str] = "lm_eval"
    description: ClassVar[str] = "lm-evaluation-harness against the served model; thresholds gate the run"
    switch_envs: ClassVar[tuple[str, ...]] = ("RUN_EVAL",)

    def wanted(self, config: Any) -> bool:
        return cfg.wanted(config)

    def preflight(self, config: Any) -> None:
        s = cfg.settings(config)
        if s.block.include_path and not Path(s.block.include_path).expanduser().exists():
            raise CheckUnavailable(s.key, f"include_path {s.block.include_path!r} does not exist")
        lm_eval_version(s.python, s.key)

    def run(self, target: CheckTarget) -> dict[str, Any]:
        s = cfg.settings(target.config)
        out = target.workspace / "lm_eval"
        out.mkdir(parents=True, exist_ok=True)
        base = {
            "kind": "lm_eval",
            "requested": True,
            "asked_by": s.key,
            "tasks_requested": s.tasks,
            "endpoint": s.endpoint,
            "policy_id": s.block.policy_id,
            "thresholds": {t: {m: b.model_dump() for m, b in bs.items()} for t, bs in s.thresholds.items()},
            "output_dir": str(out),
        }
        argv = command(s, target, out)
        cwd = _include_dir(s.block.include_path) if s.block.include_path else out  # task data relative to it
        log.info("quality gate: lm-eval %s against %s", ",".join(s.tasks), target.base_url)
        start = time.monotonic()
        outcome = run_command(argv, cwd=cwd, timeout_s=s.block.timeout_s, log_path=out / "lm_eval.log")
        base |= {"command": argv, "exit_code": outcome.returncode, "duration_s": round(time.monotonic() - start, 3)}
        if not outcome.ok:
            why = f"lm-eval failed ({outcome.describe()}): {tail(outcome.output, 3)}"
            return {**base, "status": "error", "passed": False, "summary": why, "errors": [why]}
        try:
            path = find_results(out)
            parsed = parse_results(path)
        except ResultsError as exc:
            return {**base, "status": "error", "passed": False, "summary": str(exc), "errors": [str(exc)]}
        judged = verdict(parsed, s.tasks, s.thresholds, s.block.primary_metric)
        summary = _summary(judged)
        return {
            **base,
            "status": "passed" if judged["passed"] else "failed",
            "passed": judged["passed"],
            "summary": summary,
            "lm_eval_version": parsed["lm_eval_version"],
            "results_file": str(path.relative_to(target.workspace)),
            "tasks": judged["tasks"],
            "threshold_checks": judged["threshold_checks"],
            "errors": judged["problems"],
        }


def _summary(judged: dict[str, Any]) -> str:
    scores = ", ".join(
        f"{task} {row['primary_metric']}={row['value']:g}"
        for task, row in judged["tasks"].items()
        if row["value"] is not None
    )
    if judged["passed"]:
        return f"passed: {scores}" if scores else "passed"
    return "; ".join(judged["problems"]) or "no task results"
