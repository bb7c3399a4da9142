"""Issue 44: magpie's reward-hack catalogue under pygpubench (GPU MODE's adversarial benchmarking library).

    python benchmarks/pygpubench_catalogue.py --problem softmax --out DIR [--repeats 100]   # a CUDA GPU, Python 3.12+

pygpubench times a kernel ``kernel(output, *inputs)`` that writes into a buffer it allocates, in a subprocess of its
own, with its timing loop compiled, results written to an unlinked file, inputs regenerated per repeat, and it counts
outputs that do not match. The catalogue's files are KernelBench ``ModelNew`` modules, so each one runs through a small
adapter: ``kernel(out, *inputs)`` calls the module and copies its result into ``out`` (a copy every solution pays alike;
an output that is only looked up still costs that copy). The reference runs through the same adapter. Per file: errors,
whether every repeat completed, the median time and its ratio to the reference's. Writes
``DIR/pygpubench_<problem>.jsonl`` and prints a markdown table. pygpubench's sandbox options (landlock, mseal) are left
at their defaults; ``allow_root`` is on when run as root (the lent machine's user).

On a lent machine (no network there), its wheels travel in ``.whl_pgb/``, fetched here with ``pip download -d .whl_pgb
--no-deps --python-version 3.12 --only-binary=:all: --platform manylinux_2_38_x86_64 --platform manylinux_2_28_x86_64
--platform manylinux2014_x86_64 pygpubench cryptography cffi pycparser``, installed there with ``pip install
--no-index --no-deps --target /tmp/pgb .whl_pgb/*.whl`` (``PYTHONPATH=/tmp/pgb``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

CATALOGUE = Path(__file__).resolve().parents[1] / "plugins" / "pytorch" / "tests" / "data" / "reward_hacks"
ADAPTER = """
import importlib.util
import torch

_spec = importlib.util.spec_from_file_location("solution_under_test", {path!r})
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
_ref = importlib.util.spec_from_file_location("problem_reference", {ref!r})
_refmod = importlib.util.module_from_spec(_ref)
_ref.loader.exec_module(_refmod)
_model = getattr(_mod, {cls!r})(*_refmod.get_init_inputs()).cuda()


def kernel(out, *inputs):
    out.copy_(_model(*inputs))
"""
_REFERENCES: dict[str, object] = {}


def _reference(path: str) -> object:
    if path not in _REFERENCES:
        import importlib.util

        spec = importlib.util.spec_from_file_location("problem_reference_gen", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        _REFERENCES[path] = module
    return _REFERENCES[path]


def generate(*, seed: int, ref: str) -> tuple[tuple, tuple]:
    """pygpubench's test generator: fresh inputs from ``seed``, the reference's output, KernelBench's v0 tolerance."""
    import torch

    module = _reference(ref)
    torch.manual_seed(seed)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    with torch.no_grad():
        expected = module.Model(*module.get_init_inputs()).cuda()(*inputs)
    return (torch.empty_like(expected), *inputs), (expected, 1e-2, 1e-2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", default="softmax")
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import pygpubench

    args.out.mkdir(parents=True, exist_ok=True)
    ref = str(CATALOGUE / f"{args.problem}_ref.py")
    adapters = Path(tempfile.mkdtemp(prefix="pgb_adapters_"))
    sys.path.insert(0, str(adapters))
    files = [CATALOGUE / f"{args.problem}_ref.py", *sorted(CATALOGUE.glob(f"{args.problem}_*.py"))]
    rows = []
    for n, path in enumerate(dict.fromkeys(files)):
        cls = "Model" if path.name.endswith("_ref.py") else "ModelNew"
        name = f"pgb_{n}"
        (adapters / f"{name}.py").write_text(ADAPTER.format(path=str(path), ref=ref, cls=cls))
        row: dict[str, object] = {"solution": path.stem}
        try:
            res = pygpubench.do_bench_isolated(
                f"{name}.kernel", generate, {"ref": ref}, args.repeats, 1234, allow_root=os.geteuid() == 0, timeout=120
            )
            valid = sorted(t for t in res.time_us if t > 0)
            row |= {"errors": res.errors, "full": res.full, "median_us": valid[len(valid) // 2] if valid else None}
        except Exception as exc:  # the subprocess failed: what pygpubench said
            said = str(exc).strip().splitlines()
            row["failure"] = f"{type(exc).__name__}: {said[-1][:200] if said else ''}"
        rows.append(row)
        print(json.dumps(row), flush=True)
    base = next((r.get("median_us") for r in rows if r["solution"].endswith("_ref")), None)
    with (args.out / f"pygpubench_{args.problem}.jsonl").open("w") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    print("\n| solution | pygpubench errors | all repeats | median us | vs reference |\n|---|---|---|---|---|")
    for r in rows:
        ratio = f"{base / r['median_us']:.2f}x" if base and r.get("median_us") else "-"
        errors = r.get("errors", r.get("failure"))
        print(f"| {r['solution']} | {errors} | {r.get('full')} | {r.get('median_us')} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
