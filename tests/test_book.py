"""The book runner: parameter handling, hidden parameter cells, manifests, and failures that name their cell."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from recjudge_utils import book


def write_notebook(path: Path, parameters: str, body: list[str]) -> None:
    cells = [nbformat.v4.new_markdown_cell("# A tiny notebook")]
    params = nbformat.v4.new_code_cell(parameters)
    params.metadata["tags"] = ["parameters"]
    cells.append(params)
    cells += [nbformat.v4.new_code_cell(src) for src in body]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book").mkdir()
    write_notebook(
        tmp_path / "notebooks" / "01_ok.ipynb",
        'model = "local"  # "local" = the embedded server\nbase_url = None\nn_users: int = 3',
        ["total = n_users * 2\nprint(model, total)"],
    )
    return tmp_path


@pytest.mark.parametrize(
    ("text", "expected"),
    [("200", 200), ("0.5", 0.5), ("[a, b]", ["a", "b"]), ("null", None), ("gpt-4o-mini", "gpt-4o-mini")],
)
def test_parameter_values_are_read_as_yaml(text: str, expected: object) -> None:
    assert book.parse_parameter_value(text) == expected


def test_run_passes_declared_parameters_and_writes_manifest(project: Path) -> None:
    manifest = book.run(model="gpt-x", parameters={"n_users": 7}, build=False, root=project)
    executed = project / "book" / "executed" / "01_ok.ipynb"
    nb = nbformat.read(executed, as_version=4)
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "gpt-x 14" in outputs
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "hide-cell" in injected[0].metadata["tags"]
    params_cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert "hide-cell" in params_cell.metadata["tags"]
    saved = json.loads((project / "book" / "executed" / "manifest.json").read_text())
    assert saved["model"] == "gpt-x"
    assert saved["parameters"] == {"n_users": 7}
    assert saved["notebooks"][0]["status"] == "ok"
    assert manifest.notebooks[0].parameters == {"model": "gpt-x", "base_url": None, "n_users": 7}
    assert "gpt-x" in (project / "book" / "executed" / "run_manifest.md").read_text()


def test_unknown_parameter_is_an_error(project: Path) -> None:
    with pytest.raises(SystemExit, match="n_usres"):
        book.run(parameters={"n_usres": 7}, build=False, root=project)


def test_failing_notebook_names_itself_and_its_cell(project: Path) -> None:
    write_notebook(
        project / "notebooks" / "02_bad.ipynb",
        "seed = 0",
        ["x = 1", "raise ValueError('judge exploded')"],
    )
    with pytest.raises(book.NotebookFailed) as info:
        book.run(build=False, root=project)
    message = str(info.value)
    assert "02_bad.ipynb" in message
    assert "judge exploded" in message
    assert "01_ok.ipynb" not in message  # the good notebook still ran and is not blamed
    saved = json.loads((project / "book" / "executed" / "manifest.json").read_text())
    bad = next(n for n in saved["notebooks"] if n["notebook"] == "02_bad.ipynb")
    assert bad["status"] == "failed"
    assert bad["failed_cell"] is not None


def test_api_key_cannot_be_a_parameter() -> None:
    with pytest.raises(SystemExit):
        book.main(["-p", "api_key", "sk-secret"])
