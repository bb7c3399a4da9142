"""Seeded generators of hostile inputs, and a runner that checks magpie's error policy on each.

Shared by the fuzz tests (``tests/fuzz/test_fuzz_hostile.py``, a few hundred cases) and the long run
(``benchmarks/fuzz_hostile_inputs.py``, 1,000+). Every case is a ``magpie`` command line plus the files
it reads, run in this process through :func:`magpie_core.cli.run` as a user would type it. The policy:

* exit 2 for a usage/config error, 1 for a subject that failed (``expect``); 0 only where the case
  allows it and the output carries the warning it needs (``zero_needs``: e.g. "skipped");
* the output names the thing that is wrong (one of ``names``: the file, the field, the flag);
* never a traceback, never an internal error, never longer than the time limit.

Categories: ``config`` (kernel and framework YAML: bytes, tags, bombs, nesting, keys, values),
``kernels`` (missing sources, entries, folders), ``trace-gap`` and ``trace-inference`` (broken events and
files that are not traces), ``benchmark-yaml`` (every numeric field, URLs, ports, envs) and ``cli-flags``
(contradicting, malformed and impossible flags).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import random
import re
import signal
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CATEGORIES = ("config", "kernels", "trace-gap", "trace-inference", "benchmark-yaml", "cli-flags")


@dataclass
class Case:
    category: str
    name: str
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    expect: frozenset[int] = frozenset({2})
    names: tuple[str, ...] = ()  # the output must contain one of these (whitespace-normalized)
    zero_needs: str | None = None  # exit 0 is allowed when the output contains this


@dataclass
class Outcome:
    case: Case
    code: int | None
    output: str
    seconds: float
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


# -- running --


class _Hang(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Hang


def _normalized(text: str) -> str:
    """Output with rich's box drawing and wrapping undone, so a name split over two lines still matches."""
    return re.sub(r"[\s│╭╮╰╯─]+", " ", text)


def run_case(case: Case, workdir: Path, limit_s: float = 60.0) -> Outcome:
    """Run ``case`` in ``workdir`` (its files written there first) and judge it against the policy."""
    from magpie_core.cli import run
    from magpie_core.plugins import PluginWarning

    workdir.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        path = workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    buf = io.StringIO()
    code: int | None = None
    escaped: BaseException | None = None
    old_cwd = os.getcwd()
    old_handler = signal.signal(signal.SIGALRM, _alarm)
    start = time.perf_counter()
    try:
        os.chdir(workdir)
        signal.setitimer(signal.ITIMER_REAL, limit_s)
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf), warnings.catch_warnings():
            warnings.simplefilter("ignore", PluginWarning)  # commands added again by the next in-process run
            run(list(case.argv))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except _Hang:
        code = None
    except BaseException as exc:
        escaped = exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        os.chdir(old_cwd)
    seconds = time.perf_counter() - start
    output = buf.getvalue()
    return Outcome(case, code, output, seconds, _judge(case, code, output, escaped, seconds, limit_s))


def _judge(
    case: Case, code: int | None, output: str, escaped: BaseException | None, seconds: float, limit_s: float
) -> list[str]:
    problems = []
    text = _normalized(output)
    if escaped is not None:
        problems.append(f"traceback: {type(escaped).__name__}: {escaped}")
    if "Traceback (most recent call last)" in output:
        problems.append("traceback printed")
    if "internal error" in output:
        problems.append("internal error")
    if code is None or seconds > limit_s:
        problems.append(f"hang (> {limit_s:.0f} s)")
    elif code == 0:
        if case.zero_needs is None or case.zero_needs not in text:
            problems.append("silent success" if case.zero_needs is None else f"exit 0 without {case.zero_needs!r}")
    elif code not in case.expect:
        problems.append(f"exit {code}, expected {sorted(case.expect)}")
    if code not in (0, None) and case.names and not any(_normalized(n) in text for n in case.names):
        problems.append(f"message names none of {list(case.names)}")
    return problems


# -- YAML text --


def _yaml(tree: dict[str, Any], indent: int = 0) -> str:
    """A YAML mapping from nested dicts whose leaves are raw YAML text (so hostile scalars stay as written)."""
    out = []
    for key, value in tree.items():
        if isinstance(value, dict):
            out.append(" " * indent + f"{key}:\n" + _yaml(value, indent + 2))
        else:
            out.append(" " * indent + f"{key}: {value}\n")
    return "".join(out)


def _set(tree: dict[str, Any], dotted: str, raw: str) -> dict[str, Any]:
    tree = json.loads(json.dumps(tree))
    node = tree
    *parents, leaf = dotted.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = raw
    return tree


# -- config --

GOOD_KERNEL = {"kernel": {"id": "k", "type": "pytorch", "testcase_command": "'true'"}}

#: kernel fields and values each must refuse (raw YAML)
KERNEL_BAD: dict[str, list[str]] = {
    "kernel.performance.min_samples": ["0", "-5", "abc", "2.5", "[]", "{}"],
    "kernel.performance.max_samples": ["-1", "x", "0"],
    "kernel.performance.timeout_seconds": ["0", "-1", ".inf", ".nan", "abc", "1.0e+12"],
    "kernel.performance.warmup_ms": ["-1", ".nan", ".inf"],
    "kernel.performance.target_rse": ["0", "-0.1", ".nan"],
    "kernel.performance.budget_seconds": ["0", ".inf", "-2"],
    "kernel.performance.min_batch_us": ["0", "-3", ".inf"],
    "kernel.performance.rounds": ["0", "-1"],
    "kernel.correctness.atol": ["-1", ".nan", ".inf", "abc"],
    "kernel.correctness.rtol": ["-1.0e-3", ".nan", "-.inf"],
    "kernel.correctness.trials": ["0", "1000000000000"],
    "kernel.correctness.timeout_seconds": ["0", ".inf", "-5"],
    "latency.timeout_seconds": [".inf", "0"],
    "latency.n_retries": ["-1"],
    "scheduler.max_workers": ["0", "-4"],
    "kernel.entry": ["k.py", "'kernels/add.cu'"],
}

#: framework (--config) fields and values each must refuse
FRAMEWORK_BAD: dict[str, list[str]] = {
    "scheduler.max_workers": ["0", "-1", "abc"],
    "correctness.atol": ["-1", ".nan"],
    "performance.min_samples": ["1", "-3"],
    "compare.confidence": ["0", "1", "1.5", ".nan"],
    "benchmark.timeout_seconds": [".inf", "-1"],
}


def _bomb(levels: int, fan: int) -> str:
    text = f"a0: &a0 [{', '.join(['lol'] * fan)}]\n"
    for i in range(1, levels):
        text += f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan)}]\n"
    return text + "kernel: {id: k}\n"


def _byte_cases(rng: random.Random) -> list[tuple[str, bytes, str]]:
    """(name, file bytes, what the message must name) of files that are not UTF-8 YAML text."""
    good = _yaml(GOOD_KERNEL)
    cut = rng.randrange(1, len(good))
    return [
        ("utf16", good.encode("utf-16"), "UTF-16"),
        ("utf32", good.encode("utf-32"), "UTF-32"),
        ("nul", good[:cut].encode() + b"\x00" + good[cut:].encode(), "NUL byte"),
        (
            "latin1",
            ("kernel:\n  id: caf\xe9\n  description: " + "x" * rng.randrange(40) + "\xff\n").encode("latin-1"),
            "byte",
        ),
        ("garbage", bytes(rng.randrange(256) for _ in range(rng.randrange(10, 400))), "config.yaml"),
        ("control", good[:cut].encode() + bytes([rng.choice([1, 2, 7, 27, 127])]) + good[cut:].encode(), "config.yaml"),
    ]


def _yaml_cases(rng: random.Random) -> list[tuple[str, str, str]]:
    """(name, YAML text, what the message must name) of hostile YAML."""
    depth = rng.randrange(65, 10_001)
    return [
        (
            "python-tag",
            f"kernel: !!python/object/apply:os.system [{json.dumps('echo ' + str(rng.random()))}]\n",
            "python",
        ),
        ("python-name", "kernel: !!python/name:os.system\n", "python"),
        ("binary", "kernel:\n  id: !!binary aGVsbG8=\n", "binary"),
        (
            "bad-int",
            f"kernel:\n  id: k\n  performance:\n    min_samples: !!int {rng.choice(['abc', '1.5', 'x1'])}\n",
            "!!int",
        ),
        (
            "bad-float",
            f"kernel:\n  id: k\n  performance:\n    warmup_ms: !!float {rng.choice(['xyz', '1..2'])}\n",
            "!!float",
        ),
        ("set-tag", "kernel: !!set {a, b}\n", "!!set"),
        ("custom-tag", "kernel: !mything {id: k}\n", "!mything"),
        ("unhashable-list-key", "? [a, b]\n: 1\nkernel: {id: k}\n", "key"),
        ("unhashable-map-key", "kernel:\n  {a: 1}: 2\n", "key"),
        ("flow-nesting", "[" * depth + "]" * depth + "\n", "nested"),
        ("block-nesting", "".join(" " * i + f"k{i}:\n" for i in range(rng.randrange(70, 400))), "nested"),
        ("alias-bomb", _bomb(rng.randrange(6, 10), rng.randrange(8, 12)), "billion laughs"),
        ("duplicate-key", "kernel: {id: a}\nkernel: {id: b}\n", "duplicate"),
        ("not-a-mapping", rng.choice(["- 1\n- 2\n", "just text\n", "42\n"]), "mapping"),
        ("unknown-key", "kernel:\n  id: k\n  testcase_comand: 'true'\n", "testcase_comand"),
        ("bad-syntax", "kernel:\n  id: [k\n", "YAML"),
        ("env-unset", "kernel:\n  id: ${MAGPIE_FUZZ_SURELY_UNSET_" + str(rng.randrange(10**6)) + "}\n", "MAGPIE_FUZZ"),
    ]


def config_cases(rng: random.Random) -> Iterator[Case]:
    run_k = ["analyze", "--no-perf", "-o", "out", "-k", "config.yaml"]
    for name, data, needle in _byte_cases(rng):
        yield Case("config", f"bytes:{name}", run_k, {"config.yaml": data}, names=(needle, "config.yaml"))
    for name, text, needle in _yaml_cases(rng):
        yield Case("config", f"yaml:{name}", run_k, {"config.yaml": text.encode()}, names=(needle,))
    for dotted, values in KERNEL_BAD.items():
        raw = rng.choice(values)
        tree = _set(GOOD_KERNEL, dotted, raw)
        leaf = dotted.rsplit(".", 1)[-1]
        yield Case("config", f"kernel:{dotted}={raw}", run_k, {"config.yaml": _yaml(tree).encode()}, names=(leaf,))
    order = {"kernel": {"id": "k", "performance": {"min_samples": "50", "max_samples": str(rng.randrange(3, 50))}}}
    yield Case("config", "kernel:min>max", run_k, {"config.yaml": _yaml(order).encode()}, names=("min_samples",))
    for dotted, values in FRAMEWORK_BAD.items():
        raw = rng.choice(values)
        argv = ["-c", "framework.yaml", "analyze", "--no-perf", "-o", "out", "-k", "config.yaml"]
        files = {"framework.yaml": _yaml(_set({}, dotted, raw)).encode(), "config.yaml": _yaml(GOOD_KERNEL).encode()}
        yield Case("config", f"framework:{dotted}={raw}", argv, files, names=(dotted.rsplit(".", 1)[-1],))


# -- kernels --


def kernel_cases(rng: random.Random) -> Iterator[Case]:
    tag = f"{rng.randrange(10**6):06d}"
    out = ["--no-perf", "-o", "out"]
    for suffix, ktype in ((".py", "pytorch"), (".hip", "hip"), (".cu", "cuda")):
        src = f"missing_{tag}{suffix}"
        yield Case(
            "kernels",
            f"flag-form missing {suffix}",
            ["analyze", src, "--testcase", "true", "--type", ktype, *out],
            expect=frozenset({1}),
            names=(src,),
        )
    kernels = {
        "source": {"id": "k", "type": "pytorch", "source_files": f"[gone_{tag}.cu]", "testcase_command": "'true'"},
        "working_dir": {"id": "k", "type": "pytorch", "working_dir": f"nowhere_{tag}", "testcase_command": "'true'"},
        "entry-file": {"id": "k", "type": "pytorch", "entry": f"absent_{tag}.py:run", "testcase_command": "'true'"},
        "reference-file": {
            "id": "k",
            "type": "pytorch",
            "entry": "k.py:run",
            "reference": f"ref_{tag}.py:run",
        },
    }
    needles = {
        "source": f"gone_{tag}.cu",
        "working_dir": f"nowhere_{tag}",
        "entry-file": f"absent_{tag}.py",
        "reference-file": f"ref_{tag}.py",
    }
    files_extra = {"k.py": b"def run(x):\n    return x\n\ndef get_inputs():\n    return [1]\n"}
    for name, kernel in kernels.items():
        files = {"kernel.yaml": _yaml({"kernel": kernel}).encode(), **files_extra}
        yield Case(
            "kernels",
            f"yaml {name}",
            ["analyze", "-k", "kernel.yaml", *out],
            files,
            expect=frozenset({1}),
            names=(needles[name],),
        )
    yield Case("kernels", "no config file", ["analyze", "-k", f"none_{tag}.yaml", *out], names=(f"none_{tag}.yaml",))
    yield Case("kernels", "both forms", ["analyze", "-k", "kernel.yaml", "x.py", *out], names=("--kernel-config",))
    yield Case("kernels", "no testcase", ["analyze", "x.hip", *out], names=("--testcase",))
    # a Python file that is not KernelBench's is no HIP source (--type's default): the fix is a YAML entry
    yield Case("kernels", "python, not kernelbench", ["analyze", "x.py", *out], names=("entry: x.py:NAME",))


# -- traces --

_BAD_FIELDS: list[tuple[str, Callable[[random.Random], Any]]] = [
    ("dur", lambda r: None),  # removed
    ("dur", lambda r: -r.uniform(0.1, 1e6)),
    ("dur", lambda r: r.choice(["12", "abc", None, True, [], {}])),
    ("dur", lambda r: int("9" * r.randrange(20, 40))),
    ("dur", lambda r: r.choice([1e13, 1e300])),
    ("ts", lambda r: None),
    ("ts", lambda r: r.choice([1e300, 1e18, -5.0, -1e9])),
    ("ts", lambda r: r.choice(["now", None, False, {}])),
]

_REMOVE = object()


def _kernel_event(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "kernel",
        "name": f"kern_{rng.randrange(5)}",
        "pid": 0,
        "tid": 7,
        "ts": 1_000_000.0 + 10.0 * i,
        "dur": round(rng.uniform(0.5, 8.0), 3),
        "args": {"device": 0, "correlation": 1000 + i},
    }


def _cpu_op(i: int) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::mm",
        "pid": 1,
        "tid": 1,
        "ts": 1_000_000.0 + 10.0 * i,
        "dur": 4.0,
    }


def _broken(rng: random.Random, i: int) -> dict[str, Any]:
    event = _kernel_event(rng, i)
    key, make = rng.choice(_BAD_FIELDS)
    value = make(rng)
    if value is None and rng.random() < 0.5:
        event.pop(key)
    else:
        event[key] = value
    return event


def _trace_bytes(rng: random.Random, events: list[dict[str, Any]]) -> tuple[str, bytes]:
    form = rng.choice(["object", "list", "gzip"])
    data: Any = events if form == "list" else {"traceEvents": events, "deviceProperties": []}
    raw = json.dumps(data).encode()
    return ("t.json.gz", gzip.compress(raw)) if form == "gzip" else ("t.json", raw)


def _not_traces(rng: random.Random) -> list[tuple[str, bytes]]:
    depth = rng.randrange(2_000, 20_000)
    deep_args = '{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "args": {"x": '
    good = gzip.compress(json.dumps({"traceEvents": [_kernel_event(rng, i) for i in range(50)]}).encode())
    return [
        ("empty", b""),
        ("whitespace", b"  \n\t "),
        ("no-traceEvents", json.dumps({"model": "x", "events": [1]}).encode()),
        ("empty-object", b"{}"),
        ("traceEvents-not-list", json.dumps({"traceEvents": rng.choice([5, "x", {"a": 1}, None])}).encode()),
        ("events-not-objects", json.dumps({"traceEvents": [1, "two", [3]]}).encode()),
        ("scalar", rng.choice([b"42", b'"trace"', b"null", b"true"])),
        ("deep-list", b"[" * depth + b"]" * depth),
        ("deep-args", deep_args.encode() + b"[" * depth + b"]" * depth + b"}}]}"),
        ("garbage", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 500)))),
        ("truncated-json", json.dumps({"traceEvents": [_kernel_event(rng, i) for i in range(5)]}).encode()[:-17]),
        ("truncated-gzip", good[: rng.randrange(10, len(good) - 8)]),
        ("empty-events", b'{"traceEvents": []}'),
        ("only-metadata", json.dumps({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 0}]}).encode()),
    ]


def trace_cases(rng: random.Random, command: str) -> Iterator[Case]:
    category = f"trace-{command}"
    extra = ["--workers", "1", "--no-rank-csv"] if command == "gap" else []
    for name, data in _not_traces(rng):
        fname = "t.json.gz" if name == "truncated-gzip" else "t.json"
        yield Case(
            category,
            f"not-a-trace:{name}",
            [command, f"in/{fname}", "-o", "out", *extra],
            {f"in/{fname}": data},
            expect=frozenset({1, 2}),
            names=(fname,),
        )
    for k in range(6):
        good = rng.randrange(0, 12) if k else 0
        bad = rng.randrange(1, 8)
        events = [_kernel_event(rng, i) for i in range(good)] + [_broken(rng, good + j) for j in range(bad)]
        if command == "inference" and good:
            events += [_cpu_op(i) for i in range(good)]
        rng.shuffle(events)
        fname, data = _trace_bytes(rng, events)
        yield Case(
            category,
            f"events good={good} bad={bad}",
            [command, f"in/{fname}", "-o", "out", *extra],
            {f"in/{fname}": data},
            expect=frozenset({1, 2}),
            names=(fname, "skipped"),
            zero_needs="skipped" if good else None,
        )
    yield Case(category, "missing path", [command, f"nope_{rng.randrange(10**6)}", "-o", "out"], names=("nope_",))
    yield Case(
        category,
        "empty folder",
        [command, "empty_dir", "-o", "out"],
        {"empty_dir/.keep": b""},
        expect=frozenset({1, 2}),
        names=("empty_dir",),
    )


# -- benchmark YAML --

GOOD_BENCH = {
    "benchmark": {
        "framework": "vllm",
        "model": "m",
        "run_mode": "external",
        "run_kind": "measurement",
        "base_url": "http://127.0.0.1:9",
        "load": {"progress": "false", "num_prompts": "2"},
    }
}

BENCH_BAD: dict[str, list[str]] = {
    "load.num_prompts": ["0", "-3", "abc", "2.5"],
    "load.request_rate": ["0", "-1", ".nan", "abc"],
    "load.max_concurrency": ["0", "-2"],
    "load.concurrencies": ["[0]", "[-1, 2]", "[]", "abc"],
    "load.request_rates": ["[0]", "[-1]", "[.nan]"],
    "load.warmup_requests": ["-1"],
    "load.request_timeout_s": ["0", ".inf", "-1", "1.0e+9"],
    "load.burstiness": ["0", ".nan", "-1"],
    "load.inter_point_sleep_s": ["-1", ".inf"],
    "dataset.input_len": ["0", "-1"],
    "dataset.output_len": ["-5", "0"],
    "dataset.range_ratio": ["1.5", "-0.1"],
    "dataset.prefix_len": ["-1"],
    "slo.ttft_ms": ["-1", ".nan"],
    "slo.tpot_ms": ["-0.5"],
    "slo.e2el_ms": ["-1", ".inf"],
    "timeout_seconds": [".inf", "0", "-1"],
    "base_url": ["garbage", "ftp://x/", "http://127.0.0.1:99999", "'http://:80'", "'http://h:0'"],
    "port": ["0", "70000", "-1"],
    "envs.CONC": ["abc", "0", "-1", "2.5"],
    "envs.ISL": ["0", "x"],
    "envs.OSL": ["-1"],
    "envs.TP": ["x", "0"],
    "envs.NUM_PROMPTS": ["-4"],
    "envs.RANDOM_RANGE_RATIO": ["2", "abc"],
    "server_ready_timeout_s": ["0", ".inf"],
    "stop_grace_s": ["-1"],
    "max_model_len": ["0"],
    "gap_analysis.top_k": ["0"],
    "gap_analysis.trace_start_pct": ["-1", "150"],
    "gap_analysis.window_start_us": ["-5"],
    "profiler.gpu_monitor.interval_sec": ["0", "-1"],
    "sweep_matrix.cases": ["[{CONC: 0}]", "[{ISL: -1}]", "[{request_rate: 0}]"],
    "sweep_matrix.per_client_timeout_s": [".inf"],
    "gpu_selection.count": ["0"],
    "run_mode": ["local", "docker", "nonsense"],
}


def benchmark_cases(rng: random.Random) -> Iterator[Case]:
    for dotted, values in BENCH_BAD.items():
        raw = rng.choice(values)
        tree = _set(GOOD_BENCH, "benchmark." + dotted, raw)
        leaf = dotted.rsplit(".", 1)[-1]
        needle = "base_url" if dotted == "run_mode" and raw in ("local", "docker") else leaf
        yield Case(
            "benchmark-yaml",
            f"{dotted}={raw}",
            ["benchmark", "-b", "bench.yaml", "-o", "out"],
            {"bench.yaml": _yaml(tree).encode()},
            names=(needle,),
        )
    window = _set(
        _set(GOOD_BENCH, "benchmark.gap_analysis.trace_start_pct", "10"), "benchmark.gap_analysis.window_start_us", "5"
    )
    yield Case(
        "benchmark-yaml",
        "two windows",
        ["benchmark", "-b", "bench.yaml"],
        {"bench.yaml": _yaml(window).encode()},
        names=("window_start_us",),
    )


# -- CLI flags --


def flag_cases(rng: random.Random, trace: str) -> Iterator[Case]:
    garbage = rng.choice(["garbage", "localhost:8000", "ftp://h/", "http://h:99999", "http://", "://x", "http:///v1"])
    long_name = "x" * rng.randrange(300, 6000)
    long_path = "/".join(["d" * 200] * rng.randrange(21, 40))
    pct = str(rng.randrange(1, 99))
    cases = [
        ("base-url garbage", ["benchmark", "vllm", "--model", "m", "--base-url", garbage], ("--base-url",)),
        (
            "base-url + run-mode",
            [
                "benchmark",
                "vllm",
                "--model",
                "m",
                "--base-url",
                "http://127.0.0.1:9",
                "--run-mode",
                rng.choice(["local", "docker"]),
            ],
            ("--run-mode",),
        ),
        ("start-pct + start-us", ["gap", trace, "--start-pct", pct, "--start-us", "5"], ("--start-pct",)),
        ("end-pct + end-us", ["gap", trace, "--end-pct", pct, "--end-us", "500"], ("--end-pct",)),
        (
            "annotation + us",
            ["gap", trace, "--window-annotation", "step*", "--start-us", "1"],
            ("--window-annotation",),
        ),
        ("-o under /dev/null", ["gap", trace, "-o", f"/dev/null/{rng.randrange(99)}"], ("--output-dir", "/dev/null")),
        ("-o is /dev/null", ["-o", "/dev/null", "analyze", "-k", "k.yaml"], ("--output-dir",)),
        ("-o is a file", ["gap", trace, "-o", "a_file"], ("--output-dir", "a_file")),
        ("-o under a file", ["benchmark", "vllm", "-o", "a_file/sub"], ("--output-dir", "a_file")),
        ("-o too long", ["gap", trace, "-o", long_name], ("--output-dir", "too long")),
        ("-o path too long", ["analyze", "-k", "k.yaml", "-o", long_path], ("--output-dir", "too long")),
        ("trace name too long", ["gap", long_name], ("too long", "not found")),
        ("trace path too long", ["inference", long_path], ("too long", "no such")),
        ("top-k 0", ["gap", trace, "--top-k", "0"], ("--top-k",)),
        ("start-pct 150", ["gap", trace, "--start-pct", "150"], ("--start-pct",)),
        ("end-pct nan", ["gap", trace, "--end-pct", "nan"], ("--end-pct", "trace_end_pct")),
        ("workers 0", ["--workers", "0", "analyze", "-k", "k.yaml"], ("--workers",)),
        ("gap workers -1", ["gap", trace, "--workers", "-1"], ("--workers",)),
        ("concurrency 0", ["benchmark", "vllm", "--model", "m", "--concurrency", "0"], ("--concurrency",)),
        ("input-len 0", ["benchmark", "vllm", "--model", "m", "--input-len", "0"], ("--input-len",)),
        ("timeout -1", ["benchmark", "vllm", "--model", "m", "--timeout", "-1"], ("--timeout",)),
        ("tp abc", ["benchmark", "vllm", "--tp", "abc"], ("--tp",)),
        ("trace-dir missing", ["benchmark", "--trace-dir", f"gone_{rng.randrange(999)}"], ("gone_",)),
        ("unknown option", ["gap", trace, f"--bogus-{rng.randrange(99)}"], ("--bogus",)),
        ("unknown command", [f"frobnicate{rng.randrange(99)}"], ("frobnicate",)),
        ("inference stages", ["inference", trace, "--stages", "sideways"], ("stages",)),
        ("config missing", ["-c", "nope.yaml", "analyze", "-k", "k.yaml"], ("nope.yaml",)),
        ("no framework", ["benchmark"], ("framework",)),
        (
            "unknown framework",
            ["benchmark", f"engine{rng.randrange(99)}", "--model", "m", "--run-mode", "local"],
            ("engine",),
        ),
        ("min-effect -1", ["compare", "-k", "k.yaml", "--min-effect", "-1"], ("--min-effect",)),
        ("kernel file + testcase", ["analyze", "-k", "k.yaml", "--testcase", "true"], ("--testcase",)),
        ("kernel file + compile-cmd", ["analyze", "-k", "k.yaml", "--compile-cmd", "make"], ("--compile-cmd",)),
        ("compare timing", ["compare", "-k", "kk.yaml", "--no-perf", "-o", "out", "--timing", "sideways"], ("timing",)),
        ("compare baseline", ["compare", "-k", "kk.yaml", "--no-perf", "-o", "out", "--baseline", "9"], ("baseline",)),
        ("trace-dir + model", ["benchmark", "--trace-dir", trace, "--model", "m"], ("--model",)),
    ]
    two = b"kernels:\n  - {id: a, type: pytorch}\n  - {id: b, type: pytorch}\n"
    files = {"a_file": b"x", "k.yaml": _yaml(GOOD_KERNEL).encode(), "kk.yaml": two}
    for name, argv, names in cases:
        yield Case("cli-flags", name, argv, files, names=names)


# -- misbehaving servers --


#: a socket that listens and never accepts or answers: the kernel completes connections into its backlog, so a
#: client connects and then waits (the server that once kept ``magpie benchmark`` silent for 140 s)
_MUTE: list[Any] = []


def _mute_url() -> str:
    import socket

    if not _MUTE:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        _MUTE.append(sock)  # kept open for the process's lifetime: the cases run after this generator returns
    return f"http://127.0.0.1:{_MUTE[0].getsockname()[1]}"


def server_cases(rng: random.Random, url: str) -> Iterator[Case]:
    """Benchmarks against the fake streaming server told to misbehave (``magpie_benchmark.loadgen.fake_server``),
    a port nothing listens on, and one that accepts connections and never answers."""
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    status = rng.choice([400, 404, 429, 500, 502, 503])
    variants = [
        (f"status {status}", url, f"{{fake_status: {status}}}", (f"http_{status}",)),
        ("drops the stream", url, f"{{fake_fail_after: {rng.randrange(0, 3)}}}", ("failed",)),
        ("nothing listening", closed, "{}", ("failed", "connect")),
        ("wrong path", url + "/not-openai", "{}", ("failed",)),
        ("stream that never ends", url, "{fake_itl_ms: 600000}", ("deadline",)),
        # streams chunks forever: the readiness probe's 1-token request never ends, so the run stops there
        ("endless stream", url, "{fake_endless: true}", ("did not answer", "deadline")),
        ("accepts and never answers", _mute_url(), "{}", ("did not answer",)),
    ]
    for name, base, extra, names in variants:
        bench = {
            "benchmark": {
                "framework": "vllm",
                "model": "m",
                "base_url": base,
                "run_kind": "measurement",
                "dataset": {"input_len": "8", "output_len": "8"},
                "load": {
                    "num_prompts": str(rng.randrange(1, 4)),
                    "max_concurrency": "1",
                    "progress": "false",
                    "request_timeout_s": "20",
                    "request_deadline_s": "2",
                    "probe_timeout_s": "3",
                    "stall_timeout_s": "3",
                    "extra_body": extra,
                },
            }
        }
        yield Case(
            "server",
            name,
            ["benchmark", "-b", "bench.yaml", "-o", "out"],
            {"bench.yaml": _yaml(bench).encode()},
            expect=frozenset({1}),
            names=names,
        )


def generate(
    seed: int, categories: tuple[str, ...] = CATEGORIES, trace: str | None = None, server_url: str | None = None
) -> list[Case]:
    """Every generator of ``categories`` once with ``random.Random(seed)`` (all of them: about 170 cases);
    ``server`` needs ``server_url``, a running fake server."""
    from tests.conftest import DATA

    rng = random.Random(seed)
    trace = trace or str(DATA / "traces" / "h100")
    makers: dict[str, Callable[[], Iterator[Case]]] = {
        "server": lambda: server_cases(rng, server_url or ""),
        "config": lambda: config_cases(rng),
        "kernels": lambda: kernel_cases(rng),
        "trace-gap": lambda: trace_cases(rng, "gap"),
        "trace-inference": lambda: trace_cases(rng, "inference"),
        "benchmark-yaml": lambda: benchmark_cases(rng),
        "cli-flags": lambda: flag_cases(rng, trace),
    }
    return [case for cat in categories for case in makers[cat]()]
