"""Rerun every notebook with papermill and build the Jupyter Book.

    python -m recjudge_utils.book                                   # defaults: embedded model
    python -m recjudge_utils.book --model gpt-4o-mini --base-url https://api.openai.com/v1 -p n_users 200
    python -m recjudge_utils.book --only 01 --no-build              # one notebook, no HTML

Parameters given with ``-p NAME VALUE`` (VALUE is read as YAML: ``200``, ``0.5``, ``[a, b]``, ``null``)
go to every notebook whose ``parameters`` cell declares NAME; a NAME no notebook declares is an error.
The API key is never a parameter: the notebooks' judge client reads it from the environment.

Executed notebooks, a ``manifest.json`` (model, parameters, package version, git commit, timings) and
a ``run_manifest.md`` page for the book are written to ``book/executed/``; the book is then built with
``jupyter-book build --all -W`` so any warning fails the build.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nbformat
import yaml

from recjudge_utils import __version__
from recjudge_utils.paths import project_root

HIDDEN_CELL_TAGS = ("parameters", "injected-parameters")


@dataclass
class NotebookRun:
    """What happened to one notebook in a run."""

    notebook: str
    output: str
    parameters: dict[str, Any]
    status: str = "pending"  # "ok" | "failed"
    seconds: float = 0.0
    failed_cell: int | None = None
    error: str | None = None


@dataclass
class RunManifest:
    """Everything needed to say what produced the executed notebooks."""

    model: str
    base_url: str | None
    parameters: dict[str, Any]
    package_version: str
    git_commit: str
    python: str
    started_utc: str
    finished_utc: str = ""
    seconds: float = 0.0
    notebooks: list[NotebookRun] = field(default_factory=list)


class NotebookFailed(RuntimeError):
    """A notebook raised during execution; the message names the notebook and its failing cell."""


def parse_parameter_value(text: str) -> Any:
    """Read a ``-p`` value the way papermill's CLI does: as YAML, falling back to the raw string."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def declared_parameters(notebook: Path) -> set[str]:
    """Names assigned in the cell tagged ``parameters``.

    Read with ``ast`` rather than papermill's line-by-line inspection, which skips an assignment whose
    comment contains quotes (``model = "local"  # "local" = the embedded server``).
    """
    nb = nbformat.read(notebook, as_version=4)
    names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code" or "parameters" not in cell.get("metadata", {}).get("tags", []):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError as exc:
            raise SystemExit(f"{notebook.name}: the parameters cell is not valid Python ({exc})") from exc
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def git_commit(root: Path) -> str:
    """Current commit, with ``-dirty`` when the work tree has uncommitted changes; ``unknown`` outside git."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


def tidy_executed_notebook(path: Path) -> None:
    """Prepare an executed copy for the book: collapse the parameters / injected-parameters cells."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if any(tag in tags for tag in HIDDEN_CELL_TAGS) and "hide-cell" not in tags:
            cell["metadata"]["tags"] = [*tags, "hide-cell"]
    nbformat.write(nb, path)


def describe_failure(exc: Exception) -> tuple[int | None, str]:
    """Cell index (1-based, as counted in the notebook) and a one-line error from a papermill failure."""
    cell_index = getattr(exc, "cell_index", None)
    ename, evalue = getattr(exc, "ename", type(exc).__name__), getattr(exc, "evalue", str(exc))
    return (cell_index + 1 if isinstance(cell_index, int) else None), f"{ename}: {evalue}".strip()


def execute_notebook(source: Path, output: Path, parameters: dict[str, Any], log_output: bool) -> NotebookRun:
    """Run one notebook with papermill (working directory: its own folder)."""
    import papermill

    run = NotebookRun(notebook=source.name, output=str(output), parameters=parameters)
    started = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(source),
            str(output),
            parameters=parameters,
            cwd=str(source.parent),
            kernel_name="python3",
            progress_bar=False,
            log_output=log_output,
            report_mode=False,
        )
        run.status = "ok"
    except Exception as exc:  # papermill raises PapermillExecutionError, but a kernel death is another type
        run.status = "failed"
        run.failed_cell, run.error = describe_failure(exc)
    run.seconds = round(time.perf_counter() - started, 1)
    if output.exists():
        tidy_executed_notebook(output)
    return run


def manifest_markdown(manifest: RunManifest) -> str:
    """The manifest as a book page, so every published report says what produced it."""
    lines = [
        "# Run manifest",
        "",
        "What produced the executed notebooks in this book. Rerun with `make book`, or with another judge:",
        "`python -m recjudge_utils.book --model MODEL --base-url URL -p NAME VALUE`.",
        "",
        "| field | value |",
        "| --- | --- |",
        f"| judge model | `{manifest.model}` |",
        f"| base URL | `{manifest.base_url or 'embedded local server'}` |",
        f"| recjudge_utils version | {manifest.package_version} |",
        f"| git commit | `{manifest.git_commit}` |",
        f"| Python | {manifest.python} |",
        f"| started (UTC) | {manifest.started_utc} |",
        f"| total time | {manifest.seconds:.0f} s |",
        f"| extra parameters | `{json.dumps(manifest.parameters)}` |",
        "",
        "| notebook | status | seconds |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {run.notebook} | {run.status} | {run.seconds:.0f} |" for run in manifest.notebooks]
    return "\n".join(lines) + "\n"


def build_book(book_dir: Path) -> None:
    """``jupyter-book build --all -W``: warnings are errors, every page is rebuilt."""
    jb = Path(sys.executable).with_name("jupyter-book")
    command = [str(jb) if jb.exists() else "jupyter-book", "build", str(book_dir), "--all", "-W", "--keep-going"]
    print("building the book:", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def select_notebooks(notebook_dir: Path, only: list[str] | None) -> list[Path]:
    notebooks = sorted(notebook_dir.glob("*.ipynb"))
    if only:
        notebooks = [nb for nb in notebooks if any(nb.name.startswith(prefix) for prefix in only)]
        if not notebooks:
            raise SystemExit(f"no notebook in {notebook_dir} starts with any of {only}")
    return notebooks


def run(
    model: str = "local",
    base_url: str | None = None,
    parameters: dict[str, Any] | None = None,
    only: list[str] | None = None,
    build: bool = True,
    log_output: bool = False,
    root: Path | None = None,
) -> RunManifest:
    """Execute the notebooks, write the manifest, build the book; raise NotebookFailed on any failure."""
    root = root or project_root()
    if root is None:
        raise SystemExit("recjudge_utils.book needs a checkout of the recjudge repository (notebooks/ and book/)")
    notebooks = select_notebooks(root / "notebooks", only)
    out_dir = root / "book" / "executed"
    out_dir.mkdir(parents=True, exist_ok=True)
    extra = dict(parameters or {})
    declared = {nb: declared_parameters(nb) for nb in notebooks}
    unknown = set(extra) - set().union(*declared.values())
    if unknown:
        raise SystemExit(f"parameters {sorted(unknown)} are declared by none of {[nb.name for nb in notebooks]}")

    manifest = RunManifest(
        model=model,
        base_url=base_url,
        parameters=extra,
        package_version=__version__,
        git_commit=git_commit(root),
        python=platform.python_version(),
        started_utc=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    started = time.perf_counter()
    for nb in notebooks:
        wanted = {"model": model, "base_url": base_url, **extra}
        params = {name: value for name, value in wanted.items() if name in declared[nb]}
        print(f"[{nb.name}] running with {params}", flush=True)
        result = execute_notebook(nb, out_dir / nb.name, params, log_output)
        manifest.notebooks.append(result)
        where = f" at cell {result.failed_cell}" if result.failed_cell else ""
        print(f"[{nb.name}] {result.status} in {result.seconds:.0f} s{where}", flush=True)
        if result.error:
            print(f"[{nb.name}] {result.error}", flush=True)
    manifest.seconds = round(time.perf_counter() - started, 1)
    manifest.finished_utc = datetime.now(UTC).isoformat(timespec="seconds")
    (out_dir / "manifest.json").write_text(json.dumps(asdict(manifest), indent=2, default=str) + "\n")
    (out_dir / "run_manifest.md").write_text(manifest_markdown(manifest))

    failures = [r for r in manifest.notebooks if r.status != "ok"]
    if failures:
        details = "; ".join(f"{r.notebook} failed at cell {r.failed_cell}: {r.error}" for r in failures)
        raise NotebookFailed(f"{len(failures)} notebook(s) failed: {details} (executed copies in {out_dir})")
    if build:
        build_book(root / "book")
        print(f"book built: {root / 'book' / '_build' / 'html' / 'index.html'}", flush=True)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recjudge_utils.book", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--model", default="local", help="judge model; 'local' = the embedded SmolLM2 server")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (key from the environment)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    parser.add_argument("--only", nargs="+", help="run only notebooks whose file name starts with these prefixes")
    parser.add_argument("--no-build", action="store_true", help="execute the notebooks but do not build the HTML")
    parser.add_argument("--log-output", action="store_true", help="stream notebook output to this terminal")
    args = parser.parse_args(argv)
    if any(name.lower() in {"api_key", "openai_api_key"} for name, _ in args.parameter):
        parser.error("the API key is read from the environment (OPENAI_API_KEY), never passed as a parameter")
    parameters = {name: parse_parameter_value(value) for name, value in args.parameter}
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # silences a debugger warning in every kernel
    try:
        run(args.model, args.base_url, parameters, args.only, not args.no_build, args.log_output)
    except NotebookFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"error: the book build failed (exit {exc.returncode}); see the Sphinx output above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
