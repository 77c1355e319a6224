"""``python -m tools.page_checks book|lab ...``: the book's pages or the chapters in JupyterLab, read in Chromium.

Exit code: 0 no problem, 1 problems, 2 the check could not run (no browser, no JupyterLab, nothing to check).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools.page_checks import book_pages, lab
from tools.page_checks.core import VIEWPORT, run_check
from tools.page_checks.lab_server import TIMEOUT

__all__ = ["main"]


def _book(args: argparse.Namespace) -> int:
    html_dir = Path(args.html_dir)
    if not html_dir.is_dir():
        print(f"error: {html_dir} does not exist: build the book first (make book)", file=sys.stderr)
        return 2
    screenshots = Path(args.screenshots or html_dir.parent / "screenshots")
    viewport = (args.width, VIEWPORT[1])
    return run_check(lambda: book_pages.check_pages(html_dir, screenshots=screenshots, viewport=viewport), "pages")


def _lab(args: argparse.Namespace) -> int:
    folder = Path(args.folder) if args.folder else lab.default_folder()
    notebooks = sorted(folder.glob("*.ipynb"))
    if not notebooks:
        print(f"error: no notebook in {folder}: run the book first (make book)", file=sys.stderr)
        return 2
    screenshots = Path(args.screenshots) if args.screenshots else folder.parent / "lab-screenshots"
    return run_check(lambda: lab.check_notebooks(notebooks, screenshots=screenshots, timeout=args.timeout), "notebooks")


def main(argv: list[str] | None = None) -> int:
    """Check every page of a built book, or every notebook of a folder in JupyterLab; print the problems of each."""
    parser = argparse.ArgumentParser(prog="python -m tools.page_checks", description=__doc__)
    targets = parser.add_subparsers(dest="target", required=True)
    book = targets.add_parser("book", help="every page of the built book", description=book_pages.__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    book.add_argument("html_dir", nargs="?", default="book/_build/html", help="the built book")
    book.add_argument(
        "--screenshots", default=None, help="folder for the screenshots (default: screenshots/ beside HTML_DIR)"
    )
    book.add_argument("--width", type=int, default=VIEWPORT[0], help="window width in CSS pixels")
    book.set_defaults(run=_book)
    notebooks = targets.add_parser("lab", help="every notebook of a folder, in JupyterLab", description=lab.__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    notebooks.add_argument("folder", nargs="?", default=None, help="notebooks to open (default: runs/default/executed)")
    notebooks.add_argument("--screenshots", default=None, help="folder for the PNGs (default: lab-screenshots/ beside)")
    notebooks.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds for Lab, a notebook, its kernel")
    notebooks.set_defaults(run=_lab)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
