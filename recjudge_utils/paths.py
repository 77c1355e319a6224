"""Where recjudge keeps data, caches and run records.

Inside a checkout of the repository everything lives under the repository (``data/``, ``runs/``,
both git-ignored); an installed copy used elsewhere falls back to ``~/.cache/recjudge``.
Environment variables override both: ``RECJUDGE_DATA_DIR`` and ``RECJUDGE_RUNS_DIR``.
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
