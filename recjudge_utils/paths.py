"""Where recjudge keeps data, caches and run records.

Inside a checkout of the repository everything lives under the repository (``data/``, ``runs/``,
both git-ignored); an installed copy used elsewhere falls back to ``~/.cache/recjudge``.
Environment variables override both: ``RECJUDGE_DATA_DIR`` and ``RECJUDGE_RUNS_DIR``.

Inside ``runs/``: ``cache.sqlite`` (every judge answer, shared by all runs), ``artifacts/`` (trained recommenders'
outputs, shared by all runs), and one folder per named run (``runs/<run>/``: executed notebooks, manifest, and
one sub-folder per notebook with its judgment log and ``results.json``). The book runner sets
``RECJUDGE_RUN_DIR`` for the notebooks it executes; without it they write to ``runs/default/``.
"""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path | None:
    """The repository root when the package is used from a checkout, else None."""
    candidate = Path(__file__).resolve().parent.parent
    if (candidate / "pyproject.toml").is_file() and (candidate / "recjudge_utils").is_dir():
        return candidate
    return None


def _home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "recjudge"


def data_dir() -> Path:
    """Root folder for downloaded or extracted datasets (one sub-folder per dataset)."""
    if env := os.environ.get("RECJUDGE_DATA_DIR"):
        return Path(env)
    root = project_root()
    return (root / "data") if root else _home() / "data"


def runs_dir() -> Path:
    """Root folder for the judge cache, JSONL judgment logs and run manifests."""
    if env := os.environ.get("RECJUDGE_RUNS_DIR"):
        return Path(env)
    root = project_root()
    return (root / "runs") if root else _home() / "runs"


DEFAULT_RUN = "default"


def current_run_dir() -> Path:
    """The folder of the run being executed (``RECJUDGE_RUN_DIR``, set by the book runner), else ``runs/default``."""
    if env := os.environ.get("RECJUDGE_RUN_DIR"):
        return Path(env)
    return runs_dir() / DEFAULT_RUN


def artifacts_dir() -> Path:
    """Stored outputs of trained recommenders, shared by every run (a new judge retrains nothing)."""
    return runs_dir() / "artifacts"
