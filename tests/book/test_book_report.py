"""The one-file report of a run: built from a tiny fake run (one executed notebook, a real-shaped manifest) and a
two-page book, checked for what a reader of an e-mailed file needs: nothing fetched from anywhere, the figure
inside the file, no code, the manifest first; the PDF when Chromium is there, a clear message when it is not."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import matplotlib
import nbformat
import pandas as pd
import pytest
from locations import ROOT

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from recjudge_utils.book import cli
from recjudge_utils.book import report as report_module
from recjudge_utils.book.chromium import find_chromium
from recjudge_utils.book.report import (
    MANIFEST_PAGE,
    NO_PDF_EXIT,
    ReportFiles,
    load_manifest,
    report_command,
    report_toc,
    write_report,
)

CHROMIUM = find_chromium()
INPUT_MARKER = "SECRET_INPUT_MARKER"
FAKE_COMMIT = "0123456789abcdef0123456789abcdef01234567"
JUDGE = {"backend": "sim", "name": "sim", "model": "simulated-judge-for-the-report-test", "prices": {}}


def png_bytes() -> bytes:
    """A real matplotlib figure as PNG."""
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.bar(["win", "tie", "lose"], [5, 2, 3])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def fake_manifest(status: str = "ok") -> dict[str, object]:
    """A manifest shaped like runs/default/manifest.json (the fields the runner writes)."""
    usage = {"calls": 3, "prompt_tokens": 120, "completion_tokens": 9, "cost_usd": 0.0, "hours": 0.001}
    return {
        "run": "fake",
        "judge": JUDGE,
        "scale": "demo",
        "parameters": {"n_users": 3},
        "package_version": "0.1.0",
        "git_commit": FAKE_COMMIT,
        "python": "3.11.7",
        "started_utc": "2026-11-23T20:50:31+00:00",
        "finished_utc": "2026-11-23T20:51:31+00:00",
        "seconds": 60.0,
        "status": status,
        "notebooks": [
            {
                "notebook": "01_fake.ipynb",
                "output": "/somewhere/runs/fake/executed/01_fake.ipynb",
                "parameters": {"judge": JUDGE},
                "status": "ok",
                "seconds": 12.5,
                "failed_cell": None,
                "error": None,
            }
        ],
        "plan": {"notebooks": [{"notebook": "01_fake", **usage}]},
        "actual": {"notebooks": [{"notebook": "01_fake", "judgments": 3, "cache_hits": 0, **usage}]},
        "training_seconds": 0.0,
        "endpoint_adaptations": {},
        "judge_health": [
            {
                "notebook": "01_fake",
                "judgments": 3,
                "parsed": 0,
                "unparsed": 3,
                "errors": 0,
                "cache_hits": 0,
                "repaired": 0,
                "unusable_share": 1.0,
                "flagged": True,
                "unparsed_reasons": [["no JSON object in the answer", 3]],
                "error_reasons": [],
            }
        ],
    }


def fake_notebook(png: bytes) -> nbformat.NotebookNode:
    """An executed notebook: a markdown output, a PNG figure and a DataFrame table under one code cell."""
    table = pd.DataFrame({"model": ["fm", "sasrec"], "Win %": [61.1, 38.9]})
    cell = nbformat.v4.new_code_cell(f"{INPUT_MARKER} = 42\nshow_everything()", execution_count=1)
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"text/markdown": "**A markdown finding**", "text/plain": "md"}),
        nbformat.v4.new_output(
            "display_data", data={"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"}
        ),
        nbformat.v4.new_output(
            "execute_result", data={"text/html": table.to_html(), "text/plain": str(table)}, execution_count=1
        ),
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Fake chapter\n\nSome prose."), cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def fake_book(folder: Path) -> Path:
    """A two-page book with the real book's vendored MathJax and an intro holding math."""
    folder.mkdir()
    (folder / "_vendor").symlink_to(ROOT / "book" / "_vendor", target_is_directory=True)
    (folder / "_config.yml").write_text(
        "title: a fake book\nonly_build_toc_files: true\nexecute:\n  execute_notebooks: 'off'\n"
        "parse:\n  myst_enable_extensions: [dollarmath]\n"
        "sphinx:\n  config:\n    html_static_path: ['_vendor']\n    mathjax_path: mathjax/tex-chtml.js\n"
    )
    (folder / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n  - caption: Chapters\n    chapters:\n      - file: executed/01_fake\n"
        f"  - caption: Reproducibility\n    chapters:\n      - file: {MANIFEST_PAGE}\n"
    )
    (folder / "intro.md").write_text("# Fake intro\n\nThe quality index $Q = \\frac{W}{L}$ of the intro.\n")
    return folder


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, bytes]:
    """(the run folder, the book folder, the PNG the notebook shows)."""
    base = tmp_path_factory.mktemp("report")
    run = base / "runs" / "fake"
    (run / "executed").mkdir(parents=True)
    png = png_bytes()
    nbformat.write(fake_notebook(png), run / "executed" / "01_fake.ipynb")
    (run / "executed" / "run_manifest.md").write_text("# Run manifest\n\nstale copy: the report rewrites it\n")
    (run / "manifest.json").write_text(json.dumps(fake_manifest(), indent=1))
    return run, fake_book(base / "book"), png


@pytest.fixture(scope="module")
def built(fake_run: tuple[Path, Path, bytes], tmp_path_factory: pytest.TempPathFactory) -> ReportFiles:
    """The report as the command writes it on this machine (with Chromium when there is one)."""
    run, book, _ = fake_run
    return write_report(run, book, tmp_path_factory.mktemp("out"), CHROMIUM)


@pytest.mark.slow
def test_report_is_one_self_contained_file(built: ReportFiles, fake_run: tuple[Path, Path, bytes]) -> None:
    html = built.html.read_text(encoding="utf-8")
    assert built.html.name == "fake.html"
    assert "<script" not in html
    assert "<link" not in html  # every stylesheet inlined, nothing else linked
    assert not re.search(r"""<img[^>]*src="(?!data:)""", html)
    assert not re.search(r"""url\(\s*(?!['"]?data:)""", html)
    assert '<img src="http' not in html and "file://" not in html
    png = fake_run[2]
    assert base64.b64encode(png).decode() in html  # the notebook's figure, embedded


@pytest.mark.slow
def test_report_hides_inputs_and_shows_outputs(built: ReportFiles) -> None:
    html = built.html.read_text(encoding="utf-8")
    assert INPUT_MARKER not in html
    assert "<strong>A markdown finding</strong>" in html
    assert 'class="dataframe"' in html and "sasrec" in html and "61.1" in html


@pytest.mark.slow
def test_report_opens_with_the_manifest(built: ReportFiles) -> None:
    html = built.html.read_text(encoding="utf-8")
    body = html[html.index("<body") :]
    manifest = body.index("Run manifest")
    assert "stale copy" not in html  # the manifest page is made from manifest.json, not the executed copy
    health = ("Judge health", "0 of 3 ⚠", "unparsed (3 of 3)")
    for text in (
        "simulated-judge-for-the-report-test",
        FAKE_COMMIT,
        "n_users",
        *health,
        "plan beside actual",
        "120 / 120",
    ):
        assert manifest < body.index(text) < body.index("Fake intro"), text
    assert body.index("Fake intro") < body.index("Fake chapter")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH (apt-get install -y chromium)")
def test_pdf_and_typeset_math_with_chromium(built: ReportFiles) -> None:
    html = built.html.read_text(encoding="utf-8")
    assert built.pdf is not None and built.pdf.read_bytes().startswith(b"%PDF")
    assert built.math_typeset
    assert "<mjx-container" in html and "\\(" not in html  # MathJax's output kept, its TeX source gone
    assert re.search(r"@font-face \{ font-family: MJXTEX; src: url\(\"data:font/woff;base64,", html)


@pytest.mark.slow
def test_without_chromium_the_html_is_written_and_the_exit_code_says_so(
    fake_run: tuple[Path, Path, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    run, book, _ = fake_run
    (tmp_path / "fake.pdf").write_text("an earlier report's PDF")
    monkeypatch.setattr(report_module, "find_chromium", lambda: None)
    assert report_command(run, book, tmp_path) == NO_PDF_EXIT
    err = capsys.readouterr().err
    assert "apt-get install -y chromium" in err
    html = (tmp_path / "fake.html").read_text(encoding="utf-8")
    assert "\\(" in html and "<script" not in html  # math stays TeX source: nothing loads MathJax
    assert not (tmp_path / "fake.pdf").exists()


def test_a_running_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps(fake_manifest(status="running")))
    with pytest.raises(ValueError, match="still running"):
        load_manifest(tmp_path)


def test_report_toc_puts_the_manifest_first() -> None:
    toc = {
        "format": "jb-book",
        "root": "intro",
        "parts": [
            {"caption": "A", "chapters": [{"file": "executed/00_x"}]},
            {"caption": "Using recjudge", "chapters": [{"file": "using/install"}]},  # the manual: not a finding
            {"caption": "Reproducibility", "chapters": [{"file": MANIFEST_PAGE}]},
            {"caption": "References", "chapters": [{"file": "bibliography"}]},
        ],
    }
    assert report_toc(toc) == {
        "format": "jb-book",
        "root": MANIFEST_PAGE,
        "parts": [
            {"caption": "A", "chapters": [{"file": "intro"}, {"file": "executed/00_x"}]},
            {"caption": "References", "chapters": [{"file": "bibliography"}]},
        ],
    }


@pytest.mark.slow
def test_cli_report_goes_to_the_report_command(monkeypatch: pytest.MonkeyPatch, isolated_runs: Path) -> None:
    calls = []
    monkeypatch.setattr(report_module, "report_command", lambda *args: calls.append(args) or 0)
    assert cli.main(["report", "fake", "--out", "somewhere"]) == 0
    assert calls == [(isolated_runs / "fake", ROOT / "book", Path("somewhere"))]
