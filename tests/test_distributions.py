"""magpie's entry-point and version lookup (:mod:`magpie_core.distributions`) finds what ``importlib.metadata`` does.

Compared on this environment (every group of every installed distribution, every distribution's version) and on
made-up ``sys.path`` folders: the same distribution in two folders (the first wins), ``.egg-info`` and
``.dist-info`` folders, an attribute entry point, a zip on the path (deferred to ``importlib.metadata``).
"""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys
import zipfile
from pathlib import Path

from magpie_core import distributions


def _key(eps: object) -> list[tuple[str, str, str, str]]:
    return sorted((e.name, e.value, e.dist.name, e.dist.version) for e in eps)  # type: ignore[attr-defined]


def test_every_group_and_version_of_this_environment_matches_importlib_metadata() -> None:
    dists = list(md.distributions())
    groups = {ep.group for d in dists for ep in d.entry_points}
    assert "magpie" in groups
    for group in groups:
        assert _key(distributions.entry_points(group)) == _key(md.entry_points(group=group)), group
    for d in dists:
        name = d.metadata["Name"]
        assert distributions.version(name) == md.version(name), name


def _dist(folder: Path, info: str, name: str, version: str, entry_points: str, pkg_info: bool = False) -> None:
    meta = folder / info
    meta.mkdir(parents=True)
    (meta / ("PKG-INFO" if pkg_info else "METADATA")).write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: a: b\n\nName: not-this\n"
    )
    (meta / "entry_points.txt").write_text(entry_points)


#: run in a fresh interpreter whose sys.path is argv[1:]: both ways' answers for group magpie and version of demo
_PROBE = """
import importlib.metadata as md, json, sys
sys.path[:] = sys.argv[1:] + sys.path
from magpie_core import distributions as d
key = lambda eps: sorted([e.name, e.value, e.dist.name, e.dist.version] for e in eps)
loaded = d.EntryPoint("x", "json:dumps", "g").load().__name__
print(json.dumps([key(d.entry_points("magpie")), key(md.entry_points(group="magpie")),
                  d.version("demo-plugin"), md.version("demo-plugin"), loaded]))
"""


def _both(*paths: Path) -> list[object]:
    import json

    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *map(str, paths)], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(out.stdout)


def test_made_up_folders_first_one_wins_like_importlib_metadata(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _dist(
        first, "demo_plugin-1.0.dist-info", "demo-plugin", "1.0", "[magpie]\ndemo = demo_mod:plugin\n[other]\nx = y\n"
    )
    _dist(second, "demo_plugin.egg-info", "demo-plugin", "0.9", "[magpie]\ndemo = stale\n", pkg_info=True)
    _dist(
        second, "other-2.0.egg-info", "other", "2.0", "# comment\n[magpie]\n other_one = other.plugin \n", pkg_info=True
    )
    ours, theirs, our_version, their_version, loaded = _both(first, second)
    assert ours == theirs
    assert ["demo", "demo_mod:plugin", "demo-plugin", "1.0"] in ours
    assert ["other_one", "other.plugin", "other", "2.0"] in ours
    assert our_version == their_version == "1.0"
    assert loaded == "dumps"


def test_a_zip_on_the_path_defers_to_importlib_metadata(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    _dist(folder, "demo_plugin-3.0.dist-info", "demo-plugin", "3.0", "[magpie]\nz = zmod\n")
    archive = tmp_path / "eggs.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("demo_zip-1.0.dist-info/METADATA", "Name: demo-zip\nVersion: 1.0\n")
        z.writestr("demo_zip-1.0.dist-info/entry_points.txt", "[magpie]\nzipped = zipped_mod\n")
    ours, theirs, our_version, their_version, _ = _both(archive, folder)
    assert ours == theirs and ["zipped", "zipped_mod", "demo-zip", "1.0"] in ours
    assert our_version == their_version == "3.0"


#: in a fresh interpreter with ``argv[1]`` first on ``sys.path``: pydantic's own entry-point scan made to fail, then
#: magpie's answer and a model build; prints pydantic's plugin cache and whether its scan ran
_SETTLE_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
import pydantic.plugin._loader as loader
scanned = []
def no_scan(**kw):
    scanned.append(kw)
    return []
loader.entry_points = no_scan
from pydantic import BaseModel
from magpie_core.distributions import settle_pydantic_plugins
settle_pydantic_plugins()
class M(BaseModel):
    x: int = 0
M(x=1)
print(repr(loader._plugins), bool(scanned))
"""


def _settle(path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _SETTLE_PROBE, str(path)], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_no_pydantic_plugin_installed_pydantic_does_not_scan_again(tmp_path: Path) -> None:
    """No distribution has a ``pydantic`` entry point (this environment): pydantic gets the empty answer its own scan
    would give, and does not list the distributions a second time (importlib.metadata, ~8 ms of ``magpie gap``)."""
    assert list(md.entry_points(group="pydantic")) == []  # what the empty answer stands for
    assert _settle(tmp_path) == "{} False"


def test_a_pydantic_plugin_installed_pydantic_looks_itself(tmp_path: Path) -> None:
    _dist(tmp_path, "a_pydantic_plugin-1.0.dist-info", "a-pydantic-plugin", "1.0", "[pydantic]\nplug = some.module\n")
    assert _settle(tmp_path) == "{} True"  # pydantic scanned (its stub found nothing to load)
