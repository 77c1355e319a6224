"""``python -m tools.check_notebooks notebooks/``: fail when a committed notebook holds outputs,
execution counts or lacks its ``parameters`` cell (notebooks are committed clean; the book runner executes them),
or when papermill cannot read one of its parameters (a second ``=`` on the line, e.g. in the comment, makes
papermill skip it and warn "Passed unknown parameter" on every run)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from recjudge_utils._extras import optional_imports
from recjudge_utils.book.notebooks import declared_parameters

with optional_imports("book"):
    import nbformat
    from papermill.translators import PythonTranslator

__all__ = ["problems"]


def problems(path: Path) -> list[str]:
    """What keeps a committed notebook from being clean: outputs, execution counts, unreadable parameters."""
    nb = nbformat.read(path, as_version=4)
    found = []
    has_parameters = False
    for k, cell in enumerate(nb.cells, start=1):
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            found.append(f"{path.name}: cell {k} has outputs")
        if cell.get("execution_count") is not None:
            found.append(f"{path.name}: cell {k} has an execution count")
        has_parameters |= "parameters" in cell.get("metadata", {}).get("tags", [])
    if not has_parameters:
        found.append(f"{path.name}: no cell tagged 'parameters'")
        return found
    cell = next(c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", []))
    quiet = logging.getLogger("papermill.translators")
    was_disabled, quiet.disabled = quiet.disabled, True  # its warning is what we report below, with the fix
    try:
        seen_by_papermill = {p.name for p in PythonTranslator.inspect(cell)}
    finally:
        quiet.disabled = was_disabled
    for name in sorted(declared_parameters(path) - seen_by_papermill):
        found.append(f"{path.name}: papermill cannot read parameter {name!r} (is there an '=' in its comment?)")
    return found


def main(argv: list[str] | None = None) -> int:
    """Check every notebook in the given folders (default ``notebooks``); 1 if any has a problem."""
    folders = [Path(a) for a in (argv if argv is not None else sys.argv[1:])] or [Path("notebooks")]
    found = [p for folder in folders for nb in sorted(folder.glob("*.ipynb")) for p in problems(nb)]
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
