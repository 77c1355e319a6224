"""The two scales of a run: ``demo`` (each notebook's own defaults: minutes on a laptop, offline) and ``paper``
(the papers' experiment sizes). One table, each value with its source: the paper section, the authors' public code
where it says more than the paper, or the book's own choice where the paper says nothing.

``python -m recjudge_utils.book run --scale paper`` passes these values to every notebook that declares them;
``-p NAME VALUE`` still overrides any single one. Datasets are not part of the scale (the papers' datasets must
be downloaded first; see ``data/README.md``): pass ``-p dataset ml-1m`` for that.

``python -m recjudge_utils.book params`` writes the same values as papermill parameter files, one per notebook
(``notebooks/params/paper/<notebook>.yaml``), for rerunning one chapter with papermill at paper scale.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

__all__ = ["PAPER_SCALE", "PARAMS_DIR", "SCALES", "ScaleValue", "paper_parameter_files", "scale_parameters"]


@dataclass(frozen=True)
class ScaleValue:
    """One parameter at paper scale: the notebook it belongs to, its value and where the paper says so."""

    notebook: str
    parameter: str
    value: Any
    source: str


PAPER_SCALE: tuple[ScaleValue, ...] = (
    # n_pairs None = every pair but the few-shot users' (so fewer than 2,150); notebook 1 prints the judged n and why
    ScaleValue("01", "n_pairs", None, "serendipity paper, Sec. 4.1: 2,150 pairs; here all but the few-shot users'"),
    ScaleValue("01", "n_shots", 10, "serendipity paper, Sec. 3.2 / 4.1: 10-shot prompts, two per level"),
    ScaleValue("01", "n_history", 10, "serendipity paper, Sec. 3.1: the user's last 10 items"),
    ScaleValue("02", "folds", 3, "serendipity paper, Sec. 5.1: three folds, start shifted by one slice"),
    ScaleValue("02", "n_trials", 100, "serendipity paper, Sec. 5.1: 100 TPE trials per RS per fold"),
    ScaleValue(
        "02",
        "n_users",
        0,
        "the book's choice: every test user (0 = all); the serendipity paper (Sec. 5.1) does not say how many "
        "users it judged",
    ),
    ScaleValue("02", "top_k", 20, "serendipity paper, Sec. 5.1 / Table 3: @20"),
    ScaleValue(
        "02",
        "train_budget",
        "paper",
        "serendipity paper, Sec. 5.1: TPE tuning, no epoch budget stated; the book's 'paper' budget trains each "
        "model for its module's default epochs",
    ),
    ScaleValue(
        "03",
        "n_users",
        1000,
        "RecSys Arena authors' code (prompt_template_gpt.py, `for u_id in range(1000)`; every AllResults sheet sums "
        "to 1,000): 1,000 users per comparison",
    ),
    ScaleValue(
        "03",
        "n_history",
        5,
        "RecSys Arena authors' code (prompt_template_gpt.py): 5 history items from the user's training positives",
    ),
    ScaleValue("03", "top_k", 5, "RecSys Arena, Sec. 2.3: the top-5 lists of A and B"),
    ScaleValue(
        "03",
        "n_close_pairs",
        2,
        "the book's choice: 2 closest-AUC pairs; RecSys Arena, Sec. 4.1 (Figures 3-4) compares models with similar "
        "AUC directly and does not say how many pairs",
    ),
    ScaleValue(
        "03",
        "train_budget",
        "paper",
        "RecSys Arena, Sec. 3.3: no training budget stated; the book's 'paper' budget trains longer than 'small'",
    ),
    ScaleValue("04", "n_customers", 200, "SAER, Sec. 3.4: a stratified sample of 200 customers"),
    ScaleValue("04", "n_adversarial", 100, "SAER, Sec. 3.4 / 4.1: 100 blind adversarial pairs"),
    ScaleValue("04", "top_k", 10, "SAER, Sec. 3.4: top-10 lists"),
    ScaleValue("04", "max_history", None, "SAER, Sec. 3.1: six months of purchase history (no cut: the whole window)"),
    ScaleValue(
        "07",
        "n_users",
        0,
        "the book's choice: every evaluation user judged (0 = all); the serendipity paper (Sec. 5.1) does not say "
        "how many users it judged",
    ),
    ScaleValue("07", "top_k", 20, "serendipity paper, Sec. 5.1 / Table 3: @20, the longest list of the three papers"),
    ScaleValue("07", "arena_pairs", "all", "the book's choice: a tournament, every two systems in both orders"),
)

SCALES = ("demo", "paper")
#: where ``python -m recjudge_utils.book params`` writes the papermill parameter files (relative to the checkout)
PARAMS_DIR = PurePosixPath("notebooks/params/paper")
PARAMS_COMMAND = "python -m recjudge_utils.book params"


def scale_parameters(scale: str, notebook: str) -> dict[str, Any]:
    """The values of ``scale`` for one notebook (its file name): none for ``demo``."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose from {', '.join(SCALES)}")
    if scale == "demo":
        return {}
    return {v.parameter: v.value for v in PAPER_SCALE if notebook.startswith(v.notebook)}


def paper_parameter_files(notebooks: Iterable[str]) -> dict[str, str]:
    """File name -> text of the papermill parameter file (``-f``) of each notebook (file names) with paper-scale
    values: generated from :data:`PAPER_SCALE`, each value under a comment naming its paper section."""
    files = {}
    for notebook in sorted(notebooks):
        stem = notebook.removesuffix(".ipynb")
        values = [v for v in PAPER_SCALE if stem.startswith(v.notebook)]
        if not values:
            continue
        lines = [
            f"# Paper-scale parameters of notebooks/{stem}.ipynb, for papermill:",
            f"#   papermill notebooks/{stem}.ipynb OUT.ipynb -f {PARAMS_DIR}/{stem}.yaml -p judge PROFILE",
            f"# Generated from PAPER_SCALE in recjudge_utils/book/scales.py by: {PARAMS_COMMAND}",
            "# Do not edit: change PAPER_SCALE and rerun the command (a test checks this file equals its output).",
        ]
        for v in values:
            lines.append(f"# {v.source}")
            lines.append(yaml.safe_dump({v.parameter: v.value}, default_flow_style=False, sort_keys=False).rstrip())
        files[f"{stem}.yaml"] = "\n".join(lines) + "\n"
    return files
