"""Finding Chromium: the report prints its PDF and typesets its math with it (``python -m recjudge_utils.book report``),
and the contributors' page checks (``tools/page_checks``) drive it through Playwright.

- :data:`CHROMIUM_NAMES`: the executables looked for on PATH, in order;
- :func:`find_chromium`: the first of them found.
"""

from __future__ import annotations

import shutil

__all__ = ["CHROMIUM_NAMES", "find_chromium"]

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The first Chromium (or Chrome) executable on PATH."""
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return found
    return None
