"""The book: executing the notebooks of named runs with papermill, and building the Jupyter Book.

============  ============================================================================================
module        responsibility
============  ============================================================================================
``cli``       ``python -m recjudge_utils.book``: arguments, profile checks, what to run
``runner``    executing notebooks into ``runs/<run>/``, the run manifest, building the HTML from a run
``scales``    the paper-scale values of every notebook, each with its paper section
``usage``     the plan (calls, tokens, cost, hours before paying) and the actual usage of a run
``archive``   exporting a run as one portable archive, and importing it for a replay
============  ============================================================================================
"""

from recjudge_utils.book.runner import (
    NotebookFailed,
    NotebookRun,
    RunManifest,
    build_book,
    declared_parameters,
    parse_parameter_value,
    plan,
    run,
)

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
