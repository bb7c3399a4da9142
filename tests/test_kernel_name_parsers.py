"""Kernel-name parsing across the four parser distributions: the shared table is real and each of its families
has an owner (whose tests check it: ``plugins/parsers_*/tests``), an unknown name stays unknown whatever is
installed, and the parsers are plugins of four distributions."""

from __future__ import annotations

from magpie_core.kernel_names import parse_kernel_name
from magpie_core.plugins import get_plugin_manager
from tests.helpers.kernel_names import EXTRA, FAMILIES, TABLE


def test_table_is_large_and_real() -> None:
    assert len(TABLE) >= 100
    assert len({row["family"] for row in TABLE}) >= 10


def test_every_family_has_one_owning_distribution() -> None:
    families = {row["family"] for row in TABLE} | {case[2] for case in EXTRA}
    owners = [owned for owned in FAMILIES.values()]
    assert families <= set().union(*owners)
    assert sum(len(owned) for owned in owners) == len(set().union(*owners))  # no family owned twice


def test_unknown_name_is_honest() -> None:
    parsed = parse_kernel_name("Memcpy DtoH (Device -> Pinned)")
    assert parsed.family == "unknown" and parsed.confidence == 0


def test_parsers_are_plugins_in_four_distributions() -> None:
    manager = get_plugin_manager()
    dists = {manager.owner("kernel_name_parser", n).distribution for n in manager.components("kernel_name_parser")}
    assert set(FAMILIES) <= dists
