"""What a run records of one of its chapters: the parameters it ran with, and the judgments of its latest execution.

* :func:`chapter_parameters`: the run's executed copy of the notebook (its ``parameters`` cell's defaults and the
  values papermill injected) with the manifest's parameters of the notebook over them, and where they were read;
* :func:`judgment_records`: the chapter's judgment log from the line its latest execution started at (the manifest's
  ``judgments_from``: a rerun into the same run appends to the log, and an earlier execution with other parameters
  judged other users), the last record of each request (a rerun appends its cache hits again).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recjudge_utils.data._common import DataFormatError
from recjudge_utils.paths import MANIFEST_FILE, shown_path

__all__ = ["chapter_folds", "chapter_parameters", "judgment_records", "manifest_entry"]


def manifest_entry(run_dir: Path, notebook: str) -> dict[str, Any]:
    """The run manifest's entry of ``notebook`` (empty when the run has no manifest or it names no such notebook)."""
    manifest = Path(run_dir) / MANIFEST_FILE
    if not manifest.is_file():
        return {}
    try:
        entries = json.loads(manifest.read_text(encoding="utf-8")).get("notebooks", [])
    except (OSError, ValueError):
        return {}
    return next((e for e in entries if str(e.get("notebook", "")).removesuffix(".ipynb") == notebook), {})


def _cell_assignments(source: str) -> dict[str, Any]:
    """The literal assignments of a notebook cell (a non-literal value is left out)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                continue
            out.update({t.id: value for t in node.targets if isinstance(t, ast.Name)})
    return out


def _executed_parameters(path: Path) -> dict[str, Any]:
    """The parameters an executed notebook ran with: its ``parameters`` cell, then its ``injected-parameters``."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError):
        return {}
    found: dict[str, dict[str, Any]] = {}
    for cell in cells:
        tags = (cell.get("metadata") or {}).get("tags") or []
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        for tag in ("parameters", "injected-parameters"):
            if cell.get("cell_type") == "code" and tag in tags:
                found.setdefault(tag, {}).update(_cell_assignments(source))
    return {**found.get("parameters", {}), **found.get("injected-parameters", {})}


def chapter_parameters(run_dir: Path, notebook: str) -> tuple[dict[str, Any], list[str]]:
    """(parameters, where they were read): the run's executed copy of ``notebook`` (its defaults and the injected
    values) with the manifest's parameters of the notebook over them; empty when the run records neither."""
    params: dict[str, Any] = {}
    sources: list[str] = []
    entry = manifest_entry(run_dir, notebook)
    executed = Path(run_dir) / "executed" / f"{notebook}.ipynb"
    if not executed.is_file() and entry.get("output"):
        executed = Path(str(entry["output"]))
    if executed.is_file():
        params.update(_executed_parameters(executed))
        sources.append(shown_path(executed))
    if entry.get("parameters"):
        params.update(entry["parameters"])
        sources.append(f"{shown_path(Path(run_dir) / MANIFEST_FILE)} (parameters of {notebook})")
    return params, sources


def chapter_folds(params: Mapping[str, Any]) -> tuple[int, ...] | None:
    """Chapter 7's ``fold``, chapter 2's ``folds`` (a count: folds 0 .. folds-1); None when neither is recorded."""
    if params.get("fold") is not None:
        return (int(params["fold"]),)
    if params.get("folds") is not None:
        return tuple(range(int(params["folds"])))
    return None


def judgment_records(run_dir: Path, notebook: str) -> list[dict[str, Any]]:
    """The chapter's judgments of its latest execution, the last record of each template and request;
    FileNotFoundError naming the log when there is none, DataFormatError naming the line of a broken record."""
    path = Path(run_dir) / notebook / "judgments.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no judgments (is the run or notebook name right?)")
    start = int(manifest_entry(run_dir, notebook).get("judgments_from") or 0)
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if line_no <= start or not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(f"{path}: line {line_no}: not a JSON record ({exc.msg})") from exc
            meta = json.dumps(record.get("metadata"), sort_keys=True)
            latest[(str(record.get("template_id")), meta)] = record
    return list(latest.values())
