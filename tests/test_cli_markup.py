"""The CLI prints kernel messages as text: brackets in them are not rich markup. A path such as ``[/tmp/k.py]``
in an error once crashed the compare's printout (rich: closing tag doesn't match), after the run; a process name
such as ``[kworker/0:1]`` in the timing line was swallowed as a style."""

from __future__ import annotations

from pathlib import Path

KERNEL = """
import torch


def get_inputs():
    return [torch.randn(32, 32)]


def reference(x):
    return torch.relu(x)


def bracketed(x):
    raise ValueError("cannot read [/tmp/k.py] in [kworker/0:1]")
"""


def test_brackets_in_kernel_messages_are_printed_as_they_are(run_magpie, tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL)
    (tmp_path / "compare.yaml").write_text(
        "baseline: reference\nperformance: {budget_seconds: 0.5}\nkernels:\n"
        + "".join(
            f"  - {{id: {name}, type: pytorch, entry: 'k.py:{name}', get_inputs: 'k.py:get_inputs', "
            "reference: 'k.py:reference'}\n"
            for name in ("reference", "bracketed")
        )
    )
    done = run_magpie(["compare", "-k", str(tmp_path / "compare.yaml"), "-o", str(tmp_path / "out"), "--no-html"])
    assert "Traceback" not in done.stderr and "MarkupError" not in done.stdout + done.stderr, done.stderr
    assert "cannot read [/tmp/k.py] in [kworker/0:1]" in done.stdout, done.stdout
    assert "report: " in done.stdout  # the printout went on to its end
