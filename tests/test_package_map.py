"""The written map is true: each package's docstring names every module and subpackage it holds, and the README's
Layout names every package folder (issue 45: the map had gone stale, e.g. ``book/__init__.py`` listed 5 of its 12
modules and the README omitted ``lists/`` and ``answer_formats/``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from locations import ROOT

PACKAGE = ROOT / "recjudge_utils"
#: every folder of modules at any depth (``judge/backends``, ``experiments/protocol_detection``, ...)
ALL_PACKAGES = sorted({p.parent for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE and "__pycache__" not in p.parts})
PACKAGES = [p for p in ALL_PACKAGES if p.parent == PACKAGE]


def _members(package: Path) -> list[str]:
    modules = [p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")]
    subpackages = [p.name for p in package.iterdir() if p.is_dir() and any(p.glob("*.py"))]
    return sorted(m for m in modules + subpackages if not m.startswith("_"))


def _docstring(package: Path) -> str:
    init = package / "__init__.py"
    return (ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or "") if init.exists() else ""


def _named(doc: str) -> set[str]:
    """Modules a docstring names: as a literal (``cli``, ``backends/``) or a reference (:mod:`.loader`)."""
    literals = re.findall(r"``([A-Za-z_]\w*)/?``", doc)
    references = [ref.rsplit(".", 1)[-1] for ref in re.findall(r":mod:`~?([\w.]+)`", doc)]
    return set(literals) | set(references)


@pytest.mark.parametrize("package", ALL_PACKAGES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_package_docstring_names_every_module_it_holds(package: Path) -> None:
    missing = [m for m in _members(package) if m not in _named(_docstring(package))]
    where = package.relative_to(ROOT)
    assert not missing, f"{where}/__init__.py's docstring does not name: {', '.join(missing)}"


def test_the_readme_layout_names_every_package_folder() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    missing = [p.name for p in PACKAGES if not re.search(rf"\b{re.escape(p.name)}\b", layout)]
    assert not missing, f"README's Layout does not name: {', '.join(missing)}"


def test_the_map_check_fails_on_a_package_that_omits_a_module(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text('"""Holds ``alpha`` and :mod:`.gamma`."""\n', encoding="utf-8")
    for name in ("alpha", "beta", "gamma"):
        (package / f"{name}.py").write_text("", encoding="utf-8")
    assert [m for m in _members(package) if m not in _named(_docstring(package))] == ["beta"]


TESTS = ROOT / "tests"
#: test folders for what is not a package of the library: the contributors' tools and the notebooks
_OTHER_TEST_FOLDERS = {"tools", "notebooks"}


def test_the_tests_mirror_the_package_folders() -> None:
    """A test of ``recjudge_utils/<package>/`` sits in ``tests/<package>/``; at the top of ``tests/`` only the tests of
    the package's top-level modules (``cli``, ``files``, ...) and of the map itself."""
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    packages = {p.name for p in PACKAGES}
    assert folders - packages - _OTHER_TEST_FOLDERS == set(), "test folders that mirror no package"
    top_modules = {p.stem for p in PACKAGE.glob("*.py")} | {"install", "package_map", "startup"}
    stray = [p.name for p in TESTS.glob("test_*.py") if p.stem.removeprefix("test_") not in top_modules]
    assert stray == [], "tests at the top of tests/ that belong in a package's folder"
