"""When an executed notebook, a plan or a built book can be reused instead of made again.

Jupyter Book's own execution cache (jupyter-cache) keys a notebook by its code cells alone; a chapter here also
depends on its papermill parameters (the judge profile among them), on the package it imports (prompts, metrics,
reporting texts), on the data folder (and a folder dataset its ``dataset`` parameter names) and, for the chapter
that reads every run, on the other runs' results. The key of :func:`notebook_key` covers all of them, so a notebook
is executed again exactly when one of them changed; the runner writes the key into the run's manifest, and
``--force`` executes regardless.

What the key leaves out, on purpose: the judge answer cache (the same profile and requests give the same cached
answers, and a missing one would be asked again by the executed notebook, which is what re-executing is for) and
the trained recommenders in ``runs/artifacts/`` (a model that is trained again from the same data and seed is the
model that was stored).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import recjudge_utils
from recjudge_utils.data import is_dataset_name
from recjudge_utils.data.card import CARD_FILE
from recjudge_utils.paths import MANIFEST_FILE, data_dir, dataset_folder_path, runs_dir

__all__ = [
    "book_key",
    "data_digest",
    "dataset_folder_digest",
    "notebook_key",
    "package_digest",
    "plan_key",
    "runs_digest",
]

#: bump when what a key covers changes, so keys written by an earlier version never match
_KEY_VERSION = 1
_SKIPPED_DIRS = {"__pycache__", ".ipynb_checkpoints"}


def _files(root: Path, skip: Iterable[str] = ()) -> list[Path]:
    skipped = _SKIPPED_DIRS | set(skip)
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not skipped & set(p.relative_to(root).parts) and p.suffix not in {".pyc", ".tmp"}
    )


def _digest_of_files(root: Path, files: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for path in files:
        h.update(str(path.relative_to(root)).encode())
        h.update(b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


@cache
def package_digest() -> str:
    """Every file of the installed ``recjudge_utils`` (code, prompts, texts, paper tables) by content: an edit
    anywhere in the package makes every notebook's key new (a notebook's reach into the package is not traced)."""
    root = Path(recjudge_utils.__file__).resolve().parent
    return _digest_of_files(root, _files(root))


def data_digest(folder: Path | None = None) -> str:
    """The data folder's files by path, size and modification time: datasets are large and are replaced whole
    (fetched, extracted), so their stat is the change that matters and reading them would cost the time saved.

    The data folder's own digest leaves out the folder datasets in it (a subfolder with a card, ``recjudge.yaml``):
    a notebook that reads one names it in its ``dataset`` parameter and is keyed by it
    (:func:`dataset_folder_digest`), and writing a new one (make book writes the books example after the simulated
    run) changes nothing the other notebooks read."""
    whole_data_folder = folder is None
    folder = folder or data_dir()
    if not folder.is_dir():
        return "no data folder"
    cards = {p.parent.name for p in folder.glob(f"*/{CARD_FILE}")} if whole_data_folder else set()
    h = hashlib.sha256()
    for path in (p for p in _files(folder) if p.relative_to(folder).parts[0] not in cards):
        stat = path.stat()
        h.update(f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return h.hexdigest()


def dataset_folder_digest(parameters: Mapping[str, Any]) -> dict[str, str]:
    """The folder dataset a notebook's ``dataset`` parameter names (a path, not a dataset name), by
    :func:`data_digest`: a folder outside the data folder changes without changing the data folder's digest."""
    value = parameters.get("dataset")
    if isinstance(value, str) and not is_dataset_name(value) and (folder := dataset_folder_path(value)).is_dir():
        return {value: data_digest(folder)}
    return {}


def runs_digest(exclude: str | None = None) -> str:
    """Every run's judge and status and every ``results.json``: what the chapter reading all runs shows."""
    root = runs_dir()
    h = hashlib.sha256()
    for manifest in sorted(root.glob(f"*/{MANIFEST_FILE}")):
        run = manifest.parent
        if run.name == exclude:
            continue  # the running run: its own notebooks are keyed by the chain of execution
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        judge = data.get("judge") or {}
        h.update(json.dumps([run.name, judge.get("name"), judge.get("model"), data.get("status")]).encode())
        for results in sorted(run.glob("*/results.json")):
            h.update(str(results.relative_to(root)).encode())
            h.update(hashlib.sha256(results.read_bytes()).digest())
    return h.hexdigest()


def _key(parts: Mapping[str, Any]) -> str:
    text = json.dumps({"version": _KEY_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def notebook_key(
    notebook: Path, parameters: Mapping[str, Any], scale: str, offline: bool, other_runs: str | None = None
) -> str:
    """The execution key of one notebook: its file, its parameters (the judge profile is one), the scale, the run
    mode, the package, the data folder and, for the chapter that reads every run, :func:`runs_digest`."""
    return _key(
        {
            "notebook": hashlib.sha256(notebook.read_bytes()).hexdigest(),
            "parameters": parameters,
            "scale": scale,
            "offline": offline,
            "package": package_digest(),
            "data": data_digest(),
            "other_runs": other_runs,
            # only when there is one: the keys of the named datasets' runs stay what they were
            **({"dataset_folder": folder} if (folder := dataset_folder_digest(parameters)) else {}),
        }
    )


def plan_key(notebooks: Mapping[Path, Mapping[str, Any]], scale: str) -> str:
    """The key of a plan: every planned notebook's file and parameters, the scale, the package and the data.

    Not the stored recommenders: a plan is made before its run, and the run that follows stores the models it
    trains; planning again then would count the run's exact requests instead of what was planned before paying."""
    folders = {k: v for p in notebooks.values() for k, v in dataset_folder_digest(p).items()}
    return _key(
        {
            "notebooks": {nb.name: [hashlib.sha256(nb.read_bytes()).hexdigest(), p] for nb, p in notebooks.items()},
            "scale": scale,
            "package": package_digest(),
            "data": data_digest(),
            **({"dataset_folders": folders} if folders else {}),
        }
    )


def book_key(book_dir: Path, executed: Path, other_pages: Mapping[str, Path] | None = None) -> str:
    """The key of a built book: the book's sources (configuration, pages, extensions, references), the run's
    executed notebooks and manifest page it is built from, and the pages it shows from other runs (by toc entry)."""
    pages = sorted((other_pages or {}).items())
    others = {entry: hashlib.sha256(page.read_bytes()).hexdigest() for entry, page in pages}
    return _key(
        {
            "sources": _digest_of_files(book_dir, _files(book_dir, skip={"_build", "executed"})),
            "executed": _digest_of_files(executed, _files(executed)),
            "package": package_digest(),
            # only when there are some: a book of one run keeps the key it had
            **({"other_pages": others} if others else {}),
        }
    )
