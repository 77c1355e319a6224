"""Sphinx extension: each page loads each script once.

sphinx-thebe and sphinx-togglebutton register their inline configuration scripts again when Jupyter Book re-runs
their setup events, and a second ``const`` declaration is a console error on every page. Identical scripts (same
file, same inline body, same attributes, whatever their priority) are kept at their first position only.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def _drop_repeated_scripts(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    unique = []
    for script in context.get("script_files", []):
        # by file and attributes only: a repeat may name its (absent) file None where the first says ""
        attributes = getattr(script, "attributes", {})
        key = (str(script.filename or ""), tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    # in place: the list is the builder's own, to which later handlers (MathJax) still add this page's scripts
    context["script_files"][:] = unique


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the page hook early: a later handler that returns a template name ends the event."""
    app.connect("html-page-context", _drop_repeated_scripts, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
