"""A command-line process skips jsonschema's "iri" format check (a 1.9 s import) and still reads and validates
notebooks; a process that imported the check's module already keeps it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from locations import ROOT

NOTEBOOK = ROOT / "notebooks" / "00_introduction.ipynb"


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.slow  # fresh interpreters
def test_a_command_line_process_validates_notebooks_without_the_iri_check() -> None:
    out = _run(
        "import sys; from recjudge_utils._startup import skip_iri_format_check; skip_iri_format_check(); "
        f"import nbformat; nbformat.validate(nbformat.read({str(NOTEBOOK)!r}, as_version=4)); "
        "import jsonschema._format as f; "
        "print(sys.modules['rfc3987_syntax'] is None, 'iri' in f.draft7_format_checker.checkers)"
    )
    assert out == "True False"


@pytest.mark.slow
def test_an_earlier_import_of_the_iri_check_is_kept() -> None:
    out = _run(
        "import sys, rfc3987_syntax; from recjudge_utils._startup import skip_iri_format_check; "
        "skip_iri_format_check(); import jsonschema._format as f; "
        "print(sys.modules['rfc3987_syntax'] is not None, 'iri' in f.draft7_format_checker.checkers)"
    )
    assert out == "True True"
