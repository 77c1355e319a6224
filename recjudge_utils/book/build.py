"""Building the Jupyter Book from a run's executed notebooks.

Holds :func:`build_book` (``jupyter-book build`` of ``book/``, skipped when its sources and the executed notebooks
are those of the last build) and what it does to a page executed in another run (:func:`relabelled`,
:func:`with_other_run_note`: a toc entry ``executed/<other run>--<notebook>``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from recjudge_utils.book.execution_cache import book_key
from recjudge_utils.book.notebooks import run_dir
from recjudge_utils.paths import DEFAULT_RUN

__all__ = ["OTHER_RUN_PAGE", "build_book", "relabelled", "with_other_run_note"]


#: the key of the last build (:func:`.execution_cache.book_key`), beside the HTML it describes
_BUILD_KEY_FILE = "recjudge-build.json"


def build_book(root: Path, run_name: str = DEFAULT_RUN, force: bool = False) -> bool:
    """Copy the run's executed notebooks and manifest page into ``book/executed`` and run
    ``jupyter-book build --all -W`` (warnings are errors, every page is rebuilt); returns whether it built.

    Nothing is built when the last build was made from the same book sources and executed notebooks (its key is in
    ``book/_build/recjudge-build.json``) and its HTML is there, unless ``force``.

    A toc entry ``executed/<other run>--<notebook>`` shows that notebook as executed in another run (the page that
    runs chapter 2 on a books dataset): it is copied from ``runs/<other run>/executed/`` beside the run's own pages
    (its links to other chapters lead to this book's), its labels prefixed with ``<other run>-`` (the same chapter's
    page in this run defines them too)."""
    source = run_dir(run_name) / "executed"
    book_dir = root / "book"
    toc = yaml.safe_load((book_dir / "_toc.yml").read_text())
    wanted = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    pages = {f: _executed_page(source, f) for f in wanted if f.startswith("executed/")}
    missing = [f for f, page in pages.items() if not page.exists()]
    if missing:
        raise ValueError(
            f"no executed copy of {', '.join(missing)} (run those notebooks into their run first, e.g. python -m "
            f"recjudge_utils.book run --run {run_name}; an entry executed/<run>--<notebook> is read from that run)"
        )
    other_pages = {f: page for f, page in pages.items() if not page.is_relative_to(source)}
    key = {"run": run_name, "key": book_key(book_dir, source, other_pages)}
    stamp = book_dir / "_build" / _BUILD_KEY_FILE
    built = book_dir / "_build" / "html" / "index.html"
    if not force and built.is_file() and stamp.is_file() and json.loads(stamp.read_text(encoding="utf-8")) == key:
        print(f"book unchanged since its last build from run {run_name!r}: nothing to build (--force builds)")
        return False
    target = book_dir / "executed"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    for entry, page in other_pages.items():
        other_run = entry.removeprefix("executed/").partition(OTHER_RUN_PAGE)[0]
        text = relabelled(page.read_text(encoding="utf-8"), f"{other_run}-")
        if page.suffix == ".ipynb":
            text = with_other_run_note(text, other_run, page.stem)
        (book_dir / f"{entry}{page.suffix}").write_text(text, encoding="utf-8")
    stamp.unlink(missing_ok=True)  # a failed build leaves no key that claims its HTML
    jb = Path(sys.executable).with_name("jupyter-book")
    command = [str(jb) if jb.exists() else "jupyter-book", "build", str(book_dir), "--all", "-W", "--keep-going"]
    print("building the book:", " ".join(command), flush=True)
    subprocess.run(command, check=True)
    stamp.write_text(json.dumps(key) + "\n", encoding="utf-8")
    return True


#: a toc entry ``executed/<other run>--<notebook>`` is that notebook's page as executed in the other run
OTHER_RUN_PAGE = "--"


def relabelled(notebook_json: str, prefix: str) -> str:
    """A notebook's JSON text with every label it defines (a figure's ``name``, an exercise's ``:label:``, a
    ``(target)=``) and every reference to it prefixed: a second copy of a chapter in one book may not define the
    first copy's labels again."""
    nb = json.loads(notebook_json)
    labels: set[str] = set()
    for cell in nb.get("cells", []):
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if isinstance(figure.get("name"), str):
            labels.add(figure["name"])
        source = "".join(cell.get("source", []))
        labels |= set(re.findall(r"^:label:\s*([\w-]+)", source, re.M)) | set(
            re.findall(r"^\(([\w-]+)\)=", source, re.M)
        )
    for label in sorted(labels, key=len, reverse=True):
        notebook_json = re.sub(rf"(?<![\w-]){re.escape(label)}(?![\w-])", prefix + label, notebook_json)
    return notebook_json


def with_other_run_note(notebook_json: str, other_run: str, notebook: str) -> str:
    """The notebook with a note after its title cell: the prose is the chapter's own, the outputs the other run's
    (on that run's dataset and judge, named in the run's manifest and in the outputs themselves)."""
    nb = json.loads(notebook_json)
    note = (
        f"```{{note}}\nThis page is [this chapter]({notebook}.ipynb) as executed in the run `{other_run}` "
        f"(made by `make book-sim`): the prose is the chapter's own, written for the book's MovieLens run; every "
        f"output below, from the dataset loaded to the last table, is the `{other_run}` run's.\n```"
    )
    first = nb["cells"][0]
    title, _, rest = "".join(first["source"]).partition("\n")
    if first["cell_type"] == "markdown" and title.startswith("# "):  # right under the title, above the prose
        first["source"] = [f"{title}\n\n{note}\n{rest}"]
    else:
        nb["cells"].insert(0, {"cell_type": "markdown", "id": f"{other_run}-note", "metadata": {}, "source": [note]})
    return json.dumps(nb, indent=1, ensure_ascii=False)


def _executed_page(source: Path, toc_file: str) -> Path:
    stem = toc_file.removeprefix("executed/")
    other_run, _, notebook = stem.partition(OTHER_RUN_PAGE)
    if notebook:  # executed/<other run>--<notebook>: that run's executed copy
        source, stem = run_dir(other_run) / "executed", notebook
    ipynb, md = source / f"{stem}.ipynb", source / f"{stem}.md"
    return ipynb if ipynb.exists() or not md.exists() else md
