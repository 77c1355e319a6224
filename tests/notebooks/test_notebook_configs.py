"""Notebooks build their experiment's config in one call, ``config_from(Config, globals())``: the config takes every
field the notebook's parameters name. A notebook variable that is not a parameter must never be taken for one, so
each notebook is read for names it binds before the call that are also fields of the config."""

from __future__ import annotations

import ast
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest
from locations import ROOT

from recjudge_utils.experiments.run import config_from

NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.ipynb"))


def _code_cells(path: Path) -> list[tuple[list[str], str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(c["metadata"].get("tags", []), "".join(c["source"])) for c in cells if c["cell_type"] == "code"]


def _bound(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def _config_calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "config_from"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_builds_its_config_from_its_parameters_and_nothing_else(notebook: Path) -> None:
    cells = _code_cells(notebook)
    parameters = set().union(*(_bound(ast.parse(src)) for tags, src in cells if "parameters" in tags))
    imports: dict[str, Any] = {}
    for _, src in cells:  # the classes the calls name, from the notebook's own imports
        for node in ast.parse(src).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                exec(compile(ast.Module([node], []), notebook.name, "exec"), imports)
    bound: set[str] = set()
    calls = 0
    for tags, src in cells:
        tree = ast.parse(src)
        for call in _config_calls(tree):
            calls += 1
            cls = eval(compile(ast.Expression(call.args[0]), notebook.name, "eval"), imports)
            assert ast.unparse(call.args[1]) == "globals()", "a config is built from the notebook's parameters"
            fields = {f.name for f in dataclasses.fields(cls)}
            taken = fields & (bound | _bound(tree)) - parameters
            assert not taken, f"{notebook.name}: {sorted(taken)} would reach {cls.__name__} but are no parameters"
            assert fields & parameters, f"{notebook.name}: {cls.__name__} takes none of the parameters"
        if "parameters" not in tags:
            bound |= _bound(tree)
    if notebook.stem != "06_judges_compared":  # chapter 6 reads runs and has no experiment config
        assert calls, f"{notebook.name} builds no config with config_from"


@dataclass(frozen=True)
class _Example:
    names: tuple[str, ...] = ("a",)
    maybe: tuple[int, ...] | None = None
    older: Optional[tuple[str, ...]] = None  # noqa: UP045  # the typing.Optional spelling reads the same
    listed: list[str] = dataclasses.field(default_factory=list)
    size: int = 1


def test_config_from_takes_named_fields_tuples_lists_and_lets_overrides_win() -> None:
    given = {"names": ["x", "y"], "maybe": [1], "older": ["o"], "listed": ["z"], "other": 3, "size": 2}
    made = config_from(_Example, given, size=5)
    assert made == _Example(names=("x", "y"), maybe=(1,), older=("o",), listed=["z"], size=5)
    assert config_from(_Example, {"maybe": None}) == _Example()
    with pytest.raises(TypeError, match="not a config dataclass"):
        config_from(dict, {})
