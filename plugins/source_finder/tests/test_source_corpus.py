"""The kernel-source finder against the checked corpus in tests/data/kernel_source_corpus: real kernel names
(the shared traces, a published B200 inventory, the issue's examples) and extracts of the upstream files that
define them (paths and commits in its README).

Guarantees: no ``exact`` row names a wrong file (or a kernel whose definition is not in the checkouts); per
family, at least 90 % of the kernels whose definition is in the checkouts are found (exact or probable, right
file); every entry gets one of its expected resolutions; an exact row's line holds the definition; the test
commands select the tests that call the kernel's launcher.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from magpie_source_finder.corpus import Figures, evaluate

from tests.conftest import DATA

CORPUS = DATA / "kernel_source_corpus" / "corpus.json"


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Figures:
    return evaluate(CORPUS, tmp_path_factory.mktemp("cache"))


def test_no_wrong_exact(figures: Figures) -> None:
    wrong = [(o.entry["name"][:80], o.got_file, o.expected_file) for o in figures.outcomes if o.wrong_exact]
    assert wrong == []


def test_recall_per_family(figures: Figures) -> None:
    low = {}
    for family, f in figures.by_family().items():
        if f["in_checkout"] and f["found"] / f["in_checkout"] < 0.9:
            low[family] = f
    assert low == {}
    assert sum(f["in_checkout"] for f in figures.by_family().values()) >= 30


def test_every_entry_gets_an_expected_resolution(figures: Figures) -> None:
    off = [
        (o.entry["name"][:80], o.row["source_resolution"], o.entry["expect"]["resolution"])
        for o in figures.outcomes
        if o.row["source_resolution"] not in o.entry["expect"]["resolution"]
    ]
    assert off == []


def test_exact_rows_point_at_the_definition(figures: Figures) -> None:
    for o in figures.outcomes:
        row = o.row
        if row["source_resolution"] != "exact":
            continue
        var, rel = row["source_file"].split("/", 1)
        root = next(Path(r["path"]) for r in row["_repos"] if r["var"] == var)
        lines = (root / rel).read_text().splitlines()
        symbol = o.entry["expect"]["symbol"]
        near = "\n".join(lines[row["line"] - 1 : row["line"] + 1])  # the name, or a macro invocation naming it
        assert re.search(r"\b" + re.escape(symbol) + r"\b", near), (o.entry["name"][:60], row["line"])


def test_test_commands_select_the_calling_tests(figures: Figures) -> None:
    checked = 0
    for o in figures.outcomes:
        want = o.entry["expect"].get("test_cmd")
        if want:
            assert o.row["test_cmd"].endswith(want), (o.entry["name"][:60], o.row["test_cmd"])
            checked += 1
        elif o.row["source_resolution"] in ("exact", "probable") and not o.row.get("test_cmd"):
            assert "no test found" in o.row["notes"]
    assert checked >= 8


def test_unresolved_rows_say_why(figures: Figures) -> None:
    by_family = {o.entry["family"]: o.row for o in figures.outcomes if o.row["source_resolution"] == "unresolved"}
    assert "no pytorch checkout" in by_family["aten"]["source_error"]
    assert "TorchInductor" in by_family["inductor"]["source_error"]
    assert "prebuilt trtllm_gen cubin" in by_family["prebuilt"]["source_error"]


def test_other_library_copy_is_listed_never_exact(figures: Figures) -> None:
    """The issue's wrong-exact case: vllm::reshape_and_cache_flash_kernel with only an aiter checkout."""
    o = next(o for o in figures.outcomes if o.entry.get("checkouts") == ["aiter"] and "reshape" in o.entry["name"])
    assert o.row["source_resolution"] == "unresolved" and not o.row.get("source_file")
    cand = o.row["candidates"][0]
    assert cand["repo"] == "aiter" and cand["namespace"] == "aiter" and cand["match"] == "foreign"
    assert "a different kernel" in cand["why"]
