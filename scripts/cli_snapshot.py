"""Snapshot of magpie's user-visible behaviour, for "behaviour unchanged" checks (issue 47).

    python scripts/cli_snapshot.py --out DIR [--tree PATH]

Runs a fixed list of magpie commands (``python -m magpie_core ...``), each in a fresh temporary folder holding copies of
the inputs it needs, with COLUMNS=120, NO_COLOR=1, TZ=UTC and no MAGPIE_PLUGINS. For every command it writes one file
into DIR (``NN_name.txt``): the argv, the exit code, stdout and stderr, the files the command wrote and the contents of
the JSON ones, all masked (see ``mask``). Snapshot two trees, then ``diff -r DIR_before DIR_after`` shows every
difference.

``--tree PATH`` runs the code of another checkout (e.g. ``git worktree add /tmp/before <commit>``): that tree's package
source folders go first on PYTHONPATH, ahead of the venv's editable installs (which point at this checkout); the entry
points in the installed dist-info name the same modules, which then resolve to the other tree. ``00_where.txt`` records
where the packages were imported from, and the script stops if any came from outside the tree. The compiled trace
readers (magpie_trace_native/*.so) are build outputs, not in git: build them in the other tree
(``cd PATH/magpie_trace_native && python setup.py build_ext --inplace``) or 00_where.txt will show them missing and
traces will be read by the (same-results) msgspec path.

Nothing is sorted: the order of output lines and JSON keys is behaviour. Only the list of written files is sorted, since
a directory's listing order is the file system's, not magpie's, and so are the progress lines that parallel worker
processes print as each finishes (see ``_RACING_LINE_RE``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE_TREE = Path(__file__).resolve().parents[1]  # this checkout (the one the venv's editable installs point at)

TRACE_H100 = "tests/data/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
TRACE_DECODE = "tests/data/traces/inference/vllm_decode_full/graph_execution.json.gz"
KB_DATA = "plugins/pytorch/tests/data/kernelbench"
SOFTMAX = "examples/softmax"

# JSON/JSONL files written by a command are recorded in full; other files only by name
RECORDED_SUFFIXES = (".json", ".jsonl")
# a command may not take longer than this (seconds); all of them together take about 35 s on 2 cores
TIMEOUT_S = 300


# ---------------------------------------------------------------------------------------------------------------------
# masking
# ---------------------------------------------------------------------------------------------------------------------

# Keys whose value is measured on the wall clock or describes the machine/process rather than the inputs. A number (or
# string) value becomes "<masked>"; null, true/false, lists and objects are kept, so "was it measured at all" still
# shows. Trace-derived keys such as wall_us, total_duration_us or avg_time_us are deliberately NOT here: they are
# computed from the input file and must be identical.
WALL_CLOCK_KEYS = (
    "elapsed_s",  # gap: the analysis' own run time
    "elapsed",
    "duration_s",  # compile/run steps: how long they took
    "wall_s",
    "seconds",
    "started",
    "finished",
    "created",
    "started_at",
    "finished_at",
    "created_at",
    "timestamp",  # report headers: when the report was written
    "pid",
    "python_executable",
    "copy_memory_mib",  # compare: the timing workers' input-copy budget, a share of the machine's free memory now
)
_KEY_RE = re.compile(
    r'("(?:' + "|".join(map(re.escape, WALL_CLOCK_KEYS)) + r')"\s*:\s*)'
    r'(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*")'
)
# the machine's name as a JSON value of "host"/"hostname" (kernelbench rows record where each ran); only this exact
# value, so a configured server host (127.0.0.1, ...) stays
_HOST_RE = re.compile(r'("(?:host|hostname)"\s*:\s*)"' + re.escape(socket.gethostname()) + '"')
# ISO 8601 date-times (report timestamps, log lines): when it ran
_ISO_RE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
# run folders are named <kind>_<name>_YYYYMMDD_HHMMSS: when it ran
_STAMP_RE = re.compile(r"(?<!\d)\d{8}_\d{6}(?!\d)")
# text output: durations measured on the wall clock, e.g. "in 12.3 s", "took 3 ms", "waited 0.4s"; only after the
# words that introduce such a measurement, so trace-derived times ("kernel time 10.718 ms") stay
_TEXT_DURATION_RE = re.compile(r"(\b(?:in|took|after|elapsed|waited|wait)\s+)\d+(?:\.\d+)?\s?(?:s|ms|sec|seconds)\b")


# compare/analyze progress: every kernel's "… ID: compile X, correctness Y" line is printed by the worker process
# that checked it, as it finishes, so a run of such lines comes in the order the processes happened to finish. Such a
# run (and nothing else) is put in a fixed order; the table and the report keep the kernels' own order.
_RACING_LINE_RE = re.compile(r"^… [^:\n]+: compile \S+, correctness \S+$")


def _order_racing_lines(text: str) -> str:
    lines, out, run = text.split("\n"), [], []
    for line in [*lines, None]:
        if line is not None and _RACING_LINE_RE.match(line):
            run.append(line)
            continue
        out += sorted(run)
        run = []
        if line is not None:
            out.append(line)
    return "\n".join(out)


def mask(text: str, paths: list[tuple[str, str]]) -> str:
    """The masked form of one output: ``paths`` are (absolute path, placeholder), longest first."""
    # 1. absolute paths of the temporary folders and of the tree: they differ from run to run and tree to tree
    for path, placeholder in paths:
        text = text.replace(path, placeholder)
    # 2. wall-clock JSON values (see WALL_CLOCK_KEYS), replaced in the text so the layout stays byte for byte
    text = _KEY_RE.sub(r'\1"<masked>"', text)
    text = _HOST_RE.sub(r'\1"<HOSTNAME>"', text)
    # 3. dates and times of day
    text = _ISO_RE.sub("<DATETIME>", text)
    text = _STAMP_RE.sub("<YYYYMMDD_HHMMSS>", text)
    # 4. wall-clock durations in text output
    text = _TEXT_DURATION_RE.sub(r"\1<T>", text)
    # 5. progress lines of worker processes that race (see _RACING_LINE_RE)
    return _order_racing_lines(text)


# ---------------------------------------------------------------------------------------------------------------------
# the commands
# ---------------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    name: str
    args: list[str]  # after `python -m magpie_core`; "{glob:PATTERN}" is replaced by the one match under the cwd
    setup: Callable[[Path, Path], None] | None = None  # (source, cwd): copy inputs, run preparatory commands
    files: bool = True  # record the files it wrote (names, JSON contents)
    stderr: bool = True


def _copy(tree: Path, rel: str, cwd: Path, dest: str | None = None) -> None:
    src = tree / rel
    target = cwd / (dest or src.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copy2(src, target)


def _h100(tree: Path, cwd: Path) -> None:
    _copy(tree, TRACE_H100, cwd)


def _decode(tree: Path, cwd: Path) -> None:
    _copy(tree, TRACE_DECODE, cwd)


def _softmax(tree: Path, cwd: Path) -> None:
    _copy(tree, SOFTMAX, cwd, "softmax")


_TYPO_YAML = """\
kernels:
  - id: eager
    type: pytorch
    entyr: softmax.py:softmax_eager
    reference: softmax.py:reference
"""

_UNKNOWN_TYPE_YAML = """\
kernels:
  - id: eager
    type: pytorhc
    entry: softmax.py:softmax_eager
    reference: softmax.py:reference
"""


def _softmax_yaml(text: str) -> Callable[[Path, Path], None]:
    def setup(tree: Path, cwd: Path) -> None:
        _softmax(tree, cwd)
        (cwd / "softmax" / "bad.yaml").write_text(text)

    return setup


def _not_a_trace(tree: Path, cwd: Path) -> None:
    (cwd / "notes.json").write_text('{"not": "a trace"}\n')


def _relu_files(tree: Path, cwd: Path) -> None:
    for name in ("relu_reference.py", "relu_clamp.py", "relu_wrong.py"):
        _copy(tree, f"{KB_DATA}/{name}", cwd)


def _kb_set(tree: Path, cwd: Path) -> None:
    _copy(tree, f"{KB_DATA}/relu_reference.py", cwd, "problems/relu.py")
    _copy(tree, f"{KB_DATA}/relu_clamp.py", cwd, "solutions/relu/relu_clamp.py")
    _copy(tree, f"{KB_DATA}/relu_wrong.py", cwd, "solutions/relu/relu_wrong.py")


def _gap_written(tree: Path, cwd: Path) -> None:
    """A gap run to draw a report of (its own output is checked by the gap cases)."""
    _h100(tree, cwd)
    prep = [sys.executable, "-m", "magpie_core", "gap", Path(TRACE_H100).name, "-o", "out", "--json", "--no-html"]
    subprocess.run(prep, cwd=cwd, env=_ENV, capture_output=True, timeout=TIMEOUT_S, check=True)


_HELP_COMMANDS = [
    ["analyze"],
    ["compare"],
    ["gap"],
    ["inference"],
    ["benchmark"],
    ["plugins"],
    ["gpu-info"],
    ["kernelbench"],
    ["kernelbench", "run"],
    ["report"],
    ["mcp"],
    ["loop"],
    ["targeted-trace"],
]
_GZ = Path(TRACE_H100).name
_DECODE_GZ = Path(TRACE_DECODE).name

CASES: list[Case] = [
    Case("help", ["--help"], files=False),
    *[Case("help_" + "_".join(c).replace("-", "_"), [*c, "--help"], files=False) for c in _HELP_COMMANDS],
    Case("version", ["--version"], files=False),
    Case("plugins_json", ["plugins", "--json"], files=False),
    Case("plugins_csv", ["plugins", "--format", "csv"], files=False),
    Case("gpu_info_json", ["gpu-info", "--json"], files=False),
    Case("gap_json", ["gap", _GZ, "-o", "out", "--json"], _h100),
    Case("gap_table", ["gap", _GZ, "-o", "out"], _h100),
    Case("gap_csv", ["gap", _GZ, "-o", "out", "--format", "csv"], _h100),
    Case("gap_not_a_trace", ["gap", "notes.json", "-o", "out"], _not_a_trace),
    Case("gap_missing", ["gap", "missing_trace.json.gz", "-o", "out"]),
    Case("inference_json", ["inference", _DECODE_GZ, "-o", "out", "--json"], _decode),
    Case("inference_table", ["inference", _DECODE_GZ, "-o", "out"], _decode),
    Case("inference_h100_json", ["inference", _DECODE_GZ, "-o", "out", "--spec", "H100", "--json"], _decode),
    Case(
        "compare_softmax_json", ["compare", "-k", "softmax/compare.yaml", "--no-perf", "-o", "out", "--json"], _softmax
    ),
    Case("compare_softmax_table", ["compare", "-k", "softmax/compare.yaml", "--no-perf", "-o", "out"], _softmax),
    Case(
        "analyze_typo_key", ["analyze", "-k", "softmax/bad.yaml", "--no-perf", "-o", "out"], _softmax_yaml(_TYPO_YAML)
    ),
    Case(
        "analyze_unknown_type",
        ["analyze", "-k", "softmax/bad.yaml", "--no-perf", "-o", "out"],
        _softmax_yaml(_UNKNOWN_TYPE_YAML),
    ),
    Case(
        "compare_kernelbench_files",
        ["compare", "relu_reference.py", "relu_clamp.py", "relu_wrong.py", "--no-perf", "-o", "out"],
        _relu_files,
    ),
    Case(
        "kernelbench_run_json",
        ["kernelbench", "run", "problems", "--solutions", "solutions", "--no-perf", "--json", "-o", "out"],
        _kb_set,
    ),
    # benchmark --compare A B: the repository has no benchmark_report.json under tests/data or magpie_benchmark/tests
    # (the tests build them), so it is not in the list.
    Case("report_of_gap", ["report", "{glob:out/gap_*/gap_analysis.json}"], _gap_written, files=False, stderr=False),
]


# ---------------------------------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------------------------------

_ENV: dict[str, str] = {}


def source_roots(tree: Path) -> list[Path]:
    """The package source folders of a checkout: the tree itself (magpie_core), magpie_*/src, plugins/*/src."""
    roots = [tree, *sorted(tree.glob("magpie_*/src")), *sorted(tree.glob("plugins/*/src"))]
    if (tree / "magpie_api" / "__init__.py").exists():
        roots.append(tree / "magpie_api")
    return [r for r in roots if r.is_dir()]


def make_env(tree: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("MAGPIE_PLUGINS", None)
    env.pop("PYTHONPATH", None)
    # PYTHONDONTWRITEBYTECODE: no __pycache__ written into the trees (or the copied inputs) by the snapshot
    env.update(COLUMNS="120", NO_COLOR="1", TZ="UTC", PYTHONDONTWRITEBYTECODE="1")
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(r) for r in source_roots(tree))
    return env


_WHERE_CODE = r"""
import importlib.util, sys
import magpie_core, magpie_kernels_pytorch
print("magpie_core", magpie_core.__file__)
print("magpie_kernels_pytorch", magpie_kernels_pytorch.__file__)
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
        print(name, spec.origin if spec and spec.origin else (list(spec.submodule_search_locations) if spec else None))
    except Exception as exc:
        print(name, "ERROR", type(exc).__name__, exc)
"""


def where(tree: Path, out: Path) -> None:
    """00_where.txt: where every product package is imported from; stop if one is not in the tree."""
    names = sorted(
        {p.name for r in source_roots(tree) if r != tree for p in r.iterdir() if (p / "__init__.py").exists()}
        | {"magpie_core"}
    )
    names += ["magpie_trace_native._kineto_scan", "magpie_trace_native._kineto_kept"]
    proc = subprocess.run(
        [sys.executable, "-c", _WHERE_CODE, *names],
        cwd=tempfile.gettempdir(),
        env=_ENV,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    prefix = str(tree) + os.sep
    outside = [
        line
        for line in proc.stdout.splitlines()
        if len(line.split(" ", 1)) == 2
        and not line.split(" ", 1)[1].startswith(prefix)
        and not (line.startswith("magpie_trace_native._") and line.endswith(" None"))  # not built: a note below
    ]
    if any(line.startswith("magpie_trace_native._") and line.endswith(" None") for line in proc.stdout.splitlines()):
        print(f"note: the compiled trace readers are not built in {tree} (see --help); traces go through msgspec")
    text = (
        f"python: {sys.executable}\nexit: {proc.returncode}\n--- imported from\n{proc.stdout}"
        f"--- stderr\n{proc.stderr}--- not under the tree\n" + "".join(line + "\n" for line in outside)
    )
    # the tree path itself is masked so that two trees' 00_where.txt compare equal when both are right
    (out / "00_where.txt").write_text(text.replace(sys.executable, "<PYTHON>").replace(str(tree), "<TREE>"))
    print(f"00_where.txt: magpie_core from {proc.stdout.splitlines()[0] if proc.stdout else '?'}")
    if proc.returncode != 0 or outside:
        sys.exit(f"packages imported from outside {tree} (see {out / '00_where.txt'}):\n" + "\n".join(outside))


def _listing(cwd: Path) -> set[Path]:
    return {p for p in cwd.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def run_case(index: int, case: Case, tree: Path, out: Path) -> float:
    cwd = Path(tempfile.mkdtemp(prefix="magpie_snap_"))  # same length every time: Rich wraps paths the same
    paths = sorted(
        {
            (str(cwd), "<CWD>"),
            (str(cwd.resolve()), "<CWD>"),
            (str(tree), "<TREE>"),
            # the venv is this checkout's (inside it, usually) whatever --tree says: its own placeholder, so that a
            # path into site-packages reads the same in both snapshots
            (sys.prefix, "<VENV>"),
            (sys.executable, "<PYTHON>"),
        },
        key=lambda pair: -len(pair[0]),
    )
    try:
        args = []
        try:
            if case.setup:
                # inputs always come from this checkout, so that two snapshots differ only in the code that ran
                case.setup(HERE_TREE, cwd)
            for a in case.args:
                if a.startswith("{glob:"):
                    (match,) = sorted(cwd.glob(a[6:-1]))
                    a = str(match.relative_to(cwd))
                args.append(a)
        except (subprocess.SubprocessError, OSError, ValueError) as exc:  # a broken tree: recorded, not fatal
            detail = getattr(exc, "stderr", None) or b""
            text = f"$ magpie {shlex.join(case.args)}\nsetup failed: {type(exc).__name__}: {exc}\n"
            (out / f"{index:02d}_{case.name}.txt").write_text(mask(text + detail.decode(errors="replace"), paths))
            return 0.0
        before = _listing(cwd)
        argv = [sys.executable, "-m", "magpie_core", *args]
        start = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=cwd, env=_ENV, capture_output=True, timeout=TIMEOUT_S)
            code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            code, stdout, stderr = f"timeout after {TIMEOUT_S} s", exc.stdout or b"", exc.stderr or b""
        took = time.monotonic() - start

        def m(data: bytes) -> str:
            return mask(data.decode("utf-8", errors="backslashreplace"), paths)

        parts = [f"$ magpie {m(shlex.join(args).encode())}\nexit: {code}\n--- stdout\n{m(stdout)}"]
        if case.stderr:
            parts.append(f"--- stderr\n{m(stderr)}")
        if case.files:
            # sorted: a folder's listing order is the file system's, not magpie's
            written = sorted(_listing(cwd) - before)
            parts.append("--- files written\n" + "".join(m(str(p.relative_to(cwd)).encode()) + "\n" for p in written))
            for p in written:
                if p.name.endswith(RECORDED_SUFFIXES):
                    parts.append(f"--- file {m(str(p.relative_to(cwd)).encode())}\n{m(p.read_bytes())}")
        text = "".join(part if part.endswith("\n") else part + "\n" for part in parts)
        (out / f"{index:02d}_{case.name}.txt").write_text(text)
        return took
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


def main() -> None:
    global _ENV
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="snapshot folder (an old snapshot there is replaced)")
    parser.add_argument("--tree", type=Path, help="another checkout whose code to run (default: the installed one)")
    opts = parser.parse_args()
    tree = (opts.tree or HERE_TREE).resolve()
    _ENV = make_env(tree if opts.tree else None)
    out = opts.out
    if out.exists() and any(out.iterdir()):
        if not (out / "00_where.txt").exists():
            sys.exit(f"{out} is not empty and holds no snapshot: not overwriting it")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    where(tree, out)
    total = time.monotonic()
    for index, case in enumerate(CASES, start=1):
        took = run_case(index, case, tree, out)
        print(f"{index:02d}_{case.name}: {took:.1f} s", flush=True)
    print(f"{len(CASES)} commands in {time.monotonic() - total:.0f} s; snapshot in {out}")


if __name__ == "__main__":
    main()
