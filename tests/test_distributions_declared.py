"""Every distribution of this repository declares the first-party distributions its code imports.

Each ``pyproject.toml`` (the root's ``magpie-core``, ``magpie_*/``, ``plugins/*/``) is read; its packages are the
folders under ``src/`` (``magpie_core/`` for the root). The imports of every module of a distribution's packages
are read with :mod:`ast` (also those inside functions; not those under ``if TYPE_CHECKING:``, which run for type
checkers only), and every imported package of another first-party distribution must be in its
``[project] dependencies``. Tests are not scanned: a plugin's tests may use the whole repository.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return _normalize(re.split(r"[\s<>=!~;\[(@]", requirement.strip(), maxsplit=1)[0])


def _distributions() -> dict[str, tuple[Path, list[Path], set[str]]]:
    """distribution name -> (its folder, its package folders, the distributions it depends on)."""
    found: dict[str, tuple[Path, list[Path], set[str]]] = {}
    for pyproject in [
        ROOT / "pyproject.toml",
        *sorted(ROOT.glob("magpie_*/pyproject.toml")),
        *sorted(ROOT.glob("plugins/*/pyproject.toml")),
    ]:
        project = tomllib.loads(pyproject.read_text())["project"]
        folder = pyproject.parent
        if folder == ROOT:
            packages = [ROOT / "magpie_core"]
        else:
            packages = [p for p in sorted((folder / "src").glob("*")) if (p / "__init__.py").is_file()]
        depends = {_requirement_name(r) for r in project.get("dependencies", [])}
        found[_normalize(project["name"])] = (folder, packages, depends)
    return found


DISTRIBUTIONS = _distributions()
#: top-level import name -> the distribution that ships it
PACKAGE_OWNER = {package.name: dist for dist, (_, packages, _) in DISTRIBUTIONS.items() for package in packages}


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> set[str]:
    """Top-level names of the modules imported at run time (absolute imports)."""
    names: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        stack.extend(ast.iter_child_nodes(node))
    return names


def undeclared_imports(dist: str) -> dict[str, list[str]]:
    """Imported first-party distributions missing from ``dist``'s dependencies -> the modules importing them."""
    _, packages, depends = DISTRIBUTIONS[dist]
    missing: dict[str, list[str]] = {}
    for package in packages:
        for path in sorted(package.rglob("*.py")):
            for name in _imports(ast.parse(path.read_text(), str(path))):
                owner = PACKAGE_OWNER.get(name)
                if owner is not None and owner != dist and owner not in depends:
                    missing.setdefault(owner, []).append(str(path.relative_to(ROOT)))
    return missing


def test_every_distribution_and_its_packages_are_found() -> None:
    assert len(DISTRIBUTIONS) >= 25
    assert PACKAGE_OWNER["magpie_core"] == "magpie-core"
    assert PACKAGE_OWNER["magpie_gap_analysis"] == "magpie-gap-analysis"
    assert all(packages for _, packages, _ in DISTRIBUTIONS.values())


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
def test_first_party_imports_are_declared_dependencies(dist: str) -> None:
    assert undeclared_imports(dist) == {}, f"{dist} imports these first-party distributions without declaring them"


def test_an_undeclared_import_is_found(tmp_path: Path) -> None:
    """The scan itself: an import inside a function counts, one under ``if TYPE_CHECKING:`` does not."""
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import magpie_mcp\n"
        "def f():\n    from magpie_kernels_pytorch.native import x\n"
    )
    assert _imports(tree) == {"typing", "magpie_kernels_pytorch"}
