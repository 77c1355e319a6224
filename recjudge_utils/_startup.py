"""What a command-line process does before it imports anything heavy.

:func:`skip_iri_format_check`: jsonschema, which nbformat imports to validate notebooks, imports ``rfc3987_syntax``
when it is installed (jupyter-events' extra pulls it in) for its "iri" format check, and that module builds a Lark
grammar at import: 1.9 s of every ``recjudge book`` start on 2 cores (``benchmarks/bench_cli_start.py``). No schema
this process validates (nbformat's) uses the format. Only the command-line entry points call it, never a library
import: a process that imported jsonschema already (a Jupyter server) is left as it is.
"""

from __future__ import annotations

import sys

__all__ = ["skip_iri_format_check"]


def skip_iri_format_check() -> None:
    """Make ``import rfc3987_syntax`` fail in this process (jsonschema then skips its "iri" check), unless it was
    imported already."""
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # None: "import fails", by design
