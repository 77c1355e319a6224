"""The contributors' tools: checks and generators for the notebooks and the book, run from a checkout's root.

Not part of the installed package (``pyproject.toml`` installs ``recjudge_utils`` only): nothing a user of the
library imports lives here. Each module is a command, ``python -m tools.<module>``:

===================  ===========================================================================================
module               what it does
===================  ===========================================================================================
``check_notebooks``  fails when a committed notebook holds outputs or lacks a readable ``parameters`` cell
                     (``make lint``)
``chapter_notes``    writes each chapter's References and glossary cells from ``book/references.bib`` and
                     ``book/glossary.md`` (``--check`` only compares)
``compare_outputs``  what two executions of the chapters display, output by output: a refactor's before/after check
``page_checks``      the built book's pages in Chromium, and the chapters in JupyterLab (``book`` / ``lab``)
===================  ===========================================================================================
"""
