"""Fuzz: seeded hostile inputs in every category, each run as a user would from the CLI, against the policy.

Exit 2 for a usage/config error, 1 for a subject that failed, a message naming the file, field or flag,
no traceback, no hang, no silent success (see :mod:`tests.fuzz.hostile`). Two seeds per category here;
``benchmarks/fuzz_hostile_inputs.py`` runs 1,000+ cases.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fuzz.hostile import CATEGORIES, generate, run_case

SEEDS = (20, 2026)


@pytest.fixture(autouse=True)
def installed_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The CLI runs in this process: give it the installed plugins, whatever an earlier test left as the
    process-wide plugin manager (one made under ``MAGPIE_PLUGINS=""`` has no kernel backends)."""
    from magpie_core.plugins import PluginManager, use_plugin_manager

    monkeypatch.delenv("MAGPIE_PLUGINS", raising=False)
    with use_plugin_manager(PluginManager()):
        yield


@pytest.mark.parametrize("category", CATEGORIES)
def test_hostile_inputs_follow_the_error_policy(category: str, tmp_path: Path) -> None:
    failures = []
    n = 0
    for seed in SEEDS:
        for i, case in enumerate(generate(seed, (category,))):
            outcome = run_case(case, tmp_path / f"{seed}_{i}", limit_s=60)
            n += 1
            if not outcome.ok:
                failures.append(f"{case.name}: {outcome.problems} (exit {outcome.code}): {outcome.output[-400:]!r}")
    assert n >= 20
    assert not failures, f"{len(failures)} of {n} {category} cases broke the policy:\n" + "\n".join(failures)


def test_misbehaving_servers_fail_the_run_with_a_reason(tmp_path: Path, fake_stream_server: str) -> None:
    """Error statuses, dropped streams, a closed port, a wrong path: exit 1 naming what failed, no traceback."""
    failures = []
    for seed in SEEDS:
        for i, case in enumerate(generate(seed, ("server",), server_url=fake_stream_server)):
            outcome = run_case(case, tmp_path / f"{seed}_{i}", limit_s=90)
            if not outcome.ok:
                failures.append(f"{case.name}: {outcome.problems} (exit {outcome.code}): {outcome.output[-400:]!r}")
    assert not failures, "\n".join(failures)


def test_an_uncaught_error_is_one_line_and_a_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug (an exception no command expects) prints one line naming the log with the traceback, exit 1."""
    import magpie_core.cli.kernels as kernels
    from tests.fuzz.hostile import Case

    def boom(*_args: object, **_kwargs: object) -> None:
        raise KeyError("simulated bug")

    monkeypatch.setattr(kernels, "_kernel_file", boom)
    outcome = run_case(Case("cli", "bug", ["analyze", "-k", "k.yaml"]), tmp_path)
    assert outcome.code == 1 and "Traceback" not in outcome.output
    assert "internal error" in outcome.output and "simulated bug" in outcome.output
    log = Path(outcome.output.split("full traceback in ")[1].split()[0])
    assert "Traceback (most recent call last)" in log.read_text() and "KeyError" in log.read_text()
