"""The book: executing the notebooks of named runs with papermill, and building the Jupyter Book.

===================  =================================================================================================
module               responsibility
===================  =================================================================================================
``cli``              ``python -m recjudge_utils.book`` (``recjudge book``): arguments, profile checks, what to run
``runner``           executing notebooks into ``runs/<run>/`` and recording them in the run's manifest
``notebooks``        which notebooks a run executes and the parameters each receives
``planner``          the plan (every request rendered, none sent) and the offline check of the cache
``execution_cache``  the key that says a notebook has nothing new to execute
``build``            building the HTML book from a run
``scales``           the paper-scale values of every notebook, each with its paper section
``plan_estimate``    the plan's estimate: calls, tokens, cost and hours per notebook before paying
``run_logs``         what a run's judgment logs say per notebook after it ran: its usage and its judge's health
``archive``          exporting a run as one portable archive, and importing it for a replay
``report``           one run as a self-contained report (HTML and PDF)
``tune``             the tuning workers that share chapter 2's Optuna studies across processes and machines
``chromium``         finding Chromium on PATH (the report's PDF and math; the contributors' page checks drive it)
===================  =================================================================================================

A run's ``manifest.json`` is written by :mod:`recjudge_utils.manifest` (the one writer, which notebooks run outside
the runner also use).
"""

from recjudge_utils.book.build import build_book
from recjudge_utils.book.notebooks import NotebookFailed, declared_parameters, parse_parameter_value
from recjudge_utils.book.planner import plan
from recjudge_utils.book.runner import run
from recjudge_utils.manifest import NotebookRun, RunManifest

__all__ = [
    "NotebookFailed",
    "NotebookRun",
    "RunManifest",
    "build_book",
    "declared_parameters",
    "parse_parameter_value",
    "plan",
    "run",
]
